"""Reading input from outside (request files, task and samples files, recordings) so that no
file can stop the process reading it: sizes are capped while reading (a file that grows, a
FIFO, a gzip bomb), and JSON nested too deeply or too large to hold is a ``ValueError`` like
any other malformed JSON, never a RecursionError or MemoryError escaping the caller's
one-line error.

A leaf like ``codegen.json_types``: it imports nothing of the platform, so every package may
import it. (The standard library is enough: ``zlib``'s ``max_length`` streams a gzip member
and stops at the cap.)
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from codegen.json_types import JSONValue

_CHUNK = 1 << 20


class BadInput(ValueError):
    """Input from outside that cannot be used (a file missing, unreadable, too large or
    malformed); the message names it and what is wrong, in one line. Each reader's own error
    derives from it, so the command line refuses them all alike (exit 2, ``cli/exits.py``)."""


class TooLarge(BadInput):
    """Input past its size cap; the message says the cap."""


def read_capped(path: Path | str | BinaryIO, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path`` (or of a file already open), reading at most ``limit`` + 1 of
    them; more raises TooLarge (the stat size is not trusted: a file may grow, a FIFO has
    none)."""
    if not isinstance(path, Path | str):
        data = path.read(limit + 1)
    else:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{what} is larger than {limit} bytes (the limit)")
    return data


def gunzip_capped(data: bytes, limit: int) -> bytes:
    """The decompressed bytes of gzip ``data`` (every member, as ``gzip.decompress``), never
    holding more than ``limit`` + one chunk of output: past ``limit`` raises TooLarge; a
    corrupt or truncated stream raises ``zlib.error`` or EOFError."""
    out = bytearray()
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
        pending = rest
        while not inflater.eof:
            piece = inflater.decompress(pending, _CHUNK)
            out += piece
            if len(out) > limit:
                raise TooLarge(f"decompresses to more than {limit} bytes (the limit)")
            pending = inflater.unconsumed_tail
            if not pending and not piece and not inflater.eof:
                raise EOFError("compressed file ended before the end-of-stream marker")
        rest = inflater.unused_data.lstrip(b"\x00")  # gzip allows zero padding after a member
    return bytes(out)


def json_lines(
    text: str, path: Path | str, error: type[Exception] = BadInput
) -> Iterator[tuple[str, JSONValue]]:
    """Each non-blank line of a JSON-lines text as ``(where, value)``, ``where`` being
    ``path:line``; a line that is not JSON raises ``error`` naming it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = loads_json(line)
        except ValueError as exc:
            raise error(f"{where}: not valid JSON ({exc})") from None
        yield where, value


def loads_json(text: str | bytes) -> JSONValue:
    """``json.loads`` whose every failure is a ``json.JSONDecodeError`` (a ValueError with
    ``msg``): nesting past the interpreter's recursion limit and input too large to hold
    included."""
    try:
        value: JSONValue = json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", _as_str(text), 0) from None
    except MemoryError:
        raise json.JSONDecodeError("too large to hold in memory", "", 0) from None
    return value


def _as_str(text: str | bytes) -> str:
    # JSONDecodeError computes a line and column from the document: a short prefix will do.
    prefix = text[:1]
    return prefix if isinstance(prefix, str) else prefix.decode("latin-1")
