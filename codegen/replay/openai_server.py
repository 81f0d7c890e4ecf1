"""One OpenAI-compatible HTTP server for every endpoint the project fakes; answer books plug in.

It speaks the real wire protocol (``POST /v1/chat/completions``, plain JSON or Server-Sent
Events with ``"stream": true``; ``GET /v1/models``), so the real ``openai`` SDK and the crew talk
to it over real sockets as to any endpoint. What it answers comes from an :class:`AnswerBook`:

* ``codegen.replay.scripted.ScriptedBook``: per-role queues and a handler, for tests, the
  README's offline mode and benchmarks;
* ``codegen.replay.server.ReplayBook``: a recording of real replies, for ``codegen replay
  serve`` and evaluations on recorded data.

The server owns everything that is the same for both: request parsing and size limits (a
request without a ``Content-Length``, or with a negative or non-numeric one, is refused with 411
or 400, one over ``MAX_BODY_BYTES`` with 413, before a byte of its body is read), the bounded
record of the latest requests (``server.requests``, a ``codegen.replay.history.History``), how
servers without Structured Outputs refuse ``json_schema`` (``structured_outputs`` profiles,
below), delays and scripted HTTP errors, usage accounting, streaming, and an optional
JSON-lines log of what was served (``server.served``, bounded the same way).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Protocol, TypedDict, Unpack

from codegen.agents.llm import (
    CANDIDATE_HEADER,
    ROLE_HEADER,
    ROUND_HEADER,
    TASK_HEADER,
    UNKNOWN_MODEL,
)
from codegen.json_types import JSONObject
from codegen.replay.history import History
from codegen.replay.server_profiles import (
    STRUCTURED_PROFILES,
    error_body,
    ignores_schema,
    refusal,
)

MAX_BODY_BYTES = 20_000_000


class ReplyOptions(TypedDict, total=False):
    """``Reply``'s fields besides the content, for ``Reply.text`` and ``Reply.json``."""

    status: int
    headers: dict[str, str]
    delay_s: float
    error_message: str
    error_type: str
    error_code: str | None
    usage: dict[str, int] | None
    finish_reason: str
    served: JSONObject | None
    model: str | None


@dataclass
class Reply:
    """One answer: assistant content, or an HTTP error, optionally after a delay."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    error_message: str = ""
    error_type: str = "scripted"
    error_code: str | None = None
    # Overrides the estimated usage ({"prompt_tokens": .., "completion_tokens": ..}).
    usage: dict[str, int] | None = None
    finish_reason: str = "stop"
    # What the book served, for the log line (a recording's key, seq and source).
    served: JSONObject | None = None
    # The model the completion names: who wrote the reply. None: the model asked for (the
    # scripted book plays whatever model it is asked for).
    model: str | None = None

    @classmethod
    def text(cls, content: str, **kw: Unpack[ReplyOptions]) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def json(cls, obj: object, **kw: Unpack[ReplyOptions]) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        headers: dict[str, str] | None = None,
        *,
        error_type: str = "scripted",
        error_code: str | None = None,
    ) -> Reply:
        return cls(
            status=status,
            error_message=message,
            headers=dict(headers or {}),
            error_type=error_type,
            error_code=error_code,
        )

    @classmethod
    def delay(cls, seconds: float, then: object = "") -> Reply:
        reply = as_reply(then)
        reply.delay_s = seconds
        return reply


def as_reply(value: object) -> Reply:
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

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: Headers
    body: JSONObject | None
    role: str | None

    @property
    def messages(self) -> list[JSONObject]:
        return list((self.body or {}).get("messages") or [])

    @property
    def model(self) -> str | None:
        """The model the request body asks for."""
        model = (self.body or {}).get("model")
        return model if isinstance(model, str) else None

    @property
    def candidate(self) -> int | None:
        """The programmer draft it writes (``X-Codegen-Candidate``); None for other roles."""
        return _int(self.headers.get(CANDIDATE_HEADER))

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


class AnswerBook(Protocol):
    """Where a server's answers come from."""

    def answer(self, request: RecordedRequest) -> Reply: ...

    def model_ids(self) -> list[str]: ...


def estimate_tokens(text: str) -> int:
    # Roughly four characters per token, the usual rule of thumb for English and code.
    return max(1, (len(text) + 3) // 4)


def _usage(body: JSONObject, reply: Reply) -> dict[str, int]:
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    usage = reply.usage or {
        "prompt_tokens": estimate_tokens(prompt),
        "completion_tokens": estimate_tokens(reply.content or ""),
    }
    return {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}


def _model(body: JSONObject, reply: Reply) -> str:
    return reply.model or str(body.get("model") or UNKNOWN_MODEL)


def completion(body: JSONObject, reply: Reply, fingerprint: str) -> JSONObject:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(body, reply),
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content or "", "refusal": None},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _usage(body, reply),
    }


def chunks(body: JSONObject, reply: Reply, fingerprint: str) -> list[JSONObject]:
    """The reply as streaming chunks: role, content in pieces, stop, then usage if asked."""
    content = reply.content or ""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": _model(body, reply),
        "system_fingerprint": fingerprint,
    }
    pieces = [content[i : i + 512] for i in range(0, len(content), 512)] or [""]
    out = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
    ]
    out += [
        {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    out.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]}
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**base, "choices": [], "usage": _usage(body, reply)})
    return out


