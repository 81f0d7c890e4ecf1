"""The corpus connectors: one module per kind of source, each fetching documents and advancing
its cursor, behind this face.

``base`` holds what every connector shares (its report, errors and stored cursor), ``local``
the files on this machine; ``github``, ``stackexchange``, ``docs`` and ``feeds`` fetch remote
sources, and ``http`` is their polite, fenced HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from codegen.corpus.connectors.base import (
    Progress,
    ReportRecord,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
    load_report,
    load_state,
    save_report,
    save_state,
)
from codegen.corpus.connectors.local import (
    SKIPPED_DIRS,
    LocalScanStats,
    iter_local_documents,
    stdlib_path,
    tree_fingerprint,
)

if TYPE_CHECKING:
    from codegen.corpus.connectors.docs import DocsConfig, fetch_docs
    from codegen.corpus.connectors.feeds import FeedsConfig, fetch_feeds
    from codegen.corpus.connectors.github import GitHubConfig, fetch_issues, fetch_repos
    from codegen.corpus.connectors.stackexchange import (
        Answer,
        Question,
        StackExchangeConfig,
        fetch_questions,
    )

__all__ = [
    "SKIPPED_DIRS",
    "Answer",
    "DocsConfig",
    "FeedsConfig",
    "GitHubConfig",
    "LocalScanStats",
    "Progress",
    "Question",
    "ReportRecord",
    "SourceDisabled",
    "SourceError",
    "SourceReport",
    "SourceState",
    "StackExchangeConfig",
    "fetch_docs",
    "fetch_feeds",
    "fetch_issues",
    "fetch_questions",
    "fetch_repos",
    "iter_local_documents",
    "load_report",
    "load_state",
    "save_report",
    "save_state",
    "stdlib_path",
    "tree_fingerprint",
]

# Loaded on first use (PEP 562): the remote connectors import their SDKs (requests, PyGithub,
# stackapi, feedparser, bs4, defusedxml), which the Dagster definitions and a run that uses
# only local sources must not pay for (tests/test_wiring.py).
_REMOTE = {
    "DocsConfig": "codegen.corpus.connectors.docs",
    "fetch_docs": "codegen.corpus.connectors.docs",
    "FeedsConfig": "codegen.corpus.connectors.feeds",
    "fetch_feeds": "codegen.corpus.connectors.feeds",
    "GitHubConfig": "codegen.corpus.connectors.github",
    "fetch_issues": "codegen.corpus.connectors.github",
    "fetch_repos": "codegen.corpus.connectors.github",
    "Answer": "codegen.corpus.connectors.stackexchange",
    "Question": "codegen.corpus.connectors.stackexchange",
    "StackExchangeConfig": "codegen.corpus.connectors.stackexchange",
    "fetch_questions": "codegen.corpus.connectors.stackexchange",
}


def __getattr__(name: str) -> object:
    if name not in _REMOTE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached here: a test that patches the connector's module is seen by the registry.
    return getattr(importlib.import_module(_REMOTE[name]), name)
