"""The inbox: request files dropped into ``$CODEGEN_HOME/inbox/`` become stored requests.

A file is plain text (the request) or JSON ``{"request": "...", "options": {...}}``. Accepted
files move to ``inbox/processed/``; malformed ones move to ``inbox/rejected/`` next to a
``.reason.txt`` saying why. Hidden and ``*.tmp``/``*.part`` files are left alone so a file
still being written is never read half-way.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from agents.requests import RequestStore, StoredRequest
from agents.roles import BadRequest, validate_request
from agents.types import CrewOptions

MAX_FILE_BYTES = 1_000_000
_PARTIAL = (".tmp", ".part", ".partial", ".swp")


@dataclass
class InboxScan:
    accepted: list[StoredRequest] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)


def parse_request_file(path: Path) -> tuple[str, dict]:
    """(request text, options) from one inbox file; BadRequest says what is wrong."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise BadRequest(f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest("file is not UTF-8 text (binary?)") from exc
    options: dict = {}
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise BadRequest(f"invalid JSON: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("request"), str):
            raise BadRequest('JSON must be an object with a string "request"')
        raw_options = data.get("options") or {}
        if not isinstance(raw_options, dict):
            raise BadRequest('"options" must be an object')
        unknown = set(raw_options) - set(CrewOptions.__dataclass_fields__) - {"limits"}
        if unknown:
            raise BadRequest(f"unknown options: {', '.join(sorted(unknown))}")
        try:
            CrewOptions.from_dict(raw_options)
        except TypeError as exc:
            raise BadRequest(f"bad options: {exc}") from exc
        text, options = data["request"], raw_options
    return validate_request(text), options


def _move(src: Path, dest_dir: Path, name: str) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / name
    n = 1
    while dest.exists():  # never overwrite an earlier file of the same name
        dest = dest_dir / f"{name}.{n}"
        n += 1
    os.replace(src, dest)
    return dest


def scan_inbox(inbox: Path, store: RequestStore, *, limit: int = 50) -> InboxScan:
    """Store each new request file (oldest first, at most ``limit`` per scan)."""
    scan = InboxScan()
    if not inbox.is_dir():
        return scan
    files = sorted(
        (p for p in inbox.iterdir() if p.is_file() and not p.name.startswith(".")),
        key=lambda p: (p.stat().st_mtime, p.name),
    )
    for path in files:
        if path.name.endswith(_PARTIAL) or path.name.endswith(".reason.txt"):
            continue
        if len(scan.accepted) + len(scan.rejected) >= limit:
            break
        try:
            text, options = parse_request_file(path)
        except (BadRequest, OSError) as exc:
            dest = _move(path, inbox / "rejected", path.name)
            dest.with_name(dest.name + ".reason.txt").write_text(f"{exc}\n")
            scan.rejected.append((path.name, str(exc)))
            continue
        req = store.add(text, options, source=f"inbox:{path.name}", state="launched")
        _move(path, inbox / "processed", f"{req.id}__{path.name}")
        scan.accepted.append(req)
    return scan
