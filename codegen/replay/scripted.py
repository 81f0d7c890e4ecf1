"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks the real wire protocol (``POST /v1/chat/completions``, ``GET /v1/models``), so the
real ``openai`` SDK talks to it over real sockets. Replies are chosen by the calling agent's
role, read from the ``X-Codegen-Agent`` header (see ARCHITECTURE.md, "LLM endpoint"):

* per-role queues: ``script={"analyzer": [spec_dict], "programmer": ["```python ...```"]}``;
  each request pops the next reply of its role;
* a fallback callable ``handler(role, body) -> reply`` used when the role's queue is empty;
* with neither, the server answers HTTP 400 (not retried by the SDK) naming the role, so a
  test fails fast and loudly instead of hanging.

A reply is a ``str`` (assistant text), a ``dict``/``list`` (sent as JSON text, for Structured
Outputs), or a :class:`Reply` for full control: an HTTP error with status and headers
(``Reply.error(429, headers={"Retry-After": "0"})``), a delay before answering
(``Reply.text("...", delay_s=5)`` to provoke client timeouts), or explicit token usage.

Every request is recorded in ``server.requests`` (method, path, headers, JSON body, role).

``structured_outputs`` picks how the server treats ``response_format`` (see ``REFUSALS``):
``"full"`` (default) accepts everything; ``"llama.cpp"``, ``"vllm-0.5"`` and ``"ollama-0.4"``
refuse or ignore ``json_schema`` with those servers' real error bodies; ``"none"`` refuses any
``response_format``.

Usage::

    with ScriptedOpenAIServer(script={...}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

Run standalone (for manual acceptance runs of ``codegen generate``)::

    python -m codegen.replay.scripted --port 8765 --script primes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, dict[str, Any]], Any]


@dataclass
class Reply:
    """One scripted answer: assistant content, or an HTTP error, optionally after a delay."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    error_message: str = ""
    # Overrides the estimated usage ({"prompt_tokens": .., "completion_tokens": ..}).
    usage: dict[str, int] | None = None
    finish_reason: str = "stop"

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def error(
        cls, status: int, message: str = "scripted error", headers: dict[str, str] | None = None
    ) -> Reply:
        return cls(status=status, error_message=message, headers=dict(headers or {}))

    @classmethod
    def delay(cls, seconds: float, then: Any = "") -> Reply:
        reply = as_reply(then)
        reply.delay_s = seconds
        return reply


def as_reply(value: Any) -> Reply:
    if isinstance(value, Reply):
        # A copy, so a reply object reused in a script keeps its own settings.
        return Reply(**{k: getattr(value, k) for k in value.__dataclass_fields__})
    if isinstance(value, str):
        return Reply.text(value)
    if isinstance(value, dict | list):
        return Reply.json(value)
    raise TypeError(f"unsupported scripted reply: {type(value).__name__}")


class Headers(dict[str, str]):
    """Request headers with case-insensitive lookup (HTTP header names are)."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__((k.lower(), v) for k, v in items)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: Headers
    body: dict[str, Any] | None
    role: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def prompt_text(self) -> str:
        """All message contents joined: what the model was shown."""
        parts = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, list):  # content parts
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
            elif content is not None:
                parts.append(str(content))
        return "\n".join(parts)


