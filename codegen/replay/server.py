"""An OpenAI-compatible server that answers from a recording, never from a model.

Speaks ``POST /v1/chat/completions`` (plain JSON, or Server-Sent Events with
``"stream": true``) and ``GET /v1/models``, so the ``openai`` SDK and the crew talk to it as
to any endpoint. Each request is answered by the recording's reply for its role
(``X-Codegen-Agent``), task (``X-Codegen-Task``), candidate (``X-Codegen-Candidate``) and round
(``X-Codegen-Round``). A request of ``codegen generate`` has a new request id (its task) in
every run; when the recording has no such task, the task recorded for the same request text
(its ``X-Codegen-Request`` key, ``codegen.agents.llm.wire.request_key``) answers it. Then:

1. a reply recorded for exactly this request (same model, messages and response format)
   when the recording has one (``--record`` recordings);
2. otherwise the replies under that key in order: the first request gets the first reply,
   the next the next; once they are used up the last one is repeated (a re-run of the same
   evaluation against the same server gets the same answers).

Anything the recording cannot answer (no role or task header, a role or task it does not
hold, a round it has no reply for) gets HTTP 404 with a message that says what is missing:
never a made-up reply. 404 is not retried by the SDK, so the crew fails fast. Its error code
is ``replay_unrecorded`` (``codegen.agents.llm.wire.UNRECORDED_CODE``): the crew ends such a
request as ``unrecorded`` (the end of the recording, scored with the code so far), unlike any
other 404 (a wrong path, an outage).

No model is called, and the completions say so: ``system_fingerprint`` is ``codegen-replay``
(``codegen.agents.llm.wire.REPLAY_FINGERPRINT``) and ``model`` names the model the recording says
wrote the reply (``unknown`` when it does not say: imported files do not), never the model the
request asked for. The crew labels such a reply ``replay:<model>`` and gives it no price.

Every request is logged, one JSON object a line (to stderr and, optionally, a log file):
time, role, task, candidate, round, HTTP status, and for answered ones the key and ``seq`` of
the entry served, its source and a digest of its content.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import IO

from codegen.agents.llm import (
    CANDIDATE_HEADER,
    REPLAY_FINGERPRINT,
    REQUEST_HEADER,
    ROLE_HEADER,
    ROUND_HEADER,
    TASK_HEADER,
    UNKNOWN_MODEL,
    UNRECORDED_CODE,
)
from codegen.json_types import JSONObject
from codegen.replay.openai_server import (
    Headers,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
)
from codegen.replay.recording import Entry, Key, Recording, request_digest


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

    def model_ids(self) -> list[str]:
        return sorted({e.model for e in self.recording.entries if e.model}) or ["replay"]

    def answer(self, request: RecordedRequest) -> Reply:
        try:
            entry = self.entry_for(request.headers, request.body or {})
        except ReplayMiss as miss:
            return Reply.error(
                404, f"replay: {miss}", error_type="not_found", error_code=UNRECORDED_CODE
            )
        return Reply.text(
            entry.content,
            model=entry.model or UNKNOWN_MODEL,
            served={
                "task": entry.task,
                "role": entry.role,
                "candidate": entry.candidate,
                "round": entry.round,
                "seq": entry.seq,
                "source": entry.source,
                "content_sha256": content_digest(entry.content),
            },
        )

    def entry_for(self, headers: Headers, body: JSONObject) -> Entry:
        role = headers.get(ROLE_HEADER)
        task = headers.get(TASK_HEADER)
        if not role:
            raise ReplayMiss(f"no {ROLE_HEADER} header: the recording is keyed by agent role")
        if not task:
            raise ReplayMiss(f"no {TASK_HEADER} header: the recording is keyed by task")
        if role not in self.recording.roles:
            held = ", ".join(sorted(self.recording.roles))
            raise ReplayMiss(f"the recording has no replies for role {role!r} (it holds: {held})")
        if task not in self.recording.tasks:
            task = self._task_of_request(task, headers.get(REQUEST_HEADER))
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

    def _task_of_request(self, task: str, request: str | None) -> str:
        """The task recorded for the request text keyed ``request``; ReplayMiss if none."""
        recorded = self.recording.task_for_request(request) if request else None
        if recorded is None:
            text = f" and no request with this text ({REQUEST_HEADER} {request})" if request else ""
            raise ReplayMiss(f"the recording has no task {task!r}{text}")
        return recorded


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class ReplayServer(OpenAICompatibleServer):
    """The OpenAI-compatible server over a :class:`ReplayBook`; logs every request it answers."""

    book: ReplayBook

    def __init__(
        self,
        recording: Recording,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log: IO[str] | None = None,
        log_file: Path | None = None,
    ) -> None:
        super().__init__(
            ReplayBook(recording),
            host=host,
            port=port,
            log=log if log is not None else sys.stderr,
            log_file=log_file,
            name="replay",
            fingerprint=REPLAY_FINGERPRINT,
        )

    @property
    def models(self) -> list[str]:
        return self.book.model_ids()
