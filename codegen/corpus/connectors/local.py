"""The `local` source: files from directories and git checkouts on this machine.

The default is the running interpreter's standard library: real, licensed code that is
always present and that nobody on this project wrote.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codegen.corpus.clean import decode_bytes
from codegen.corpus.model import Document, content_hash

LANGUAGE_BY_SUFFIX = {
    ".py": "python",
    ".md": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".html": "html",
}
# Folders that are never source worth indexing: caches, VCS internals, installed third-party
# packages, and the standard library's own (very large) regression-test suite.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        "__pycache__",
        "site-packages",
        "dist-packages",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        "build",
        "dist",
        "test",
        "tests",
        "idle_test",
    }
)


def stdlib_path() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@dataclass
class LocalScanStats:
    files_seen: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _git_files(root: Path) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files of a git checkout (honours .gitignore)."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    proc = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        timeout=120,
    )
    if proc.returncode != 0:
        return None
    names = sorted(n for n in proc.stdout.decode("utf-8", "replace").split("\0") if n)
    return [root / n for n in names]


def _walk(root: Path) -> list[Path]:
    files = _git_files(root)
    if files is not None:
        return [f for f in files if not SKIPPED_DIRS.intersection(f.relative_to(root).parts[:-1])]
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        out.extend(Path(dirpath) / name for name in sorted(filenames))
    return out


def iter_local_documents(
    roots: list[Path],
    suffixes: frozenset[str] = frozenset({".py", ".md", ".rst"}),
    max_bytes: int = 1_000_000,
    stats: LocalScanStats | None = None,
) -> Iterator[Document]:
    """Yield one Document per readable text file under ``roots``, in a stable order.

    Oversized files are skipped by their size on disk, before reading a byte of them.
    """
    stats = stats if stats is not None else LocalScanStats()
    stdlib = stdlib_path().resolve()
    for root in roots:
        root = root.expanduser().resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"local source path is not a directory: {root}")
        for path in _walk(root):
            if path.suffix not in suffixes or path.is_symlink():
                continue
            stats.files_seen += 1
            try:
                st = path.stat()
                if st.st_size > max_bytes:
                    stats.skip("oversized")
                    continue
                raw = path.read_bytes()
            except OSError:
                stats.skip("unreadable")
                continue
            text, _encoding = decode_bytes(raw, python=path.suffix == ".py")
            if text is None:
                stats.skip("binary")
                continue
            rel = path.relative_to(root).as_posix()
            yield Document(
                id=content_hash(f"local:{root}:{rel}")[:32],
                source="local",
                uri=path.as_uri(),
                title=rel,
                text=text,
                language=LANGUAGE_BY_SUFFIX.get(path.suffix, "text"),
                licence="PSF-2.0" if root == stdlib else None,
                metadata={"root": str(root), "path": rel, "mtime": st.st_mtime},
            )


def tree_fingerprint(
    roots: list[Path], suffixes: frozenset[str] = frozenset({".py", ".md", ".rst"})
) -> str:
    """Hash of every candidate file's path, size and mtime: unchanged trees are not reread."""
    digest = hashlib.sha256()
    for root in roots:
        root = root.expanduser().resolve()
        digest.update(f"root:{root}\0".encode())
        for path in _walk(root):
            if path.suffix not in suffixes:
                continue
            try:
                st = path.lstat()
            except OSError:
                continue
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode("utf-8", "replace"))
    return digest.hexdigest()
