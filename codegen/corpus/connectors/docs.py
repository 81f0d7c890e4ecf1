"""Documentation sites: pages from sitemap.xml, or a crawl under a URL prefix.

robots.txt is respected, pages (sitemap entries, links, redirect targets) are fetched only on
the configured URLs' hosts and ports and never from a private address the configuration does
not name (``connectors.http.Fence``), requests to one host are spaced by ``delay_s``, pages
are capped in size, and each page's ETag / Last-Modified is kept as the cursor: an unchanged
page answers 304 and its stored copy stands. Raw HTML is stored; the clean stage extracts the main
content (code blocks whole).

Tombstones: a stored page that now answers 404 or 410 is gone; so is one no longer reached by
a complete crawl of its start URL (every page answered, ``max_pages`` not hit), or no longer
in its sitemap, and every page of a start URL removed from the configuration. A page that
failed transiently (a timeout, a 5xx) is not gone, and makes that crawl incomplete.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit
from xml.etree.ElementTree import ParseError

import requests
from bs4 import BeautifulSoup
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from codegen.corpus.connectors.base import (
    PageValidators,
    Progress,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
)
from codegen.corpus.connectors.http import Fence, OffLimits, PoliteClient, TooLarge
from codegen.corpus.model import Document, content_hash

_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass
class DocsConfig:
    urls: list[str] = field(default_factory=list)
    max_pages: int = 500
    delay_s: float = 1.0
    user_agent: str = "multiagent-codegen-corpus/0.1"
    timeout_s: float = 30.0
    retries: int = 3
    # Hosts of the configured URLs allowed to resolve to loopback, private or link-local
    # addresses (an IP literal or localhost in a URL needs no entry).
    private_hosts: list[str] = field(default_factory=list)


def _sitemap_urls(body: bytes, report: SourceReport) -> list[str]:
    try:
        root = fromstring(body)
    except (ParseError, DefusedXmlException):
        report.skip("malformed_sitemap")
        return []
    # <urlset><url><loc> for pages; <sitemapindex><sitemap><loc> for nested sitemaps.
    return [
        (loc.text or "").strip()
        for loc in root.iter(f"{_SITEMAP_NS}loc")
        if (loc.text or "").strip()
    ] or [(loc.text or "").strip() for loc in root.iter("loc") if (loc.text or "").strip()]


def _links(html: bytes, base: str) -> list[str]:
    try:
        soup = BeautifulSoup(html, "lxml")
    except Exception:  # a page we cannot parse has no links to follow
        return []
    out = []
    for a in soup.find_all("a", href=True):
        url, _ = urldefrag(urljoin(base, a["href"]))
        out.append(url)
    return out


def _title(html: bytes) -> str:
    try:
        soup = BeautifulSoup(html, "lxml")
        if soup.title and soup.title.string:
            return " ".join(soup.title.string.split())
        h1 = soup.find("h1")
        return " ".join(h1.get_text(" ").split()) if h1 else ""
    except Exception:
        return ""


GONE_STATUSES = (404, 410)


def _doc_id(url: str) -> str:
    return content_hash(f"docs:{url}")[:32]


def _tombstone(url: str, validators: dict[str, PageValidators], report: SourceReport) -> None:
    report.gone.add(_doc_id(url))
    validators.pop(url, None)


def _first_pages(
    client: PoliteClient, start: str, report: SourceReport
) -> tuple[deque[str], str] | None:
    """The pages a crawl from ``start`` begins with, and the prefix its links must keep
    (none for a sitemap, which names its own pages); None when ``start`` is off limits."""
    try:
        if not start.endswith(".xml"):
            return deque([start]), start.rsplit("/", 1)[0] + "/"
        if refused := client.refusal(start):
            report.skip(refused)
            return None
        got = client.get(start)
        if got.status != 200:
            raise SourceError(f"sitemap {start}: HTTP {got.status}")
        return deque(_sitemap_urls(got.body, report)), ""
    except requests.RequestException as exc:
        raise SourceError(f"docs site {start} unreachable: {exc}") from exc
    except OffLimits as exc:  # the sitemap redirected off its host
        raise SourceError(f"sitemap {start}: redirected where it may not go ({exc})") from exc


def fetch_docs(
    cfg: DocsConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not cfg.urls:
        raise SourceDisabled("no corpus.docs.urls configured")
    fence = Fence.around(cfg.urls, cfg.private_hosts)
    client = PoliteClient(cfg.user_agent, cfg.timeout_s, cfg.retries, cfg.delay_s, fence=fence)
    validators = state.setdefault("pages", {})
    for url in [u for u, v in validators.items() if v.get("start") not in (None, *cfg.urls)]:
        _tombstone(url, validators, report)  # its start URL is no longer configured
    for start in cfg.urls:
        first = _first_pages(client, start, report)
        if first is None:
            continue
        queue, prefix = first
        seen: set[str] = set()
        present: set[str] = set()  # answered 200 or 304: still there
        complete = True
        while queue and len(seen) < cfg.max_pages:
            url = queue.popleft()
            if url in seen or (prefix and not url.startswith(prefix)):
                continue
            seen.add(url)
            if urlsplit(url).scheme not in ("http", "https"):
                continue
            # Before anything goes to its host: a sitemap may list any host, port or address.
            if refused := client.refusal(url):
                report.skip(refused)
                continue
            old = validators.get(url, PageValidators())
            try:
                got = client.get(url, old.get("etag"), old.get("last_modified"))
            except TooLarge:
                report.skip("oversized")
                present.add(url)  # there, just not indexable now: the stored copy stands
                continue
            except OffLimits as exc:  # redirected off the configured hosts: not this site's
                report.skip(str(exc))
                continue
            except requests.RequestException as exc:
                report.skip("fetch_error")
                progress(f"docs: {url}: {type(exc).__name__}")
                complete = False
                continue
            if got.status == 304:
                report.skip("not_modified")
                present.add(url)
                validators.setdefault(url, PageValidators())["start"] = start
                # The stored copy stands; keep crawling through the links it had.
                queue.extend(u for u in old.get("links", []) if u not in seen)
                continue
            if got.status != 200:
                report.skip(f"http_{got.status}")
                if got.status in GONE_STATUSES:
                    if url in validators:
                        _tombstone(url, validators, report)
                else:
                    complete = False  # a 5xx or a 403 says nothing about the page being gone
                continue
            if "html" not in got.content_type:
                report.skip("not_html")
                continue
            links = [u for u in _links(got.body, got.url) if u.startswith(prefix)] if prefix else []
            queue.extend(u for u in links if u not in seen)
            page = PageValidators(links=sorted(set(links)), start=start)
            if got.etag:
                page["etag"] = got.etag
            if got.last_modified:
                page["last_modified"] = got.last_modified
            validators[url] = page
            present.add(url)
            text = got.body.decode("utf-8", "replace")
            yield Document(
                id=_doc_id(url),
                source="docs",
                uri=url,
                title=_title(got.body) or url,
                text=text,
                language="html",
                metadata={"site": urlsplit(url).netloc, "path": urlsplit(url).path},
            )
        if queue and len(seen) >= cfg.max_pages:
            complete = False  # cut short: unvisited pages may well still be there
        if complete:
            for url in [u for u, v in validators.items() if v.get("start") == start]:
                if url not in present:
                    _tombstone(url, validators, report)
        progress(f"docs: {start}: {len(seen)} pages visited")
    report.requests += client.requests
