"""Blogs: RSS and Atom feeds through feedparser, with the linked article when needed.

The feed is fetched with requests (ETag / Last-Modified as the cursor, so an unchanged feed
costs one 304) and parsed by feedparser from bytes. An entry's full content is used when the
feed carries it; otherwise the article page is fetched and the clean stage extracts it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import feedparser
import requests

from corpus.connectors.base import SourceDisabled, SourceError, SourceReport
from corpus.connectors.http import PoliteClient, TooLarge
from corpus.model import Document, content_hash

SHORT_CONTENT = 500  # characters: below this a feed entry is a teaser, not the article


@dataclass
class FeedsConfig:
    feeds: list[str] = field(default_factory=list)
    fetch_articles: bool = True
    timeout_s: float = 30.0
    retries: int = 3
    delay_s: float = 1.0
    user_agent: str = "multiagent-codegen-corpus/0.1"


def fetch_feeds(
    cfg: FeedsConfig, state: dict[str, Any], report: SourceReport, progress: Any
) -> Iterator[Document]:
    if not cfg.feeds:
        raise SourceDisabled("no corpus.blogs.feeds configured")
    client = PoliteClient(cfg.user_agent, cfg.timeout_s, cfg.retries, cfg.delay_s)
    validators: dict[str, dict[str, str]] = state.setdefault("feeds", {})
    failures = []
    for feed_url in cfg.feeds:
        old = validators.get(feed_url, {})
        try:
            got = client.get(feed_url, old.get("etag"), old.get("last_modified"))
        except (requests.RequestException, TooLarge) as exc:
            failures.append(f"{feed_url}: {type(exc).__name__}")
            continue
        if got.status == 304:
            report.skip("feed_not_modified")
            continue
        if got.status != 200:
            failures.append(f"{feed_url}: HTTP {got.status}")
            continue
        parsed = feedparser.parse(got.body)
        if parsed.bozo and not parsed.entries:
            report.skip("malformed_feed")
            continue
        count = 0
        for entry in parsed.entries:
            link = entry.get("link") or ""
            key = entry.get("id") or link or entry.get("title", "")
            if not key:
                report.skip("entry_without_id")
                continue
            body = ""
            if entry.get("content"):
                body = max((c.get("value", "") for c in entry.content), key=len)
            body = body or entry.get("summary", "")
            if cfg.fetch_articles and len(body) < SHORT_CONTENT and link.startswith("http"):
                try:
                    page = client.get(link)
                    if page.status == 200 and "html" in page.content_type:
                        body = page.body.decode("utf-8", "replace")
                except (requests.RequestException, TooLarge):
                    report.skip("article_fetch_failed")
            title = entry.get("title", "") or link
            if "<html" not in body[:500].lower():
                body = f"<html><body><article><h1>{title}</h1>{body}</article></body></html>"
            count += 1
            yield Document(
                id=content_hash(f"blogs:{key}")[:32],
                source="blogs",
                uri=link or feed_url,
                title=title,
                text=body,
                language="html",
                metadata={
                    "feed": feed_url,
                    "author": entry.get("author"),
                    "tags": [t.get("term") for t in entry.get("tags", []) if t.get("term")],
                    "updated_at": entry.get("updated") or entry.get("published"),
                },
            )
        validators[feed_url] = {
            k: v for k, v in (("etag", got.etag), ("last_modified", got.last_modified)) if v
        }
        progress(f"blogs: {feed_url}: {count} entries")
    report.requests += client.requests
    if failures:
        raise SourceError("feeds failed: " + "; ".join(failures))
