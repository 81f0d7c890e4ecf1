"""Blogs: RSS and Atom feeds through feedparser, with the linked article when needed.

The feed is fetched with requests (ETag / Last-Modified as the cursor, so an unchanged feed
costs one 304) and parsed by feedparser from bytes. An entry's full content is used when the
feed carries it; otherwise the article page is fetched and the clean stage extracts it.
Feeds and articles are fetched only where robots.txt allows, on the configured feeds' hosts and
ports, never from a private address the configuration does not name (``connectors.http.Fence``;
redirects included): an article on another host keeps the feed's own text.

Tombstones: a feed lists only its newest entries, so an entry missing from it has either been
deleted or aged out. One missing while it is newer than the oldest entry still listed was
deleted; an older one is checked at its article URL (404 or 410: deleted; otherwise aged out,
kept in the corpus and no longer tracked). Entries of a feed removed from the configuration go
too. A feed that fails, is malformed or answers 304 tombstones nothing.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass, field

import feedparser
import requests

from codegen.corpus.connectors.base import (
    FeedEntry,
    FeedValidators,
    Progress,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
)
from codegen.corpus.connectors.http import Fence, OffLimits, PoliteClient, TooLarge
from codegen.corpus.model import Document, content_hash

SHORT_CONTENT = 500  # characters: below this a feed entry is a teaser, not the article
GONE_STATUSES = (404, 410)


@dataclass
class FeedsConfig:
    feeds: list[str] = field(default_factory=list)
    fetch_articles: bool = True
    timeout_s: float = 30.0
    retries: int = 3
    delay_s: float = 1.0
    user_agent: str = "multiagent-codegen-corpus/0.1"
    # Hosts of the configured feeds allowed to resolve to loopback, private or link-local
    # addresses (an IP literal or localhost in a URL needs no entry).
    private_hosts: list[str] = field(default_factory=list)


def _doc_id(key: str) -> str:
    return content_hash(f"blogs:{key}")[:32]


def _published(entry: feedparser.FeedParserDict) -> int | None:
    parsed = entry.get("published_parsed") or entry.get("updated_parsed")
    return calendar.timegm(parsed) if parsed else None


def _missing_entries(
    known: dict[str, FeedEntry],
    listed: dict[str, FeedEntry],
    client: PoliteClient,
    report: SourceReport,
) -> dict[str, FeedEntry]:
    """Tombstone deleted entries among ``known`` but not ``listed``; return those to keep
    tracking (their article could not be checked this time)."""
    dates = [p for e in listed.values() if (p := e.get("published")) is not None]
    oldest_listed = min(dates) if dates else None
    still_tracked: dict[str, FeedEntry] = {}
    for key, entry in known.items():
        if key in listed:
            continue
        published = entry.get("published")
        if oldest_listed is not None and published is not None and published >= oldest_listed:
            report.gone.add(entry["id"])  # within the feed's window, yet gone from it
            continue
        link = entry.get("link") or ""
        if not link.startswith("http"):
            continue  # nothing to check: aged out, kept
        try:
            status = client.get(link).status
        except OffLimits:
            continue  # never to be checked (another host, robots.txt): aged out, kept
        except (requests.RequestException, TooLarge):
            still_tracked[key] = entry  # cannot tell now; ask again next run
            continue
        if status in GONE_STATUSES:
            report.gone.add(entry["id"])
        elif status >= 500:
            still_tracked[key] = entry
    return still_tracked


def fetch_feeds(
    cfg: FeedsConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not cfg.feeds:
        raise SourceDisabled("no corpus.blogs.feeds configured")
    fence = Fence.around(cfg.feeds, cfg.private_hosts)
    client = PoliteClient(cfg.user_agent, cfg.timeout_s, cfg.retries, cfg.delay_s, fence=fence)
    validators = state.setdefault("feeds", {})
    for gone_feed in [f for f in validators if f not in cfg.feeds]:
        # No longer configured: its entries go, as a repository dropped from github_repos.
        report.gone.update(e["id"] for e in validators.pop(gone_feed).get("entries", {}).values())
    failures = []
    for feed_url in cfg.feeds:
        old = validators.get(feed_url, FeedValidators())
        if refused := client.refusal(feed_url):
            report.skip(f"feed_{refused}")
            continue
        try:
            got = client.get(feed_url, old.get("etag"), old.get("last_modified"))
        except (requests.RequestException, TooLarge) as exc:
            failures.append(f"{feed_url}: {type(exc).__name__}")
            continue
        except OffLimits as exc:  # redirected off its host
            failures.append(f"{feed_url}: redirected where it may not go ({exc})")
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
        listed: dict[str, FeedEntry] = {}
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
                except OffLimits as exc:  # another host, robots.txt: the feed's text stands
                    report.skip(f"article_{exc}")
                except (requests.RequestException, TooLarge):
                    report.skip("article_fetch_failed")
            title = entry.get("title", "") or link
            listed[key] = FeedEntry(id=_doc_id(key), link=link, published=_published(entry))
            if "<html" not in body[:500].lower():
                body = f"<html><body><article><h1>{title}</h1>{body}</article></body></html>"
            count += 1
            yield Document(
                id=listed[key]["id"],
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
        known = old.get("entries", {})
        # A feed parsed only in part (bozo) may list a fraction of its entries: no tombstones.
        kept = known if parsed.bozo else _missing_entries(known, listed, client, report)
        cursor = FeedValidators(entries={**kept, **listed})
        if got.etag:
            cursor["etag"] = got.etag
        if got.last_modified:
            cursor["last_modified"] = got.last_modified
        validators[feed_url] = cursor
        progress(f"blogs: {feed_url}: {count} entries")
    report.requests += client.requests
    if failures:
        raise SourceError("feeds failed: " + "; ".join(failures))