def estimate_tokens(text: str) -> int:
    # Roughly four characters per token, the usual rule of thumb for English and code.
    return max(1, (len(text) + 3) // 4)


class ScriptedOpenAIServer:
    """A threaded OpenAI chat-completions server on loopback, scripted per agent role."""

    def __init__(
        self,
        script: dict[str, Iterable[Any]] | None = None,
        handler: Handler | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] = ("gpt-4o-mini",),
        structured_outputs: str = "full",
    ) -> None:
        if structured_outputs not in STRUCTURED_PROFILES:
            raise ValueError(f"unknown structured_outputs profile {structured_outputs!r}")
        self.structured_outputs = structured_outputs
        self._queues: dict[str, deque[Any]] = defaultdict(deque)
        for role, replies in (script or {}).items():
            self._queues[role].extend(replies)
        self.handler = handler
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------
    def enqueue(self, role: str, *replies: Any) -> None:
        with self._lock:
            self._queues[role].extend(replies)

    def pending(self, role: str | None = None) -> int:
        with self._lock:
            if role is not None:
                return len(self._queues[role])
            return sum(len(q) for q in self._queues.values())

    def requests_for(self, role: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.role == role]

    def _next_reply(self, role: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            queue = self._queues.get(role)
            if queue:
                return as_reply(queue.popleft())
        if self.handler is not None:
            return as_reply(self.handler(role, body))
        return Reply.error(400, f"no scripted reply for role {role!r}")

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP ----------------------------------------------------------------------------
    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def _send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                # The client may have given up already (timeout tests); nothing to do then.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _record(self, body: dict[str, Any] | None) -> str:
                role = self.headers.get("X-Codegen-Agent")
                rec = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers=Headers(self.headers.items()),
                    body=body,
                    role=role,
                )
                with server._lock:
                    server.requests.append(rec)
                return role or "unknown"

            def do_GET(self) -> None:
                self._record(None)
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    data = [
                        {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                        for m in server.models
                    ]
                    self._send_json(200, {"object": "list", "data": data}, {})
                    return
                self._send_json(404, _error_body("not found", "not_found"), {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._record(None)
                    self._send_json(400, _error_body("invalid JSON body", "invalid_request"), {})
                    return
                role = self._record(body)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send_json(404, _error_body("not found", "not_found"), {})
                    return
                refusal = _refusal(server.structured_outputs, body)
                if refusal is not None:
                    status, payload = refusal
                    self._send_json(status, payload, {})
                    return
                reply = server._next_reply(role, body)
                if _ignores_schema(server.structured_outputs, body):
                    # The server drops the schema, so the model chats around its JSON.
                    reply.content = f"Here is the JSON:\n```json\n{reply.content}\n```\nDone."
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._send_json(
                        reply.status,
                        _error_body(reply.error_message or "error", "scripted"),
                        reply.headers,
                    )
                    return
                self._send_json(200, _completion(body, reply), reply.headers)

        return _Handler


# How servers without Structured Outputs answer ``response_format: json_schema``, from their
# sources and bug reports:
# - llama.cpp server before Sep 2024 (ggml-org/llama.cpp#9522, #9527): HTTP 500;
# - vLLM before 0.5.5 (vllm-project/vllm#7654 added it): pydantic rejects the Literal type and
#   the server answers 400 with its own ErrorResponse shape (no "error" wrapper);
# - Ollama before 0.5 (ollama/ollama openai.go only mapped json_object): ignored, HTTP 200.
REFUSALS: dict[str, tuple[int, dict[str, Any]]] = {
    "llama.cpp": (
        500,
        {
            "error": {
                "code": 500,
                "message": 'response_format type must be one of "text" or "json_object", '
                "but got: json_schema",
                "type": "server_error",
            }
        },
    ),
    "vllm-0.5": (
        400,
        {
            "object": "error",
            "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}]",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
}
STRUCTURED_PROFILES = ("full", "llama.cpp", "vllm-0.5", "ollama-0.4", "none")


def _format_type(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    return str(fmt.get("type")) if isinstance(fmt, dict) else None


def _refusal(profile: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    kind = _format_type(body)
    if profile == "none" and kind not in (None, "text"):
        return 400, _error_body(f"response_format {kind!r} is not supported", "invalid_request")
    if kind == "json_schema" and profile in REFUSALS:
        return REFUSALS[profile]
    return None


def _ignores_schema(profile: str, body: dict[str, Any]) -> bool:
    return profile == "ollama-0.4" and _format_type(body) == "json_schema"


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content = reply.content or ""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    usage = reply.usage or {
        "prompt_tokens": estimate_tokens(prompt),
        "completion_tokens": estimate_tokens(content),
    }
    usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "unknown"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


# -- canned scripts ------------------------------------------------------------------------
PRIMES_SPEC: dict[str, Any] = {
    "purpose": "Return all prime numbers less than or equal to n using the Sieve of Eratosthenes.",
    "functions": [
        {
            "name": "primes_up_to",
            "signature": "def primes_up_to(n: int) -> list[int]",
            "description": "All primes p with 2 <= p <= n, in increasing order.",
        }
    ],
    "behaviours": [
        "returns primes in increasing order",
        "includes n itself when n is prime",
    ],
    "edge_cases": ["n < 2 returns an empty list", "n = 2 returns [2]"],
    "examples": [
        {"call": "primes_up_to(10)", "expected": "[2, 3, 5, 7]"},
        {"call": "primes_up_to(1)", "expected": "[]"},
        {"call": "primes_up_to(2)", "expected": "[2]"},
    ],
    "constraints": ["use the Sieve of Eratosthenes", "standard library only"],
}

PRIMES_TESTS = """```python
from solution import primes_up_to


def test_small():
    assert primes_up_to(10) == [2, 3, 5, 7]


def test_below_two():
    assert primes_up_to(1) == []
    assert primes_up_to(0) == []


def test_two():
    assert primes_up_to(2) == [2]


def test_prime_bound_included():
    assert primes_up_to(13)[-1] == 13


def test_count_to_100():
    assert len(primes_up_to(100)) == 25
```"""

PRIMES_SOLUTION = '''```python
"""Primes by the Sieve of Eratosthenes."""


def primes_up_to(n: int) -> list[int]:
    """Return all primes <= n in increasing order."""
    if n < 2:
        return []
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    for p in range(2, int(n**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))
    return [i for i, flag in enumerate(sieve) if flag]
```'''

# Off by one: drops n when n is prime, so test_two and test_prime_bound_included fail.
PRIMES_BUGGY_SOLUTION = PRIMES_SOLUTION.replace(
    "sieve = bytearray([1]) * (n + 1)", "sieve = bytearray([1]) * n"
).replace(
    "sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))",
    "sieve[p * p :: p] = bytearray(len(range(p * p, n, p)))",
)

PRIMES_DOCS = """# primes_up_to

Return every prime number up to and including `n`, computed with the Sieve of Eratosthenes.

## Usage

```python
from solution import primes_up_to

primes_up_to(10)  # [2, 3, 5, 7]
```

## API reference

### `primes_up_to(n: int) -> list[int]`

All primes `p` with `2 <= p <= n`, in increasing order; an empty list when `n < 2`.
"""


def primes_handler(role: str, body: dict[str, Any]) -> Any:
    """Answers every role with a correct primes_up_to solution (instantly, any number of times)."""
    return {
        "analyzer": PRIMES_SPEC,
        "test_designer": PRIMES_TESTS,
        "programmer": PRIMES_SOLUTION,
        "reviewer": "APPROVED\nThe code follows the spec and uses the sieve.",
        "documenter": PRIMES_DOCS,
    }.get(role, Reply.error(400, f"unknown role {role!r}"))


CANNED: dict[str, Handler] = {"primes": primes_handler}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", choices=sorted(CANNED), default="primes")
    args = parser.parse_args(argv)
    with ScriptedOpenAIServer(handler=CANNED[args.script], port=args.port) as server:
        print(f"OPENAI_BASE_URL={server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
