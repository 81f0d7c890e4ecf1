"""Docs pages and feed entries deleted upstream leave the corpus and the index on the next run."""

from __future__ import annotations

from pathlib import Path

from codegen.corpus.chunk import Budget
from codegen.corpus.connectors.docs import DocsConfig
from codegen.corpus.connectors.feeds import FeedsConfig
from codegen.corpus.dedupe import DedupeParams
from codegen.corpus.model import Chunk
from codegen.corpus.pipeline import chunk_stage, clean_stage, dedupe_stage
from codegen.corpus.sources import refresh_source
from codegen.corpus.store import chunks_path, raw_path, read_documents, read_jsonl
from codegen.retrieval.embedders import MiniLMEmbedder
from codegen.retrieval.index import sync_index
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.testing.loopback_sources import FakeSite

PAGE = """<html><head><title>{title}</title></head><body><main><h1>{title}</h1>
<p>{title} explained at length, with an example of its use in real code.</p>
<pre class="highlight python">def {fn}(items: list[int]) -> int:\n    total = 0\n
    for item in items:\n        total += item * {n}\n    return total\n</pre>{links}</main>
</body></html>"""


def page(title: str, n: int, links: str = "") -> tuple[str, str]:
    fn = title.lower().replace(" ", "_")
    return "text/html; charset=utf-8", PAGE.format(title=title, fn=fn, n=n, links=links)


def titles(corpus_dir: Path, source: str) -> list[str]:
    return sorted(d.title for d in read_documents(raw_path(corpus_dir, source)))


def links(*names: str) -> str:
    return " ".join(f'<a href="{n}.html">{n}</a>' for n in names)


def test_docs_pages_gone_upstream_are_removed(tmp_path: Path) -> None:
    site = FakeSite(
        {
            "/docs/index.html": page("Index", 1, links("alpha", "beta", "gamma")),
            "/docs/alpha.html": page("Alpha", 2),
            "/docs/beta.html": page("Beta", 3),
            "/docs/gamma.html": page("Gamma", 4),
        }
    )
    with site as s:
        cfg = DocsConfig(urls=[f"{s.base_url}/docs/index.html"], delay_s=0)
        assert refresh_source("docs", cfg, tmp_path).status == "ok"
        assert titles(tmp_path, "docs") == ["Alpha", "Beta", "Gamma", "Index"]

        del s.pages["/docs/alpha.html"]  # deleted: now a 404
        s.set("/docs/index.html", *page("Index", 1, links("alpha", "beta")))  # gamma unlinked
        report = refresh_source("docs", cfg, tmp_path)
        assert report.status == "ok" and report.as_metadata()["removed_upstream"] == 2
        assert titles(tmp_path, "docs") == ["Beta", "Index"]

        # A transient failure is not a deletion, and an incomplete crawl removes nothing.
        s.hook = lambda path: (503, {}, b"busy") if path == "/docs/beta.html" else None
        assert refresh_source("docs", cfg, tmp_path).documents == 2
        s.hook = None
        del s.pages["/docs/index.html"]
        refresh_source("docs", DocsConfig(urls=cfg.urls, delay_s=0, max_pages=0), tmp_path)
        assert titles(tmp_path, "docs") == ["Beta", "Index"]

        # A start URL dropped from the configuration takes its pages with it.
        s.set("/other/start.html", *page("Other", 5))
        refresh_source("docs", DocsConfig(urls=[f"{s.base_url}/other/start.html"]), tmp_path)
        assert titles(tmp_path, "docs") == ["Other"]


def test_docs_page_dropped_from_the_sitemap_is_removed(tmp_path: Path) -> None:
    def sitemap(base: str, *paths: str) -> str:
        locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
        return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'

    with FakeSite({"/a.html": page("A", 1), "/b.html": page("B", 2)}) as s:
        s.set("/sitemap.xml", "application/xml", sitemap(s.base_url, "/a.html", "/b.html"))
        cfg = DocsConfig(urls=[f"{s.base_url}/sitemap.xml"], delay_s=0)
        refresh_source("docs", cfg, tmp_path)
        s.set("/sitemap.xml", "application/xml", sitemap(s.base_url, "/b.html"))
        refresh_source("docs", cfg, tmp_path)
        assert titles(tmp_path, "docs") == ["B"]


