"""What every connector shares: its report, its errors, and its stored cursor."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

from codegen.json_types import JSONObject

Progress = Callable[[str], None]  # a line for the run's log


class RepoCursor(TypedDict):
    sha: str  # the default branch's commit last downloaded
    files: int


class PageValidators(TypedDict, total=False):
    """A docs page's cursor: its HTTP validators, the links it had, the start URL reaching it."""

    etag: str
    last_modified: str
    links: list[str]  # followed again when the page answers 304
    start: str


class FeedEntry(TypedDict):
    id: str  # the document id
    link: str
    published: int | None  # epoch seconds


class FeedValidators(TypedDict, total=False):
    etag: str
    last_modified: str
    entries: dict[str, FeedEntry]  # by entry id (or link, or title)


class SourceState(TypedDict, total=False):
    """A source's persisted cursor, ``state/<source>.json``; each source uses its own keys."""

    # local: the tree fingerprint and what the raw stage held then
    tree: str
    raw: str
    documents: int
    skipped: dict[str, int]
    repos: dict[str, RepoCursor]  # github_repos, by owner/name
    since: dict[str, str]  # github_issues: newest updated_at (ISO) by owner/name
    fromdate: dict[str, int]  # stackoverflow: next fromdate (epoch seconds) by tag
    pages: dict[str, PageValidators]  # docs, by URL
    feeds: dict[str, FeedValidators]  # blogs, by feed URL


class ReportRecord(TypedDict):
    """A source's last report, ``state/<source>.report.json``, and its asset metadata."""

    status: str
    message: str
    fetched: int
    documents: int
    skipped: dict[str, int]
    requests: int
    removed_upstream: int
    rate_limit_waits: int
    rate_limit_waited_s: float


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

    def as_metadata(self) -> ReportRecord:
        return ReportRecord(
            status=self.status,
            message=self.message,
            fetched=self.fetched,
            documents=self.documents,
            skipped=dict(sorted(self.skipped.items())),
            requests=self.requests,
            removed_upstream=len(self.gone),
            rate_limit_waits=self.rate_limit_waits,
            rate_limit_waited_s=self.rate_limit_waited_s,
        )


def _load_object(state_dir: Path, name: str) -> JSONObject:
    path = state_dir / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_state(state_dir: Path, source: str) -> SourceState:
    """The stored cursor, empty when there is none or it is unreadable (refetched then)."""
    # Only save_state writes this file, from a SourceState: its shape is trusted, not rechecked.
    return cast(SourceState, _load_object(state_dir, source))


def load_report(state_dir: Path, source: str) -> ReportRecord | None:
    """The source's last report, None when it has never run (or the file is not a report)."""
    data = _load_object(state_dir, f"{source}.report")
    if not isinstance(data.get("status"), str):
        return None
    return cast(ReportRecord, data)  # written by save_report from SourceReport.as_metadata


def save_report(state_dir: Path, report: SourceReport) -> None:
    _save_json(state_dir, f"{report.source}.report", report.as_metadata())


def save_state(state_dir: Path, source: str, state: SourceState) -> None:
    _save_json(state_dir, source, state)


def _save_json(state_dir: Path, source: str, state: SourceState | ReportRecord) -> None:
    """Atomic, so a killed run leaves the previous cursor, never half of one."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{source}.json"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
