"""An OpenAI-compatible server that answers from a recording, never from a model.

Speaks ``POST /v1/chat/completions`` (plain JSON, or Server-Sent Events with
``"stream": true``) and ``GET /v1/models``, so the ``openai`` SDK and the crew talk to it as
to any endpoint. Each request is answered by the recording's reply for its role
(``X-Codegen-Agent``), task (``X-Codegen-Task``), candidate (``X-Codegen-Candidate``) and round
(``X-Codegen-Round``):

1. a reply recorded for exactly this request (same model, messages and response format)
   when the recording has one (``--record`` recordings);
2. otherwise the replies under that key in order: the first request gets the first reply,
   the next the next; once they are used up the last one is repeated (a re-run of the same
   evaluation against the same server gets the same answers).

Anything the recording cannot answer (no role or task header, a role or task it does not
hold, a round it has no reply for) gets HTTP 404 with a message that says what is missing:
never a made-up reply. 404 is not retried by the SDK, so the crew fails fast. Its error code
is ``replay_unrecorded`` (``codegen.agents.llm.UNRECORDED_CODE``): the crew ends such a request
as ``unrecorded`` (the end of the recording, scored with the code so far), unlike any other 404
(a wrong path, an outage).

Every request is logged, one JSON object a line (to stderr and, optionally, a log file):
time, role, task, candidate, round, HTTP status, and for answered ones the key and ``seq`` of
the entry served, its source and a digest of its content.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
import uuid
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from codegen.agents.llm import UNRECORDED_CODE
from codegen.replay.recording import (
    CANDIDATE_HEADER,
    ROLE_HEADER,
    ROUND_HEADER,
    TASK_HEADER,
    Entry,
    Key,
    Recording,
    request_digest,
)

MAX_BODY_BYTES = 20_000_000


class ReplayMiss(Exception):
    """The recording holds no reply for this request."""


def content_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class ReplayBook:
    """The lookup rules above, with per-key counters; thread-safe."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._served: dict[Key, int] = defaultdict(int)
        self._lock = threading.Lock()

    def answer(self, headers: dict[str, str], body: dict[str, Any]) -> Entry:
        role = headers.get(ROLE_HEADER.lower())
        task = headers.get(TASK_HEADER.lower())
        if not role:
            raise ReplayMiss(f"no {ROLE_HEADER} header: the recording is keyed by agent role")
        if not task:
            raise ReplayMiss(f"no {TASK_HEADER} header: the recording is keyed by task")
        if role not in self.recording.roles:
            held = ", ".join(sorted(self.recording.roles))
            raise ReplayMiss(f"the recording has no replies for role {role!r} (it holds: {held})")
        if task not in self.recording.tasks:
            raise ReplayMiss(f"the recording has no task {task!r}")
        candidate = _int(headers.get(CANDIDATE_HEADER.lower()))
        round_no = _int(headers.get(ROUND_HEADER.lower()))
        digest = request_digest(
            str(body.get("model", "")), body.get("messages"), body.get("response_format")
        )
        exact = self.recording.by_digest(role, task, digest)
        if exact is not None:
            return exact
        key: Key = (role, task, candidate, round_no)
        replies = self.recording.replies(key)
        if not replies:
            have = [f"candidate {k[2]}, round {k[3]}" for k in self.recording.keys_for(role, task)]
            raise ReplayMiss(
                f"no recorded {role} reply for task {task!r}, candidate {candidate}, "
                f"round {round_no} (recorded: {'; '.join(have) or 'none'})"
            )
        with self._lock:
            index = self._served[key]
            self._served[key] += 1
        return replies[min(index, len(replies) - 1)]


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    usage = {
        "prompt_tokens": _estimate_tokens(prompt),
        "completion_tokens": _estimate_tokens(content),
    }
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-replay-{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "replay"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


def _chunks(body: dict[str, Any], content: str) -> list[dict[str, Any]]:
    """The reply as streaming chunks: role, content in pieces, stop, then usage."""
    ident = f"chatcmpl-replay-{uuid.uuid4().hex[:20]}"
    base = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time())}
    base["model"] = body.get("model", "replay")
    pieces = [content[i : i + 512] for i in range(0, len(content), 512)] or [""]
    out = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
    ]
    out += [
        {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    if include_usage:
        usage = _completion(body, content)["usage"]
        out.append({**base, "choices": [], "usage": usage})
    return out


def _error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ReplayServer:
    """A threaded HTTP server on ``host:port`` (port 0: a free one) answering from a recording."""

    def __init__(
        self,
        recording: Recording,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log: IO[str] | None = None,
        log_file: Path | None = None,
    ) -> None:
        self.book = ReplayBook(recording)
        self.models = sorted({e.model for e in recording.entries if e.model}) or ["replay"]
        self.served: list[dict[str, Any]] = []  # the log, also kept in memory
        self._log = log if log is not None else sys.stderr
        self._log_file = log_file.open("a", encoding="utf-8") if log_file else None
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        host = self._httpd.server_address[0]
        return f"http://{host}:{self.port}/v1"

    def log(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True)
        with self._lock:
            self.served.append(record)
            print(line, file=self._log, flush=True)
            if self._log_file:
                self._log_file.write(line + "\n")
                self._log_file.flush()

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="replay", daemon=True
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

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # our own log line says more

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    data = [
                        {"id": m, "object": "model", "created": 0, "owned_by": "replay"}
                        for m in server.models
                    ]
                    self._send(200, {"object": "list", "data": data})
                    return
                self._send(404, _error_body(f"no such path {self.path}", "not_found"))

            def do_POST(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                record: dict[str, Any] = {
                    "at": round(time.time(), 3),
                    "path": self.path,
                    "role": headers.get(ROLE_HEADER.lower()),
                    "task": headers.get(TASK_HEADER.lower()),
                    "candidate": _int(headers.get(CANDIDATE_HEADER.lower())),
                    "round": _int(headers.get(ROUND_HEADER.lower())),
                }
                status, payload, stream = self._answer(headers, record)
                record["status"] = status
                server.log(record)
                if stream is not None:
                    self._stream(stream)
                else:
                    self._send(status, payload)

            def _answer(
                self, headers: dict[str, str], record: dict[str, Any]
            ) -> tuple[int, Any, list[dict[str, Any]] | None]:
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    return 404, _error_body(f"no such path {self.path}", "not_found"), None
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    return 413, _error_body("request body too large", "invalid_request"), None
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return 400, _error_body("invalid JSON body", "invalid_request"), None
                if not isinstance(body, dict):
                    return (
                        400,
                        _error_body("the body must be a JSON object", "invalid_request"),
                        None,
                    )
                try:
                    entry = server.book.answer(headers, body)
                except ReplayMiss as miss:
                    record["error"] = str(miss)
                    return 404, _error_body(f"replay: {miss}", "not_found", UNRECORDED_CODE), None
                record.update(
                    served={
                        "task": entry.task,
                        "role": entry.role,
                        "candidate": entry.candidate,
                        "round": entry.round,
                        "seq": entry.seq,
                        "source": entry.source,
                        "content_sha256": content_digest(entry.content),
                    }
                )
                if body.get("stream"):
                    return 200, None, _chunks(body, entry.content)
                return 200, _completion(body, entry.content), None

        return Handler
