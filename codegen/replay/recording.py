"""Recordings: model replies keyed by role, task, candidate and round, in one JSONL file.

The first line is a header ``{"codegen_recording": 1, "source": ..., "notes": ...}``; every
other line is one reply::

    {"role": "programmer", "task": "HumanEval/7", "candidate": 0, "round": 1, "seq": 0,
     "content": "...", "source": "recorded", "model": "gpt-4-turbo", "request_digest": "..."}

``candidate`` and ``round`` are null for roles that do not send those headers (only the
programmer does, see docs/architecture.md, "LLM endpoint"); ``seq`` orders several replies under
one key (an analyzer re-ask, one reviewer call per round). ``source`` says where a reply
came from: ``recorded`` (a model sent it: an imported public file or ``--record``) or
``derived`` (the importer built it from the task's public prompt, for a role the source run
did not have, e.g. MapCoder has no analyzer; the header's ``notes`` say how).
``request_digest`` (own recordings only) identifies the exact request, so replaying the
same crew with the same settings gets exactly the recorded reply. ``request`` (recordings of
``codegen generate``) is the ``X-Codegen-Request`` key of the request's text: a later run of
the same text has a new request id (its task) but the same key, and is answered from the
task recorded under it.

``--record`` ends the file with an outcome line ``{"codegen_recording_outcome": {"status":
..., "reason": ...}}`` per run, so a partial recording says how its run ended; readers skip it.

A recording holds no key and no header but the ``X-Codegen-*`` ones: the recorder is given
the reply and the request's role, task, candidate, round and digest, nothing else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NotRequired, TypedDict

from codegen.agents.llm import CANDIDATE_HEADER, REQUEST_HEADER, ROUND_HEADER, TASK_HEADER
from codegen.durable import atomic_text_writer
from codegen.json_types import JSONValue
from codegen.untrusted import BadInput, TooLarge, loads_json, read_capped

FORMAT_VERSION = 1
RECORDED = "recorded"
DERIVED = "derived"
# The key of a run's closing line (see the module's docstring).
OUTCOME_KEY = "codegen_recording_outcome"


# A recording of a whole benchmark run is a few MB; past this a file is refused unread.
MAX_FILE_BYTES = 256 * 1024 * 1024


def read_text_capped(path: Path, what: str = "recording") -> str:
    """The UTF-8 text of a recording (or a file to import), at most MAX_FILE_BYTES of it;
    RecordingError (one line) otherwise."""
    try:
        data = read_capped(path, MAX_FILE_BYTES, what)
    except TooLarge as exc:
        raise RecordingError(f"{path}: {exc}") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RecordingError(f"{path}: not UTF-8 text") from None


class RecordingError(BadInput):
    """A recording file that cannot be read; the message names the file and line."""


Key = tuple[str, str, int | None, int | None]  # role, task, candidate, round


class RecordingHeader(TypedDict, total=False):
    """A recording's first line."""

    codegen_recording: int  # FORMAT_VERSION
    source: str  # where the replies came from (an importer, ``codegen --record``)
    notes: str  # how derived replies were made, if any
    created_at: str  # ISO 8601, UTC


class EntryRecord(TypedDict):
    """Every other line: one reply (``Entry``)."""

    role: str
    task: str
    candidate: int | None
    round: int | None
    content: str
    seq: int
    source: str
    model: str | None
    request_digest: str | None
    request: NotRequired[str]  # the request text's key (codegen generate)


@dataclass(frozen=True)
class Entry:
    role: str
    task: str
    candidate: int | None
    round: int | None
    content: str
    seq: int = 0
    source: str = RECORDED
    model: str | None = None
    request_digest: str | None = None
    request: str | None = None

    @property
    def key(self) -> Key:
        return (self.role, self.task, self.candidate, self.round)

    def to_dict(self) -> EntryRecord:
        record = EntryRecord(
            role=self.role,
            task=self.task,
            candidate=self.candidate,
            round=self.round,
            content=self.content,
            seq=self.seq,
            source=self.source,
            model=self.model,
            request_digest=self.request_digest,
        )
        if self.request is not None:
            record["request"] = self.request
        return record


