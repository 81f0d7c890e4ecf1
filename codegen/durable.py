"""Files replaced whole and durably: written to a temporary file in the same folder, flushed
to disk (fsync), renamed over the target, and the folder's entry flushed too.

A rename alone is atomic but not durable: after a power cut the file can be empty or the
rename lost, because the data and the directory entry may still sit in the page cache. Every
store that replaces files (artifacts, evaluation results, caches, the corpus stages, the
index's meta.json) goes through here. A leaf module like ``codegen.json_types``: it imports
nothing of the platform, so every package may import it. (The standard library is enough; the
``atomicwrites`` package that did this is archived.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def fsync_file(path: Path | str) -> None:
    """Flush a file written and closed elsewhere (by a library that does not sync) to disk."""
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def fsync_dir(folder: Path) -> None:
    """Flush ``folder``'s entries (a rename into it, a new file) to disk; a file system that
    cannot open or sync a directory is left as it is."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _replacing(path: Path | str) -> Iterator[tuple[int, Path]]:
    """(open descriptor, temporary path) of a new file that replaces ``path`` once the block
    ends without an error; on an error the temporary file goes and ``path`` stays as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # Not mkstemp: its 0600 would outlive the rename; a plain open's mode (umask) is wanted.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        yield fd, Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_binary_writer(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary handle whose content replaces ``path`` atomically and durably (flushed and
    fsynced before the rename) once the block ends without an error."""
    with _replacing(path) as (fd, _), os.fdopen(fd, "wb") as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_text_writer(
    path: Path | str, encoding: str = "utf-8", errors: str = "strict"
) -> Iterator[IO[str]]:
    """``atomic_binary_writer`` for text."""
    with _replacing(path) as (fd, _), os.fdopen(fd, "w", encoding=encoding, errors=errors) as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically and durably; returns the path."""
    with atomic_binary_writer(path) as fh:
        fh.write(data)
    return Path(path)


def atomic_write_text(path: Path | str, text: str, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``text`` atomically and durably; returns the path."""
    return atomic_write_bytes(path, text.encode(encoding))


def durable_replace(src: Path | str, dest: Path | str) -> None:
    """``os.replace`` of a file already written and closed elsewhere, made durable: its data
    is flushed before the rename and both folders' entries after it."""
    src, dest = Path(src), Path(dest)
    fsync_file(src)
    os.replace(src, dest)
    fsync_dir(dest.parent)
    if src.parent != dest.parent:
        fsync_dir(src.parent)
