"""Settings -> the plain config each corpus connector takes (domain code never sees Settings)."""

from __future__ import annotations

import os
from typing import Any

from settings import Settings


def source_config(settings: Settings, source: str) -> Any:
    c = settings.corpus
    common = {"timeout_s": c.http_timeout_s, "retries": c.http_retries}
    if source == "local":
        from corpus.sources import LocalConfig

        return LocalConfig(paths=list(c.local_paths), max_bytes=c.max_document_bytes)
    if source in ("github_repos", "github_issues"):
        from corpus.connectors.github import GitHubConfig

        # The token is read here, at the edge, and never stored in settings or metadata.
        return GitHubConfig(
            **c.github.model_dump(), token=os.environ.get("GITHUB_TOKEN") or None, **common
        )
    if source == "stackoverflow":
        from corpus.connectors.stackexchange import StackExchangeConfig

        return StackExchangeConfig(
            **c.stackoverflow.model_dump(), key=os.environ.get("STACKEXCHANGE_KEY") or None
        )
    if source == "docs":
        from corpus.connectors.docs import DocsConfig

        return DocsConfig(**c.docs.model_dump(), **common)
    if source == "blogs":
        from corpus.connectors.feeds import FeedsConfig

        return FeedsConfig(**c.blogs.model_dump(), **common)
    raise ValueError(f"unknown source {source!r}")