class OpenAICompatibleServer:
    """A threaded chat-completions server on ``host:port`` (port 0: a free one); its
    completions carry ``fingerprint`` as ``system_fingerprint``, so a client can tell which
    fake answered (``codegen.agents.llm.wire.REPLAY_FINGERPRINT``)."""

    def __init__(
        self,
        book: AnswerBook,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        structured_outputs: str = "full",
        log: IO[str] | None = None,
        log_file: Path | None = None,
        name: str = "openai-compatible",
        fingerprint: str = "codegen-openai-compatible",
    ) -> None:
        if structured_outputs not in STRUCTURED_PROFILES:
            raise ValueError(f"unknown structured_outputs profile {structured_outputs!r}")
        self.book = book
        self.structured_outputs = structured_outputs
        self.requests: History[RecordedRequest] = History()
        self.served: History[JSONObject] = History()  # the log's records, when logging
        self._log = log
        self._log_file = log_file.open("a", encoding="utf-8") if log_file else None
        self._name = name
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def logging(self) -> bool:
        return self._log is not None or self._log_file is not None

    def requests_for(self, role: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.role == role]

    def log(self, record: JSONObject) -> None:
        line = json.dumps(record, sort_keys=True)
        with self._lock:
            self.served.append(record)
            if self._log is not None:
                print(line, file=self._log, flush=True)
            if self._log_file:
                self._log_file.write(line + "\n")
                self._log_file.flush()

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> OpenAICompatibleServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=self._name, daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever(0.2)

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._log_file:
            self._log_file.close()

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP ----------------------------------------------------------------------------
    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_Handler", (_Handler,), {"owner": self})


class _Handler(BaseHTTPRequestHandler):
    """One HTTP exchange with ``owner``, the server whose book answers it (each server makes
    its own subclass naming itself: ``OpenAICompatibleServer._make_handler``)."""

    protocol_version = "HTTP/1.1"
    owner: OpenAICompatibleServer

    def log_message(self, format: str, *args: object) -> None:
        pass  # the server's own log line, when asked for, says more

    def _send_json(self, status: int, payload: object, headers: dict[str, str]) -> None:
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

    def _stream(self, events: list[JSONObject], headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for event in events:
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        self.close_connection = True

    def _record(self, body: JSONObject | None, size: int = 0) -> RecordedRequest:
        rec = RecordedRequest(
            method=self.command,
            path=self.path,
            headers=Headers(self.headers.items()),
            body=body,
            role=self.headers.get(ROLE_HEADER),
        )
        with self.owner._lock:
            self.owner.requests.append(rec, size)
        return rec

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": self.owner._name}
                for m in self.owner.book.model_ids()
            ]
            self._send_json(200, {"object": "list", "data": data}, {})
            return
        self._send_json(404, error_body(f"no such path {self.path}", "not_found"), {})

    def do_POST(self) -> None:
        try:
            raw = read_body(self.headers, self.rfile)
        except BodyRefused as refused:
            self._record(None)
            # Whatever body follows is unread: it must not pass for the next request.
            headers = {"Connection": "close"}
            self._send_json(refused.status, error_body(str(refused), "invalid_request"), headers)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._record(None, len(raw))
            message = "the body must be a JSON object" if raw else "invalid JSON body"
            self._send_json(400, error_body(message, "invalid_request"), {})
            return
        request = self._record(body, len(raw))
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, error_body(f"no such path {self.path}", "not_found"), {})
            return
        refused = refusal(self.owner.structured_outputs, body)
        if refused is not None:
            self._send_json(*refused, {})
            return
        reply = self.owner.book.answer(request)
        if self.owner.logging:
            self.owner.log(_log_record(request, reply))
        if ignores_schema(self.owner.structured_outputs, body):
            # The server drops the schema, so the model chats around its JSON.
            reply.content = f"Here is the JSON:\n```json\n{reply.content}\n```\nDone."
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            payload = error_body(reply.error_message or "error", reply.error_type, reply.error_code)
            self._send_json(reply.status, payload, reply.headers)
        elif body.get("stream"):
            self._stream(chunks(body, reply, self.owner.fingerprint), reply.headers)
        else:
            self._send_json(200, completion(body, reply, self.owner.fingerprint), reply.headers)


class BodyRefused(ValueError):
    """A request body the server will not read; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(headers: Message, rfile: IO[bytes], limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, exactly ``Content-Length`` bytes of it, or BodyRefused: 411 without
    the header (chunked bodies included: nothing here reads them), 400 when it is not a
    non-negative decimal (``int()`` would take ``-1``, ``+5`` or `` 5``, and ``rfile.read(-1)``
    reads until the client hangs up), 413 over ``limit``. Nothing is read when refused."""
    declared = headers.get("Content-Length")
    if declared is None:
        raise BodyRefused(411, "a request body needs a Content-Length header")
    if not (declared.isascii() and declared.isdigit()):
        raise BodyRefused(400, f"Content-Length {declared[:40]!r} is not a byte count")
    length = int(declared)
    if length > limit:
        raise BodyRefused(413, f"request body too large ({length} bytes; at most {limit})")
    return rfile.read(length) if length else b""


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _log_record(request: RecordedRequest, reply: Reply) -> JSONObject:
    """One log line: when, who asked (role, task, candidate, round) for which model, the
    status, what served. No other header: a key in ``Authorization`` never reaches a log."""
    h = request.headers
    record: JSONObject = {
        "at": round(time.time(), 3),
        "path": request.path,
        "role": request.role,
        "model": request.model,
        "task": h.get(TASK_HEADER),
        "candidate": request.candidate,
        "round": _int(h.get(ROUND_HEADER)),
        "status": reply.status,
    }
    if reply.status != 200:
        record["error"] = reply.error_message
    if reply.served is not None:
        record["served"] = reply.served
    return record
