"""What every connector shares: its report, its errors, and its stored cursor."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class SourceDisabled(Exception):
    """The source has no configuration (no repos, no tags, no URLs): reported, not failed."""


class SourceError(Exception):
    """A clear, user-facing reason the source could not (fully) be fetched."""


@dataclass
class SourceReport:
    source: str
    status: str = "ok"  # ok | disabled | partial | failed
    message: str = ""
    fetched: int = 0  # documents fetched this run
    documents: int = 0  # documents stored after merging with the previous run
    skipped: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    bytes: int = 0
    rate_limit_waits: int = 0  # times a spent rate limit was waited out
    rate_limit_waited_s: float = 0.0
    # (metadata key, value, replace): after a complete fetch of that scope (e.g. one
    # repository), its stored documents are replaced by the fetched ones (deletions included).
    replace_scopes: list[tuple[str, str, bool]] = field(default_factory=list)
    # Ids of stored documents known to be gone upstream (a page now 404, a deleted feed
    # entry): tombstones, removed from the stored set on this run.
    gone: set[str] = field(default_factory=set)

    def skip(self, reason: str, n: int = 1) -> None:
        if n > 0:
            self.skipped[reason] += n

    def as_metadata(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "fetched": self.fetched,
            "documents": self.documents,
            "skipped": dict(sorted(self.skipped.items())),
            "requests": self.requests,
            "removed_upstream": len(self.gone),
            "rate_limit_waits": self.rate_limit_waits,
            "rate_limit_waited_s": self.rate_limit_waited_s,
        }


def load_state(state_dir: Path, source: str) -> dict[str, Any]:
    path = state_dir / f"{source}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(state_dir: Path, source: str, state: dict[str, Any]) -> None:
    """Atomic, so a killed run leaves the previous cursor, never half of one."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{source}.json"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