def request_digest(model: str, messages: JSONValue, response_format: JSONValue = None) -> str:
    """What identifies a request for exact replay: model, messages and response format."""
    blob = json.dumps(
        {"model": model, "messages": messages, "response_format": response_format},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _optional_int(value: JSONValue, what: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordingError(f"{where}: {what} must be a non-negative integer or null")
    return value


def _entry(data: JSONValue, where: str) -> Entry:
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: expected a JSON object")
    role, task, content = data.get("role"), data.get("task"), data.get("content")
    if not isinstance(role, str) or not role:
        raise RecordingError(f"{where}: role must be a non-empty string")
    if not isinstance(task, str) or not task:
        raise RecordingError(f"{where}: task must be a non-empty string")
    if not isinstance(content, str):
        raise RecordingError(f"{where}: content must be a non-empty string")
    model, digest, request = data.get("model"), data.get("request_digest"), data.get("request")
    return Entry(
        role=role,
        task=task,
        candidate=_optional_int(data.get("candidate"), "candidate", where),
        round=_optional_int(data.get("round"), "round", where),
        content=content,
        seq=_optional_int(data.get("seq", 0), "seq", where) or 0,
        source=str(data.get("source", RECORDED)),
        model=model if isinstance(model, str) else None,
        request_digest=digest if isinstance(digest, str) else None,
        request=request if isinstance(request, str) and request else None,
    )


def _header(data: dict[str, JSONValue]) -> RecordingHeader:
    """The header line's known fields (the version is checked by the caller)."""
    header = RecordingHeader(codegen_recording=FORMAT_VERSION)
    if isinstance(source := data.get("source"), str):
        header["source"] = source
    if isinstance(notes := data.get("notes"), str):
        header["notes"] = notes
    if isinstance(created_at := data.get("created_at"), str):
        header["created_at"] = created_at
    return header


@dataclass
class Recording:
    header: RecordingHeader
    entries: list[Entry]

    def __post_init__(self) -> None:
        self._by_key: dict[Key, list[Entry]] = defaultdict(list)
        self._by_digest: dict[tuple[str, str, str], Entry] = {}
        # The task last recorded for each request text's key (a file recorded into twice
        # holds two runs of it: the later one answers).
        self._task_by_request = {e.request: e.task for e in self.entries if e.request}
        for entry in sorted(self.entries, key=lambda e: e.seq):
            self._by_key[entry.key].append(entry)
            if entry.request_digest:
                self._by_digest.setdefault((entry.role, entry.task, entry.request_digest), entry)
        self.roles = {e.role for e in self.entries}
        self.tasks = {e.task for e in self.entries}

    def replies(self, key: Key) -> list[Entry]:
        return list(self._by_key.get(key, []))

    def task_for_request(self, request: str) -> str | None:
        """The task recorded for the request text whose key is ``request``, if any."""
        return self._task_by_request.get(request)

    def by_digest(self, role: str, task: str, digest: str) -> Entry | None:
        return self._by_digest.get((role, task, digest))

    def keys_for(self, role: str, task: str) -> list[Key]:
        return sorted(
            (k for k in self._by_key if k[0] == role and k[1] == task),
            key=lambda k: (k[2] if k[2] is not None else -1, k[3] if k[3] is not None else -1),
        )


def read_recording(path: Path | str) -> Recording:
    path = Path(path)
    text = read_text_capped(path)
    header: RecordingHeader | None = None
    entries: list[Entry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = loads_json(line)
        except ValueError as exc:
            raise RecordingError(f"{where}: not valid JSON ({exc.msg})") from None
        if isinstance(data, dict) and "codegen_recording" in data:
            if data["codegen_recording"] != FORMAT_VERSION:
                raise RecordingError(
                    f"{where}: recording format {data['codegen_recording']!r}, "
                    f"this version reads {FORMAT_VERSION}"
                )
            header = header or _header(data)
            continue
        if isinstance(data, dict) and OUTCOME_KEY in data:
            continue
        if header is None:
            raise RecordingError(f"{where}: not a recording (no codegen_recording header line)")
        entries.append(_entry(data, where))
    if header is None:
        raise RecordingError(f"{path}: empty: not a recording")
    if not entries:
        raise RecordingError(f"{path}: the recording holds no replies")
    return Recording(header=header, entries=entries)


def header_line(source: str, notes: str = "") -> RecordingHeader:
    return RecordingHeader(
        codegen_recording=FORMAT_VERSION,
        source=source,
        notes=notes,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def write_recording(
    path: Path | str, entries: Iterable[Entry], source: str, notes: str = ""
) -> int:
    """Write a whole recording atomically (temp file + rename); returns the reply count."""
    count = 0
    with atomic_text_writer(path) as fh:
        fh.write(json.dumps(header_line(source, notes)) + "\n")
        for entry in entries:
            fh.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count


def _header_value(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    value = _header_value(headers, name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class FileRecorder:
    """Appends the crew's replies to a recording; safe across threads and processes (the
    Dagster steps of one ``codegen generate`` run in several processes)."""

    def __init__(self, path: Path | str, source: str = "codegen --record") -> None:
        self.path = Path(path)
        self.source = source
        self._lock = threading.Lock()

    @contextmanager
    def _locked(self) -> Iterator[IO[str]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield fh
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def __call__(
        self,
        role: str,
        request: Mapping[str, JSONValue],
        content: str,
    ) -> None:
        """Record one reply. ``request`` holds the SDK call's keyword arguments (as they go on
        the wire); only the model, the digest of the messages and the ``X-Codegen-*`` headers
        are kept."""
        extra = request.get("extra_headers")
        headers = {k: str(v) for k, v in extra.items()} if isinstance(extra, dict) else {}
        task = _header_value(headers, TASK_HEADER) or "unknown"
        key: Key = (
            role,
            task,
            _int_header(headers, CANDIDATE_HEADER),
            _int_header(headers, ROUND_HEADER),
        )
        model = str(request.get("model", ""))
        digest = request_digest(model, request.get("messages"), request.get("response_format"))
        text_key = _header_value(headers, REQUEST_HEADER)
        with self._locked() as fh:
            fh.seek(0)
            existing = fh.read()
            if not existing.strip():
                fh.write(json.dumps(header_line(self.source)) + "\n")
            # Replies already in the file under this key (another process's) come first.
            seq = sum(
                1 for line in existing.splitlines() if line.startswith("{") and _same_key(line, key)
            )
            entry = Entry(
                *key,
                content=content,
                seq=seq,
                model=model,
                request_digest=digest,
                request=text_key,
            )
            fh.seek(0, os.SEEK_END)
            fh.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
            fh.flush()

    def close_run(self, outcome: Mapping[str, JSONValue]) -> None:
        """Append the closing line of one run (how it ended), after its replies."""
        with self._locked() as fh:
            fh.write(json.dumps({OUTCOME_KEY: dict(outcome)}, ensure_ascii=False) + "\n")
            fh.flush()


def replies_in(path: Path) -> int:
    """How many replies the recording at ``path`` holds (0 when there is no file)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return 0
    return sum(1 for line in text.splitlines() if _is_reply(line))


def _is_reply(line: str) -> bool:
    try:
        data = loads_json(line)
    except ValueError:
        return False
    return isinstance(data, dict) and "role" in data


def _same_key(line: str, key: Key) -> bool:
    try:
        data = loads_json(line)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and (
            data.get("role"),
            data.get("task"),
            data.get("candidate"),
            data.get("round"),
        )
        == key
    )
