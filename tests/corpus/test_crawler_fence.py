"""The docs and blogs crawlers stay where they were sent (issue 38, item 5): sitemap entries,
links, feed articles and redirects only on the configured hosts and ports, never from a private
address the configuration does not name, and robots.txt honoured for feeds. A loopback canary
server on another port records every hit it gets: it must get none."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from codegen.corpus.connectors import http
from codegen.corpus.connectors.docs import DocsConfig
from codegen.corpus.connectors.feeds import FeedsConfig
from codegen.corpus.connectors.http import Fence
from codegen.corpus.sources import refresh_source
from codegen.corpus.store import raw_path, read_documents
from codegen.testing.loopback_sources import FakeSite

PAGE = "<html><head><title>{0}</title></head><body><main><h1>{0}</h1></main></body></html>"


def titles(corpus_dir: Path, source: str) -> list[str]:
    return sorted(d.title for d in read_documents(raw_path(corpus_dir, source)))


def test_a_sitemap_never_reaches_another_port_host_or_address(tmp_path: Path) -> None:
    with FakeSite({}) as site, FakeSite({"/secret": ("text/html", PAGE.format("S"))}) as canary:
        port = site.base_url.rsplit(":", 1)[1]
        site.set("/docs/guide.html", "text/html", PAGE.format("Guide"))
        site.set("/docs/moved.html", "text/html", "")
        site.hook = lambda path: (
            (302, {"Location": f"{canary.base_url}/secret"}, b"")
            if path == "/docs/moved.html"
            else None
        )
        listed = [
            f"{site.base_url}/docs/guide.html",
            f"{canary.base_url}/secret",  # loopback, another port
            f"http://localhost:{port}/docs/guide.html",  # the same server under another name
            "http://169.254.169.254/latest/meta-data/",  # the cloud metadata address
            f"{site.base_url}/docs/moved.html",  # redirects to the canary
        ]
        locs = "".join(f"<url><loc>{u}</loc></url>" for u in listed)
        site.set(
            "/sitemap.xml",
            "application/xml",
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{locs}</urlset>",
        )
        report = refresh_source(
            "docs", DocsConfig(urls=[f"{site.base_url}/sitemap.xml"], delay_s=0), tmp_path
        )
        hits = list(canary.requests)
    assert hits == []
    assert titles(tmp_path, "docs") == ["Guide"]
    assert report.skipped == {"off_host": 4}, report.skipped


ARTICLE_FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
<item><title>Here</title><link>{site}/posts/here.html</link><guid>here</guid>
<description>Teaser here.</description></item>
<item><title>Elsewhere</title><link>{canary}/posts/there.html</link><guid>there</guid>
<description>Teaser there.</description></item>
</channel></rss>"""


def test_feeds_honour_robots_txt_and_fetch_articles_only_on_their_host(tmp_path: Path) -> None:
    with FakeSite({}) as site, FakeSite({}) as canary:
        site.set("/robots.txt", "text/plain", "User-agent: *\nDisallow: /private/\n")
        site.set(
            "/feed.xml",
            "application/rss+xml",
            ARTICLE_FEED.format(site=site.base_url, canary=canary.base_url),
        )
        site.set(
            "/private/feed.xml",
            "application/rss+xml",
            ARTICLE_FEED.format(site=site.base_url, canary=canary.base_url),
        )
        site.set("/posts/here.html", "text/html", PAGE.format("Article here"))
        cfg = FeedsConfig(
            feeds=[f"{site.base_url}/feed.xml", f"{site.base_url}/private/feed.xml"], delay_s=0
        )
        report = refresh_source("blogs", cfg, tmp_path)
        paths = [r["path"] for r in site.requests]
        hits = list(canary.requests)
    assert hits == []
    assert "/private/feed.xml" not in paths and "/posts/here.html" in paths
    assert report.skipped["feed_robots_disallowed"] == 1
    assert report.skipped["article_off_host"] == 1
    docs = {d.title: d.text for d in read_documents(raw_path(tmp_path, "blogs"))}
    assert "Article here" in docs["Here"] and "Teaser there." in docs["Elsewhere"]


def test_a_configured_name_that_resolves_to_a_private_address_is_refused_unless_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = {"docs.example.com": "169.254.169.254", "public.example.com": "93.184.216.34"}

    def resolve(host: str, port: int, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]

    # The resolver's answer is the input here (a DNS name pointed at the metadata address).
    monkeypatch.setattr(http.socket, "getaddrinfo", resolve)
    urls = ["https://docs.example.com/sitemap.xml", "https://public.example.com/feed"]
    fence = Fence.around(urls)
    assert fence.refusal("https://docs.example.com/page") == "private_address"
    assert fence.refusal("https://public.example.com/post") is None
    assert fence.refusal("http://public.example.com/post") == "off_host"  # port 80, not 443
    assert fence.refusal("ftp://public.example.com/post") == "not_http"
    assert Fence.around(urls, ["docs.example.com"]).refusal("https://docs.example.com/p") is None
    # An address written into the configuration is listed by that very act.
    assert Fence.around(["http://127.0.0.1:8080/"]).refusal("http://127.0.0.1:8080/x") is None
