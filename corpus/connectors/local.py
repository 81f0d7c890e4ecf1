"""The `local` source: files from directories and git checkouts on this machine.

The default is the running interpreter's standard library: real, licensed code that is
always present and that nobody on this project wrote.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corpus.model import Document, content_hash

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


def iter_local_documents(
    roots: list[Path],
    suffixes: frozenset[str] = frozenset({".py", ".md", ".rst"}),
    max_bytes: int = 1_000_000,
    stats: LocalScanStats | None = None,
) -> Iterator[Document]:
    """Yield one Document per readable text file under ``roots``, in a stable order."""
    stats = stats if stats is not None else LocalScanStats()
    for root in roots:
        root = root.resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"local source path is not a directory: {root}")
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.suffix not in suffixes or path.is_symlink():
                    continue
                stats.files_seen += 1
                try:
                    size = path.stat().st_size
                except OSError:
                    stats.skip("unreadable")
                    continue
                if size > max_bytes:
                    stats.skip("oversized")
                    continue
                raw = path.read_bytes()
                if b"\x00" in raw[:8192]:
                    stats.skip("binary")
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = raw.decode("latin-1")
                rel = path.relative_to(root).as_posix()
                yield Document(
                    id=content_hash(f"local:{root}:{rel}")[:32],
                    source="local",
                    uri=path.as_uri(),
                    title=rel,
                    text=text,
                    language=LANGUAGE_BY_SUFFIX.get(path.suffix, "text"),
                    licence="PSF-2.0" if root == stdlib_path().resolve() else None,
                    metadata={"root": str(root), "path": rel, "mtime": path.stat().st_mtime},
                )
