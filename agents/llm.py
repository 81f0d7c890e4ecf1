"""The crew's LLM client: the ``openai`` SDK plus role headers, caching and cost accounting.

Endpoint: ``base_url``/``api_key`` of None leave the choice to the SDK's own environment
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), so any OpenAI-compatible server works and the key
never passes through our settings.

Retries: the SDK's own retry loop is used (checked in openai 3.57 ``_base_client``): it
retries 408/409/429/5xx responses, connection errors and timeouts, up to ``max_retries``
times, with exponential backoff (0.5 s doubling, capped at 8 s, jittered) and honours
``Retry-After``/``retry-after-ms`` up to 120 s; a longer ``Retry-After`` is not retried.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

from agents.types import Meter

ROLE_HEADER = "X-Codegen-Agent"
# Called after every reply from the endpoint with (role, the SDK call's keyword arguments,
# reply text): ``agents.replay.recording.FileRecorder`` writes recordings with it.
Recorder = Callable[[str, dict[str, Any], str], None]


@dataclass(frozen=True)
class RoleModel:
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 4096


@dataclass
class Completion:
    role: str
    model: str
    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    latency_s: float
    cached: bool


class LLMError(Exception):
    """The endpoint failed for good (retries exhausted, timeout, bad reply)."""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1


class ResponseCache:
    """Replies of deterministic (temperature 0) calls, one JSON file per request hash.

    Writes are atomic (temp file + rename) so concurrent processes never read half a file.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.stats = CacheStats()

    @staticmethod
    def key(payload: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            self.stats.count(False)
            return None
        self.stats.count(True)
        return data

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(value, fh)
        os.replace(tmp, path)


class LLMClient:
    """One client per process; per-request accounting lives in the ``Meter`` passed to calls."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        default: RoleModel | None = None,
        roles: dict[str, RoleModel] | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        cache_dir: Path | None = None,
        prices: dict[str, dict[str, float]] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.recorder = recorder
        self.default = default or RoleModel()
        self.roles = dict(roles or {})
        self.prices = dict(prices or {})
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._base_url = base_url
        self._api_key = api_key
        self._client: openai.OpenAI | None = None

    @property
    def client(self) -> openai.OpenAI:
        # Built lazily: a crew that is fully cached never needs a key or an endpoint.
        if self._client is None:
            import openai  # deferred: the SDK costs ~0.5 s to import, most commands never call

            api_key = self._api_key or os.environ.get("OPENAI_API_KEY")
            try:
                self._client = openai.OpenAI(
                    base_url=self._base_url,
                    # Local servers (vLLM, Ollama) need no key; the SDK insists on one.
                    api_key=api_key or "not-needed",
                    timeout=self.timeout_s,
                    max_retries=self.max_retries,
                )
            except openai.OpenAIError as exc:
                raise LLMError(f"cannot create the LLM client: {exc}") from exc
        return self._client

    @property
    def endpoint(self) -> str:
        """Where calls go, for display (never includes the key)."""
        return str(self._base_url or os.environ.get("OPENAI_BASE_URL") or "api.openai.com")

    def model_for(self, role: str) -> RoleModel:
        return self.roles.get(role, self.default)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.prices.get(model)
        if not price or "input" not in price or "output" not in price:
            return None  # unknown, never zero
        return (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1e6

    def complete(
        self,
        role: str,
        messages: list[dict[str, str]],
        meter: Meter,
        *,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion for ``role``; raises BudgetExceeded or LLMError."""
        meter.check()  # refuse to spend once the budget is gone
        cfg = self.model_for(role)
        payload: dict[str, Any] = {
            "role": role,
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "response_format": response_format,
        }
        cacheable = self.cache is not None and cfg.temperature == 0
        key = ResponseCache.key(payload) if cacheable else ""
        started = time.perf_counter()
        if cacheable and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                done = Completion(
                    role=role,
                    model=cfg.model,
                    content=hit["content"],
                    prompt_tokens=int(hit.get("prompt_tokens", 0)),
                    completion_tokens=int(hit.get("completion_tokens", 0)),
                    cost_usd=0.0,
                    latency_s=time.perf_counter() - started,
                    cached=True,
                )
                self._record(meter, done)
                return done
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "extra_headers": {ROLE_HEADER: role},
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        import openai  # deferred (see ``client``); already loaded by the time we get here

        try:
            reply = self.client.chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"{role}: request timed out after {self.timeout_s:g}s "
                f"({self.max_retries} retries exhausted)"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{role}: endpoint answered HTTP {exc.status_code} "
                f"(retried up to {self.max_retries} times): {_short(exc.message)}"
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"{role}: cannot reach the LLM endpoint {self.endpoint}") from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{role}: {_short(str(exc))}") from exc
        latency = time.perf_counter() - started
        if not reply.choices:
            raise LLMError(f"{role}: the endpoint returned no choices")
        content = reply.choices[0].message.content or ""
        if self.recorder is not None:
            self.recorder(role, kwargs, content)
        usage = reply.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        done = Completion(
            role=role,
            model=cfg.model,
            content=content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self.cost(cfg.model, prompt_tokens, completion_tokens),
            latency_s=latency,
            cached=False,
        )
        if cacheable and self.cache is not None:
            with contextlib.suppress(OSError):  # a full disk must not fail the request
                self.cache.put(
                    key,
                    {
                        "content": content,
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                    },
                )
        self._record(meter, done)
        meter.check()  # this call may have crossed the budget: stop before the next step
        return done

    @staticmethod
    def _record(meter: Meter, done: Completion) -> None:
        meter.record(
            done.role,
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            cost_usd=done.cost_usd,
            latency_s=done.latency_s,
            cached=done.cached,
        )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
