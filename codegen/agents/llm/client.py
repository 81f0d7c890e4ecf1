"""The crew's LLM client: the ``openai`` SDK plus role headers, caching and cost accounting.

Endpoint: ``base_url``/``api_key`` of None leave the choice to the SDK's own environment
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), so any OpenAI-compatible server works and the key
never passes through our settings. Programmer candidates may each have their own model and
endpoint (``candidates``, ``codegen.agents.llm.endpoint.CandidateRoute``): draft ``i``'s calls, its
first draft and every refinement round, carry its model and go to its base URL with the key
from the variable it names (``api_key_env``), read here at call time and nowhere stored.

Retries: the SDK's own retry loop is used (checked in openai 3.57 ``_base_client``): it
retries 408/409/429/5xx responses, connection errors and timeouts, up to ``max_retries``
times, with exponential backoff (0.5 s doubling, capped at 8 s, jittered) and honours
``Retry-After``/``retry-after-ms`` up to 120 s; a longer ``Retry-After`` is not retried.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai

# Wire contract (docs/architecture.md, "LLM endpoint"): outside servers replay recorded
# replies by role, task, draft and round, so every request says which it is.
import codegen.agents.llm.wire as wire
from codegen.agents.llm.cache import ResponseCache
from codegen.agents.llm.call import Completion, Draft, LLMError, refuses_structured_outputs
from codegen.agents.llm.endpoint import (
    CandidateRoute,
    RoleModel,
    candidate_at,
    resolved_base_url,
    shown_url,
)
from codegen.agents.llm.structured import StructuredMode, StructuredModes, structured_request
from codegen.agents.llm.usage import Meter
from codegen.json_types import JSONObject
from codegen.untrusted import loads_json

# Called after every reply from the endpoint with (role, the SDK call's keyword arguments,
# reply text): ``codegen.replay.recording.FileRecorder`` writes recordings with it.
Recorder = Callable[[str, JSONObject, str], None]

# The SDK client's key when there is none: calls made with it carry no Authorization header.
NO_KEY = "not-needed"
# Keyed by (pid, base URL, key, timeout, retries).
_sdk_clients: dict[tuple[int, str | None, str | None, float, int], openai.OpenAI] = {}
_sdk_clients_lock = threading.Lock()

# Set once this process sends (or answers from the cache) its first model request: background
# work that would slow the way to it (the sandbox pool's warm-up) waits for it.
first_call_started = threading.Event()


def _sdk_client(
    base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
) -> openai.OpenAI:
    """One SDK client per endpoint and process: every ``LLMClient`` (a Dagster step builds
    its own) shares its connection pool, and its TLS context, which costs ~50 ms to load."""
    import openai  # deferred: the SDK costs ~0.5 s to import, most commands never call

    # The pid: a forked child never reuses its parent's open connections.
    key = (os.getpid(), base_url, api_key, timeout_s, max_retries)
    with _sdk_clients_lock:
        client = _sdk_clients.get(key)
        if client is None:
            try:
                client = openai.OpenAI(
                    base_url=base_url,
                    # Local servers need no key; the SDK insists on one (``_create`` drops it).
                    api_key=api_key or NO_KEY,
                    timeout=timeout_s,
                    max_retries=max_retries,
                )
            except openai.OpenAIError as exc:
                raise LLMError(f"cannot create the LLM client: {exc}") from exc
            _sdk_clients[key] = client
        return client


class LLMClient:
    """One client per process; per-request accounting lives in the ``Meter`` passed to calls.

    ``for_task`` gives a view that tags every request with the task it serves (the
    ``X-Codegen-Task`` header); the views share the connection pool, cache and settings.
    """

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
        modes_file: Path | None = None,
        recorder: Recorder | None = None,
        candidates: Sequence[CandidateRoute] = (),
    ) -> None:
        self.recorder = recorder
        self.default = default or RoleModel()
        self.roles = dict(roles or {})
        # Per programmer draft: model and endpoint overrides (none: every draft is alike).
        self.candidates = tuple(candidates)
        self.prices = dict(prices or {})
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._base_url = base_url
        self._api_key = api_key
        self.modes = StructuredModes(modes_file)
        self.task: str | None = None
        self.request: str | None = None

    def for_task(self, task: str, request: str | None = None) -> LLMClient:
        """The same client, tagging its requests with ``task`` (benchmark task or request id)
        and, for a request, ``request`` (``wire.request_key`` of its text)."""
        view = copy.copy(self)
        view.task, view.request = task, request
        return view

    @property
    def client(self) -> openai.OpenAI:
        # Built lazily: a crew that is fully cached never needs a key or an endpoint.
        # The SDK's own environment variables, resolved here so the shared client follows them.
        base_url = self._base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = self._api_key or os.environ.get("OPENAI_API_KEY")
        return _sdk_client(base_url, api_key, self.timeout_s, self.max_retries)

    def _candidate(self, role: str, draft: Draft | None) -> CandidateRoute | None:
        """The overrides of the programmer draft a call writes (None: any other call)."""
        if role != "programmer" or draft is None or not self.candidates:
            return None
        return candidate_at(self.candidates, draft.candidate)

    def reliability_for(self, draft: Draft) -> float | None:
        """The history-based reliability of a programmer draft's model, if its entry gives one."""
        entry = self._candidate("programmer", draft)
        return entry.reliability if entry is not None else None

    def _client_for(self, role: str, draft: Draft | None) -> openai.OpenAI:
        """The SDK client of one call: a candidate's own endpoint and key, else ``client``."""
        entry = self._candidate(role, draft)
        if entry is None or (entry.base_url is None and entry.api_key_env is None):
            return self.client
        api_key = None
        if entry.api_key_env is not None:
            api_key = os.environ.get(entry.api_key_env)
            if not api_key:
                index = draft.candidate if draft is not None else 0
                raise LLMError(
                    f"{role}: candidate {index}'s api_key_env {entry.api_key_env} is not set "
                    "in this environment"
                )
        # Its own endpoint without a named key sends none: the main key stays on its host.
        base_url = entry.base_url or self._base_url or os.environ.get("OPENAI_BASE_URL")
        return _sdk_client(base_url, api_key, self.timeout_s, self.max_retries)

    def headers(self, role: str, draft: Draft | None = None) -> dict[str, str]:
        """The wire-contract headers of one request (never a secret)."""
        turn = (draft.candidate, draft.round) if draft is not None else None
        return wire.headers(role, self.task, self.request, turn)

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (never includes the key), resolved as the SDK does."""
        return resolved_base_url(self._base_url)

    def endpoint_for(self, role: str, draft: Draft | None = None) -> str:
        """The base URL one call goes to: a programmer candidate's own, else ``endpoint``."""
        entry = self._candidate(role, draft)
        return resolved_base_url(entry.base_url) if entry and entry.base_url else self.endpoint

    def model_for(self, role: str, draft: Draft | None = None) -> RoleModel:
        """The model one call asks for: the role's, with a programmer candidate's overrides."""
        own = self.roles.get(role, self.default)
        entry = self._candidate(role, draft)
        return entry.applied_to(own) if entry is not None else own

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.prices.get(model)
        if not price or "input" not in price or "output" not in price:
            return None  # unknown, never zero
        return (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1e6

    def _cached(self, key: str, role: str, model: str, started: float) -> Completion | None:
        """The cached reply under ``key`` as a completion that cost nothing, if there is one."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            return None
        return Completion(
            role=role,
            # Who wrote the reply when it was stored (a replay's label); older entries: asked.
            model=str(hit.get("model") or model),
            content=str(hit["content"]),
            prompt_tokens=int(hit.get("prompt_tokens", 0)),
            completion_tokens=int(hit.get("completion_tokens", 0)),
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            cached=True,
        )

    def _create(
        self, role: str, draft: Draft | None, endpoint: str, kwargs: JSONObject
    ) -> openai.types.chat.ChatCompletion:
        """The SDK call itself; every SDK error becomes one ``LLMError`` line."""
        import openai  # deferred (see ``client``); already loaded by the time we get here

        try:
            client = self._client_for(role, draft)
            call: dict[str, object] = dict(kwargs)
            if client.api_key == NO_KEY:
                # No key: no Authorization header at all, rather than the SDK's placeholder.
                no_auth = {"Authorization": openai.Omit()}
                call["extra_headers"] = {**self.headers(role, draft), **no_auth}
            first_call_started.set()
            return client.chat.completions.create(**call)  # type: ignore[call-overload]
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"{role}: request timed out after {self.timeout_s:g}s "
                f"({self.max_retries} retries exhausted)"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{role}: endpoint answered HTTP {exc.status_code} "
                f"(retried up to {self.max_retries} times): {_short(exc.message)}",
                status=exc.status_code,
                detail=str(exc.message),
                code=str(exc.code or ""),
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"{role}: cannot reach the LLM endpoint {shown_url(endpoint)}") from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{role}: {_short(str(exc))}") from exc

    def complete(
        self,
        role: str,
        messages: list[dict[str, str]],
        meter: Meter,
        *,
        response_format: JSONObject | None = None,
        draft: Draft | None = None,
    ) -> Completion:
        """One chat completion for ``role``; raises BudgetExceeded or LLMError.

        ``draft`` (programmer calls) names the candidate and round being written.
        """
        meter.check()  # refuse to spend once the budget is gone
        cfg = self.model_for(role, draft)
        endpoint = self.endpoint_for(role, draft)
        payload: JSONObject = {
            "role": role,
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "response_format": response_format,
            # Another endpoint serving the same model name is another model: no shared replies.
            "endpoint": endpoint,
        }
        if draft is not None and draft.candidate:
            # Drafts 1..N-1 ask the same thing as draft 0 and must not share its cached reply.
            payload["candidate"] = draft.candidate
        cacheable = self.cache is not None and cfg.temperature == 0
        key = ResponseCache.key(payload) if cacheable else ""
        started = time.perf_counter()
        hit = self._cached(key, role, cfg.model, started) if cacheable else None
        if hit is not None:
            first_call_started.set()  # answered from the cache: nothing to wait for
            self._record(meter, hit, endpoint, draft)
            return hit
        # The SDK call's keyword arguments, as they go on the wire (and to the recorder).
        kwargs: JSONObject = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "extra_headers": self.headers(role, draft),
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        reply = self._create(role, draft, endpoint, kwargs)
        latency = time.perf_counter() - started
        if not reply.choices:
            raise LLMError(f"{role}: the endpoint returned no choices")
        content = reply.choices[0].message.content or ""
        if self.recorder is not None:
            self.recorder(role, kwargs, content)
        usage = reply.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        # A replay called no model: label it with the model its recording names, never price it.
        replayed = reply.system_fingerprint == wire.REPLAY_FINGERPRINT
        done = Completion(
            role=role,
            model=wire.replayed_label(reply.model) if replayed else cfg.model,
            content=content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=None if replayed else self.cost(cfg.model, prompt_tokens, completion_tokens),
            latency_s=latency,
            cached=False,
            replayed=replayed,
        )
        if cacheable and self.cache is not None:
            with contextlib.suppress(OSError):  # a full disk must not fail the request
                self.cache.put(
                    key,
                    {
                        "content": content,
                        "model": done.model,
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                    },
                )
        self._record(meter, done, endpoint, draft)
        meter.check()  # this call may have crossed the budget: stop before the next step
        return done

    def complete_structured(
        self,
        role: str,
        messages: list[dict[str, str]],
        meter: Meter,
        *,
        name: str,
        schema: JSONObject,
    ) -> tuple[Completion, StructuredMode]:
        """A completion asked to follow ``schema``, in the best mode the server accepts.

        Starts from the mode remembered for this endpoint and model (``json_schema`` when
        none is); a refusal moves to the next mode, and the mode that answers is remembered.
        A server that accepts ``json_schema`` but answers with something other than bare
        JSON (Ollama before 0.5 ignores it) is remembered as ``json_object``, so later
        requests carry the schema in the prompt. The caller parses tolerantly either way.
        """
        model = self.model_for(role).model
        mode: StructuredMode | None = self.modes.get(self.endpoint, model)
        while mode is not None:
            sent, fmt = structured_request(mode, messages, name, schema)
            try:
                done = self.complete(role, sent, meter, response_format=fmt)
            except LLMError as exc:
                lower = mode.fallback()
                if lower is None or not refuses_structured_outputs(exc):
                    raise
                mode = lower
                continue
            remembered = mode
            if mode is StructuredMode.JSON_SCHEMA and not _is_bare_json(done.content):
                remembered = StructuredMode.JSON_OBJECT
            if self.modes.all().get(StructuredModes.key(self.endpoint, model)) != remembered:
                self.modes.set(self.endpoint, model, remembered)
            return done, mode
        raise AssertionError("unreachable: the last mode raises")  # pragma: no cover

    @staticmethod
    def _record(meter: Meter, done: Completion, base_url: str, draft: Draft | None) -> None:
        meter.record(
            done.role,
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            cost_usd=done.cost_usd,
            latency_s=done.latency_s,
            cached=done.cached,
            replayed=done.replayed,
            base_url=shown_url(base_url),
            model=done.model,
            candidate=draft.candidate if draft is not None else None,
        )


def _is_bare_json(text: str) -> bool:
    try:
        loads_json(text)  # nesting too deep is a ValueError too
    except ValueError:
        return False
    return True


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
