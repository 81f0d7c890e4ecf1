"""The inbox: request files dropped into ``$CODEGEN_HOME/inbox/`` become stored requests.

A file is plain text (the request) or JSON ``{"request": "...", "options": {...}}``. Accepted
files move to ``inbox/processed/``; malformed ones move to ``inbox/rejected/`` next to a
``.reason.txt`` saying why. Hidden and ``*.tmp``/``*.part`` files are left alone so a file
still being written is never read half-way; the only hidden files the scan touches are its
own claim files (``.<request id>__<name>.claim``). Only regular files are read: a symbolic
link (which would make the daemon read, and send to the model, any file it can read), a FIFO
or a device is moved to rejected/ unread; the claim is opened with ``O_NOFOLLOW``, so a link
swapped in after the listing is refused too.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from codegen.agents.artifacts import is_request_id, new_request_id
from codegen.agents.options import BadOptions, RequestOptions, StoredOptions
from codegen.agents.roles import BadRequest, validate_request
from codegen.durable import atomic_write_text, fsync_dir
from codegen.requests.store import RequestStore, StoredRequest
from codegen.untrusted import TooLarge, loads_json, read_capped

MAX_FILE_BYTES = 1_000_000
NOT_REGULAR = "not a regular file (a symbolic link, FIFO or device is never read)"
_PARTIAL = (".tmp", ".part", ".partial", ".swp")
_CLAIM = ".claim"  # a file being taken: hidden, so no other scan takes it too


@dataclass
class InboxScan:
    accepted: list[StoredRequest] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)


def parse_request_file(path: Path, name: str | None = None) -> tuple[str, StoredOptions]:
    """(request text, options) from one inbox file, read as JSON when its ``name`` (default:
    the path's own) ends in .json; BadRequest says what is wrong."""
    try:  # capped while reading: the file may have grown since any stat
        raw = _read_regular(path)
    except TooLarge as exc:
        raise BadRequest(str(exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest("file is not UTF-8 text (binary?)") from exc
    options = StoredOptions()
    if Path(name or path.name).suffix.lower() == ".json":
        try:
            data = loads_json(text)  # nesting too deep: a ValueError too, never RecursionError
        except ValueError as exc:
            raise BadRequest(f"invalid JSON: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("request"), str):
            raise BadRequest('JSON must be an object with a string "request"')
        unknown = set(data) - {"request", "options"}
        if unknown:
            raise BadRequest(
                f'unknown keys: {", ".join(sorted(unknown))} (options go under "options")'
            )
        try:
            # The names, types and ranges of the CLI's flags and the launchpad's config.
            options = RequestOptions.check(data.get("options") or {})
        except BadOptions as exc:
            raise BadRequest(str(exc)) from exc
        text = data["request"]
    return validate_request(text), options


def _read_regular(path: Path) -> bytes:
    """At most ``MAX_FILE_BYTES`` + 1 bytes of ``path``, which must be a regular file itself:
    never a link's target, and never a FIFO (opened non-blocking, so a writer-less FIFO
    cannot hang the sensor)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if os.path.islink(path):  # ELOOP: the name is a link
            raise BadRequest(NOT_REGULAR) from None
        raise exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadRequest(NOT_REGULAR)
        return read_capped(fh, MAX_FILE_BYTES)


def _is_candidate(path: Path) -> bool:
    """A name the scan takes: anything but a folder (processed/, rejected/) or a hidden name;
    links, FIFOs and devices are taken too, to be rejected unread."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISDIR(mode) and not path.name.startswith(".")


def _move(src: Path, dest_dir: Path, name: str) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / name
    n = 1
    while dest.exists():  # never overwrite an earlier file of the same name
        dest = dest_dir / f"{name}.{n}"
        n += 1
    os.replace(src, dest)
    fsync_dir(dest_dir)  # the move survives a power cut: no file taken twice, none lost
    return dest


def _claim_name(request_id: str, name: str) -> str:
    return f".{request_id}__{name}{_CLAIM}"


def _claimed(path: Path) -> tuple[str, str] | None:
    """(request id, original file name) of a claim file, else None."""
    if not (path.name.startswith(".") and path.name.endswith(_CLAIM)):
        return None
    request_id, sep, name = path.name[1 : -len(_CLAIM)].partition("__")
    return (request_id, name) if sep and is_request_id(request_id) and name else None


def _take(
    inbox: Path, claim: Path, request_id: str, name: str, store: RequestStore, scan: InboxScan
) -> None:
    """Steps 2 and 3 of taking a file: store it as a queued request under the claimed id,
    then move it to processed/. Each step is safe to repeat after a crash."""
    try:
        text, options = parse_request_file(claim, name)
    except (BadRequest, OSError, RecursionError, MemoryError) as exc:
        # Whatever a file holds, it ends in rejected/: a claim left behind would be retried,
        # and fail, on every later scan, and nothing after it would ever run.
        reason = " ".join(str(exc).split()) or type(exc).__name__  # one line, never empty
        dest = _move(claim, inbox / "rejected", name)
        atomic_write_text(dest.with_name(dest.name + ".reason.txt"), f"{reason}\n")
        scan.rejected.append((name, reason))
        return
    req = store.add(text, options, source=f"inbox:{name}", state="queued", request_id=request_id)
    _move(claim, inbox / "processed", f"{request_id}__{name}")
    scan.accepted.append(req)


def scan_inbox(inbox: Path, store: RequestStore, *, limit: int = 50) -> InboxScan:
    """Store each new request file (oldest first, at most ``limit`` per scan) as a queued
    request.

    Taking a file is three steps, each atomic and each safe to repeat: rename it to a hidden
    claim file that names a fresh request id, store the request under that id, move the file
    to processed/. A scan first finishes the claims an interrupted one left, so a process
    killed at any point neither loses a file nor makes two requests of it.
    """
    scan = InboxScan()
    if not inbox.is_dir():
        return scan
    for path in sorted(inbox.iterdir()):
        if not path.is_dir() and (claim := _claimed(path)) is not None:
            _take(inbox, path, *claim, store, scan)
    files = sorted(
        (p for p in inbox.iterdir() if _is_candidate(p)),
        key=lambda p: (p.lstat().st_mtime, p.name),  # a link's own time, never its target's
    )
    for path in files:
        if path.name.endswith(_PARTIAL) or path.name.endswith(".reason.txt"):
            continue
        if len(scan.accepted) + len(scan.rejected) >= limit:
            break
        request_id = new_request_id()
        claim = inbox / _claim_name(request_id, path.name)
        try:
            os.replace(path, claim)
        except FileNotFoundError:  # taken away since the listing (by its writer, say)
            continue
        fsync_dir(inbox)
        _take(inbox, claim, request_id, path.name, store, scan)
    return scan