def item(guid: str, day: int, base: str) -> str:
    body = f"&lt;p&gt;{'Long enough to be the whole article. ' * 20}&lt;/p&gt;"
    return (
        f"<item><title>Post {guid}</title><link>{base}/posts/{guid}.html</link>"
        f"<guid>{guid}</guid><description>{body}</description>"
        f"<pubDate>{day:02d} Jan 2024 00:00:00 GMT</pubDate></item>"
    )


def rss(base: str, *posts: tuple[str, int]) -> str:
    items = "".join(item(g, d, base) for g, d in posts)
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>B</title>{items}</channel></rss>'
    )


def test_feed_entries_deleted_upstream_are_removed_and_aged_out_ones_kept(
    tmp_path: Path,
) -> None:
    with FakeSite({}) as s:
        for guid in ("oldest", "older", "old", "mid", "new"):
            s.set(f"/posts/{guid}.html", *page(f"Post {guid}", 1))
        posts = [("oldest", 1), ("older", 2), ("old", 3), ("mid", 4), ("new", 5)]
        s.set("/feed.xml", "application/rss+xml", rss(s.base_url, *posts))
        cfg = FeedsConfig(feeds=[f"{s.base_url}/feed.xml"], delay_s=0)
        refresh_source("blogs", cfg, tmp_path)
        assert len(titles(tmp_path, "blogs")) == 5

        # "mid" vanished inside the feed's window (newer than "old", still listed): deleted.
        # "oldest" and "older" fell off the end; "older"'s article is gone (404): deleted;
        # "oldest"'s still answers: aged out, kept.
        del s.pages["/posts/older.html"]
        now = [("old", 3), ("new", 5), ("newest", 6)]
        s.set("/feed.xml", "application/rss+xml", rss(s.base_url, *now))
        report = refresh_source("blogs", cfg, tmp_path)
        assert report.status == "ok" and report.as_metadata()["removed_upstream"] == 2
        kept = ["Post new", "Post newest", "Post old", "Post oldest"]
        assert titles(tmp_path, "blogs") == kept

        # A broken feed says nothing about its entries.
        s.set("/feed.xml", "application/rss+xml", "<rss><channel><item><title>x")
        refresh_source("blogs", cfg, tmp_path)
        assert titles(tmp_path, "blogs") == kept

        # A feed dropped from the configuration takes its tracked entries with it.
        s.set("/other.xml", "application/rss+xml", rss(s.base_url, ("solo", 9)))
        refresh_source("blogs", FeedsConfig(feeds=[f"{s.base_url}/other.xml"]), tmp_path)
        assert titles(tmp_path, "blogs") == ["Post oldest", "Post solo"]  # untracked: kept


def test_a_deleted_page_leaves_the_index_on_the_next_run(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "corpus"
    store = LanceDBStore(uri=str(tmp_path / "index"))
    embedder = MiniLMEmbedder()

    def build() -> dict[str, set[str]]:
        clean_stage(corpus_dir)
        dedupe_stage(corpus_dir, DedupeParams())
        chunk_stage(corpus_dir, Budget())
        chunks = [Chunk.from_dict(r) for r in read_jsonl(chunks_path(corpus_dir))]
        sync_index(chunks, store, embedder)
        by_page: dict[str, set[str]] = {}
        for c in chunks:
            by_page.setdefault(c.uri.rsplit("/", 1)[1], set()).add(c.id)
        return by_page

    site = {"/d/index.html": page("Index", 1, links("keep", "drop"))}
    site |= {"/d/keep.html": page("Keep", 2), "/d/drop.html": page("Drop", 3)}
    with FakeSite(site) as s:
        cfg = DocsConfig(urls=[f"{s.base_url}/d/index.html"], delay_s=0)
        refresh_source("docs", cfg, corpus_dir)
        first = build()
        assert set(first) == {"index.html", "keep.html", "drop.html"}
        assert first["drop.html"] <= store.ids()
        del s.pages["/d/drop.html"]
        refresh_source("docs", cfg, corpus_dir)
        second = build()
    assert set(second) == {"index.html", "keep.html"}
    assert not first["drop.html"] & store.ids()  # deleted from the index
    assert store.ids() == set().union(*second.values())
