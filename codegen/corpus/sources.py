"""Refreshing one source's raw stage: fetch, merge with what is stored, write, advance cursor.

Order matters for the killed-run guarantee: the merged raw file is written atomically first,
and only then is the cursor advanced. A run killed in between refetches the same items next
time and stores the same documents.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

from codegen.corpus.connectors import (
    LocalScanStats,
    Progress,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
    iter_local_documents,
    load_report,
    load_state,
    save_report,
    save_state,
    stdlib_path,
    tree_fingerprint,
)
from codegen.corpus.model import Document
from codegen.corpus.store import (
    fingerprint,
    raw_path,
    read_documents,
    state_dir,
    write_jsonl_atomic,
)

if TYPE_CHECKING:
    from codegen.corpus.connectors import (
        DocsConfig,
        FeedsConfig,
        GitHubConfig,
        ReportRecord,
        StackExchangeConfig,
    )

# The config dataclass of each source (``SourceSpec.config_path``).
SourceConfig: TypeAlias = (
    "LocalConfig | GitHubConfig | StackExchangeConfig | DocsConfig | FeedsConfig"
)
# A connector yields documents and updates ``state`` in place with its next cursor. Each takes
# its own config type; the registry pairs it with that type.
Connector = Callable[[SourceConfig, SourceState, SourceReport, Progress], Iterator[Document]]


@dataclass
class LocalConfig:
    local_paths: list[str] = field(default_factory=list)  # empty: the standard library
    max_document_bytes: int = 1_000_000


def fetch_local(
    cfg: LocalConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    roots = _local_roots(cfg)
    for root in roots:
        if not root.expanduser().is_dir():
            raise SourceError(f"local path is not a directory: {root}")
    stats = LocalScanStats()
    docs = iter_local_documents(roots, max_bytes=cfg.max_document_bytes, stats=stats)
    for n, doc in enumerate(docs, 1):
        if n % 500 == 0:
            progress(f"local: {n} files read")
        yield doc
    report.skipped.update(stats.skipped)


def _local_roots(cfg: LocalConfig) -> list[Path]:
    return [Path(p) for p in cfg.local_paths] or [stdlib_path()]


def _load(path: str) -> object:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class SourceSpec:
    """One corpus source. Connector and config type are named, not imported: connectors pull in
    their SDKs (PyGithub, stackapi, feedparser), and a run imports only the sources it uses."""

    connector_path: str  # "module:function", a Connector
    config_path: str  # "module:Class", the dataclass the connector takes
    # Its section of the corpus settings (``CorpusSettings.<key>``); None: the corpus section
    # itself. Fields of the section (and the shared HTTP settings) fill the config's fields.
    settings_key: str | None
    secret_env: str | None = None  # environment variable holding its credential
    secret_field: str | None = None  # the config field that receives it
    incremental: bool = True  # merges each fetch into the stored set (else a full snapshot)

    def connector(self) -> Connector:
        return cast(Connector, _load(self.connector_path))  # the registry names a Connector

    def config_type(self) -> type[SourceConfig]:
        return cast("type[SourceConfig]", _load(self.config_path))


_CONNECTORS = "codegen.corpus.connectors"  # its face loads each remote connector on first use
REGISTRY: dict[str, SourceSpec] = {
    "local": SourceSpec(
        "codegen.corpus.sources:fetch_local",
        "codegen.corpus.sources:LocalConfig",
        None,
        incremental=False,
    ),
    "github_repos": SourceSpec(
        f"{_CONNECTORS}:fetch_repos",
        f"{_CONNECTORS}:GitHubConfig",
        "github",
        "GITHUB_TOKEN",
        "token",
    ),
    "github_issues": SourceSpec(
        f"{_CONNECTORS}:fetch_issues",
        f"{_CONNECTORS}:GitHubConfig",
        "github",
        "GITHUB_TOKEN",
        "token",
    ),
    "stackoverflow": SourceSpec(
        f"{_CONNECTORS}:fetch_questions",
        f"{_CONNECTORS}:StackExchangeConfig",
        "stackoverflow",
        "STACKEXCHANGE_KEY",
        "key",
    ),
    "docs": SourceSpec(
        f"{_CONNECTORS}:fetch_docs",
        f"{_CONNECTORS}:DocsConfig",
        "docs",
    ),
    "blogs": SourceSpec(
        f"{_CONNECTORS}:fetch_feeds",
        f"{_CONNECTORS}:FeedsConfig",
        "blogs",
    ),
}
SOURCES = tuple(REGISTRY)


def source_spec(source: str) -> SourceSpec:
    try:
        return REGISTRY[source]
    except KeyError:
        raise SourceError(f"unknown source {source!r}; known: {', '.join(SOURCES)}") from None


def _save_report(corpus_dir: Path, report: SourceReport) -> SourceReport:
    # Checks downstream need to know which sources were really enabled and how they fared.
    save_report(state_dir(corpus_dir), report)
    return report


def load_reports(corpus_dir: Path) -> dict[str, ReportRecord]:
    """The last report of each source that has run."""
    return {s: r for s in SOURCES if (r := load_report(state_dir(corpus_dir), s))}


def refresh_source(
    source: str,
    config: SourceConfig,
    corpus_dir: Path,
    enabled: bool = True,
    progress: Progress = lambda _: None,
) -> SourceReport:
    return _save_report(corpus_dir, _refresh(source, config, corpus_dir, enabled, progress))


def _refresh(
    source: str,
    config: SourceConfig,
    corpus_dir: Path,
    enabled: bool = True,
    progress: Progress = lambda _: None,
) -> SourceReport:
    """Fetch ``source`` into its raw stage; never raises for the source's own failures.

    Failures (missing token, exhausted quota, an API error mid-pagination) keep every document
    stored before and whatever was fetched before the failure, and leave the cursor alone.
    """
    report = SourceReport(source)
    target = raw_path(corpus_dir, source)
    if not enabled:
        report.status, report.message = "disabled", f"{source} is not in corpus.sources"
        write_jsonl_atomic(target, [])  # a disabled source contributes nothing downstream
        return report
    spec = source_spec(source)
    state = load_state(state_dir(corpus_dir), source)
    tree_key = ""
    if source == "local":
        assert isinstance(config, LocalConfig), "the local source takes a LocalConfig"
        # The local "cursor": a fingerprint of the tree. Unchanged tree, unchanged raw file.
        roots = _local_roots(config)
        tree = tree_fingerprint([r for r in roots if r.expanduser().is_dir()])
        tree_key = f"{tree}:{config.max_document_bytes}"
        if state.get("tree") == tree_key and state.get("raw") == fingerprint(target):
            report.message = "unchanged since the last run"
            report.documents = int(state.get("documents", 0))
            report.skipped.update(state.get("skipped", {}))
            return report
    # Deep: connectors update nested cursors (per page, per repo) in place; a shallow copy
    # would alias them, so a changed cursor compared equal and was never saved.
    new_state = copy.deepcopy(state)
    fetched: dict[str, Document] = {}
    try:
        for doc in spec.connector()(config, new_state, report, progress):
            fetched[doc.id] = doc
            report.bytes += len(doc.text)
    except SourceDisabled as exc:
        report.status, report.message = "disabled", str(exc)
        write_jsonl_atomic(target, [])
        return report
    except SourceError as exc:
        report.status, report.message = ("partial" if fetched else "failed"), str(exc)
        new_state = state  # do not skip past what we failed to fetch
    report.fetched = len(fetched)
    if report.status == "failed" and not spec.incremental:
        # Keep the last good snapshot whole rather than replacing it with nothing.
        report.documents = sum(1 for _ in read_documents(target))
        return report
    merged: dict[str, Document] = {}
    if spec.incremental or report.status != "ok":
        replaced = {(k, v) for k, v, replace in report.replace_scopes if replace}
        merged = {
            d.id: d
            for d in read_documents(target)
            if d.id not in report.gone and not any(d.metadata.get(k) == v for k, v in replaced)
        }
    merged.update(fetched)
    report.documents = write_jsonl_atomic(target, (merged[k].to_dict() for k in sorted(merged)))
    if source == "local" and report.status == "ok":
        new_state = SourceState(
            tree=tree_key,
            raw=fingerprint(target),
            documents=report.documents,
            skipped=dict(report.skipped),
        )
    if new_state != state:
        save_state(state_dir(corpus_dir), source, new_state)
    return report
