"""Validation of the files copied into a sandbox, and reading a host directory safely.

Paths must be relative, normalised and stay inside the work dir. Links are carried as links,
target verbatim, and never followed on the host: a link to an absolute path or out of the
work dir resolves inside the sandbox's own file system (a private root and tmpfs dirs), so it
dangles or finds the sandbox's files, never the host's. Only where there is no sandbox (the
unsafe-host mode) must links stay inside the work dir (``confine_links``).
"""

from __future__ import annotations

import base64
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from codegen.sandbox.errors import UnsafePathError

MAX_FILES = 10_000
MAX_DEPTH = 32
MAX_LINK_TARGET = 4095  # PATH_MAX less the NUL: symlink(2) refuses longer targets


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to create in the work dir; ``target`` is relative to the link."""

    target: str


FileContent = str | bytes | Symlink


class FileEntry(TypedDict):
    """One file in the job message: base64 ``data``, or a symlink's ``link`` target."""

    path: str
    data: NotRequired[str]
    link: NotRequired[str]


def _check_path(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise UnsafePathError(f"file path must be a non-empty string, got {path!r}")
    if "\x00" in path or "\\" in path:
        raise UnsafePathError(f"file path {path!r} holds a NUL or backslash")
    if path.startswith("/"):
        raise UnsafePathError(f"file path {path!r} is absolute; only relative paths are allowed")
    parts = path.split("/")
    if ".." in parts:
        raise UnsafePathError(f"file path {path!r} contains '..'")
    norm = posixpath.normpath(path)
    if norm in (".", "") or norm.startswith("../"):
        raise UnsafePathError(f"file path {path!r} does not name a file in the work dir")
    if norm.count("/") >= MAX_DEPTH:
        raise UnsafePathError(f"file path {path!r} is nested deeper than {MAX_DEPTH} levels")
    return norm


def _check_link(path: str, target: str, confine: bool) -> None:
    if not isinstance(target, str) or not target or "\x00" in target:
        raise UnsafePathError(f"link {path!r} has an empty or NUL target")
    if len(target.encode("utf-8", "surrogateescape")) > MAX_LINK_TARGET:
        raise UnsafePathError(f"link {path!r} has a target longer than {MAX_LINK_TARGET} bytes")
    if not confine:
        return
    if target.startswith("/"):
        raise UnsafePathError(f"link {path!r} points to the absolute path {target!r}")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafePathError(f"link {path!r} -> {target!r} points outside the work dir")


def encode_files(
    files: Mapping[str, FileContent], max_total_bytes: int, confine_links: bool = False
) -> list[FileEntry]:
    """Validate ``files`` and encode them for the supervisor's job message.

    ``confine_links``: refuse links that are absolute or lead out of the work dir (needed only
    where the work dir is on the host itself).
    """
    if len(files) > MAX_FILES:
        raise UnsafePathError(f"too many files: {len(files)} > {MAX_FILES}")
    entries: list[FileEntry] = []
    seen: set[str] = set()
    total = 0
    for raw_path, content in files.items():
        path = _check_path(raw_path)
        if path in seen:
            raise UnsafePathError(f"file path {raw_path!r} is given twice")
        seen.add(path)
        if isinstance(content, Symlink):
            _check_link(path, content.target, confine_links)
            entries.append({"path": path, "link": content.target})
            continue
        if isinstance(content, str):
            data = content.encode("utf-8")
        elif isinstance(content, bytes | bytearray | memoryview):
            data = bytes(content)
        else:
            raise UnsafePathError(f"file {raw_path!r}: content must be str, bytes or Symlink")
        total += len(data)
        if total > max_total_bytes:
            raise UnsafePathError(f"files exceed the work dir size of {max_total_bytes} bytes")
        entries.append({"path": path, "data": base64.b64encode(data).decode("ascii")})
    # A path that is both a file and a parent directory of another cannot be created.
    for path in seen:
        parent = posixpath.dirname(path)
        while parent:
            if parent in seen:
                raise UnsafePathError(f"{parent!r} is both a file and a directory")
            parent = posixpath.dirname(parent)
    return entries


def read_dir(root: Path, max_total_bytes: int) -> dict[str, FileContent]:
    """Read a host directory into a files mapping without following any link.

    Links become ``Symlink`` entries holding their target verbatim; sockets, FIFOs and devices
    are refused. ``os.fwalk`` opens each directory relative to its parent's descriptor with
    O_NOFOLLOW, and files are opened relative to their directory's descriptor with O_NOFOLLOW,
    so a directory or file swapped for a link mid-walk is refused, never followed: nothing
    outside ``root`` is read.
    """
    root = Path(root)
    if not root.is_dir():
        raise UnsafePathError(f"{root} is not a directory")
    out: dict[str, FileContent] = {}
    total = 0
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(dirnames + filenames):
            rel = name if rel_dir == "." else posixpath.join(rel_dir.replace(os.sep, "/"), name)
            st = os.lstat(name, dir_fd=dir_fd)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = Symlink(os.readlink(name, dir_fd=dir_fd))
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > max_total_bytes:
                    raise UnsafePathError(f"{root} holds more than {max_total_bytes} bytes")
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
                except OSError as exc:
                    raise UnsafePathError(f"{os.path.join(dirpath, name)}: {exc.strerror}") from exc
                with os.fdopen(fd, "rb") as fh:
                    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                        raise UnsafePathError(f"{os.path.join(dirpath, name)} changed while read")
                    out[rel] = fh.read(max_total_bytes + 1)
            elif not stat.S_ISDIR(st.st_mode):
                raise UnsafePathError(
                    f"{os.path.join(dirpath, name)} is not a regular file, directory or link"
                )
            if len(out) > MAX_FILES:
                raise UnsafePathError(f"{root} holds more than {MAX_FILES} files")
    return out
