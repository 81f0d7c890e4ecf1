"""Source connectors against loopback servers that speak the real wire protocols."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from codegen.corpus.connectors.docs import DocsConfig
from codegen.corpus.connectors.feeds import FeedsConfig
from codegen.corpus.connectors.github import GitHubConfig
from codegen.corpus.connectors.stackexchange import StackExchangeConfig
from codegen.corpus.sources import refresh_source
from codegen.corpus.store import raw_path, read_documents, state_dir
from codegen.testing.loopback_sources import (
    FakeGitHub,
    FakeRepo,
    FakeSite,
    FakeStackExchange,
    issue,
)


def stored(corpus_dir: Path, source: str) -> dict[str, object]:
    return {d.uri: d for d in read_documents(raw_path(corpus_dir, source))}


def widgets() -> FakeRepo:
    return FakeRepo(
        "acme/widgets",
        {
            "pkg/core.py": b'def spin(n: int) -> int:\n    """Spin n times."""\n    return n\n',
            "README.md": b"# Widgets\n\nSpin things.\n",
            "pkg/tests/test_core.py": b"def test_spin():\n    assert True\n",
            "logo.png": b"\x89PNG\r\n",
            "pkg/big.py": b"x = 1\n" * 200_000,
        },
        issues=[
            issue(
                1,
                "Crash on spin(0)",
                "Traceback ...",
                "2024-01-01T00:00:00Z",
                state="closed",
                state_reason="completed",
                comments=1,
            ),
            issue(2, "Add reverse spin", "Please.", "2024-01-02T00:00:00Z", labels=["feature"]),
            issue(3, "Fix spin(0)", "Closes #1", "2024-01-03T00:00:00Z", pull_request={"url": ""}),
        ],
        comments={
            1: [{"id": 9, "body": "Fixed in 1.2 by guarding n == 0.", "user": {"login": "dev"}}]
        },
    )


def gh_config(server: FakeGitHub, **kw: object) -> GitHubConfig:
    return GitHubConfig(
        api_url=server.base_url, repos=["acme/widgets"], issue_repos=["acme/widgets"], **kw
    )


def test_github_repos_filters_and_skips_unchanged_repository(tmp_path: Path) -> None:
    with FakeGitHub([widgets()]) as gh:
        report = refresh_source("github_repos", gh_config(gh), tmp_path)
        assert report.status == "ok", report.message
        assert "GITHUB_TOKEN is not set" in report.message
        docs = stored(tmp_path, "github_repos")
        paths = sorted(d.metadata["path"] for d in docs.values())
        assert paths == ["README.md", "pkg/core.py"]  # tests excluded, png and oversized dropped
        assert report.skipped == {"oversized": 1}
        core = next(d for d in docs.values() if d.metadata["path"] == "pkg/core.py")
        assert core.metadata["stars"] == 10 and core.licence == "MIT"
        assert core.uri == "https://github.com/acme/widgets/blob/" + "a" * 40 + "/pkg/core.py"
        # Same commit SHA: the archive is not downloaded again and nothing is lost.
        again = refresh_source("github_repos", gh_config(gh), tmp_path)
        assert gh.archive_downloads == 1 and again.documents == 2
        # New commit with a deleted file: that repository's files are replaced.
        gh.repos["acme/widgets"].sha = "b" * 40
        del gh.repos["acme/widgets"].files["README.md"]
        refresh_source("github_repos", gh_config(gh), tmp_path)
        assert sorted(d.metadata["path"] for d in stored(tmp_path, "github_repos").values()) == [
            "pkg/core.py"
        ]
        # A repository removed from the configuration leaves the corpus.
        refresh_source(
            "github_repos", GitHubConfig(api_url=gh.base_url, repos=["acme/none"]), tmp_path
        )
        assert stored(tmp_path, "github_repos") == {}


def test_github_token_is_sent_and_never_stored(tmp_path: Path) -> None:
    token = "ghp_" + "T0kenT0kenT0kenT0kenT0kenT0kenT0ken0"
    with FakeGitHub([widgets()]) as gh:
        refresh_source("github_repos", gh_config(gh, token=token), tmp_path)
        assert gh.requests[0]["headers"]["authorization"] == f"token {token}"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token not in path.read_text(errors="replace")


def test_github_issues_paginate_and_resume_from_since(tmp_path: Path) -> None:
    with FakeGitHub([widgets()], per_page=2) as gh:
        report = refresh_source("github_issues", gh_config(gh), tmp_path)
        assert report.status == "ok" and report.fetched == 3
        assert any(r["query"].get("page") == "2" for r in gh.requests)  # followed the Link
        docs = stored(tmp_path, "github_issues")
        crash = docs["https://github.com/acme/widgets/issues/1"]
        assert crash.language == "issue"
        assert "## Resolution" in crash.text and "guarding n == 0" in crash.text
        assert docs["https://github.com/acme/widgets/issues/3"].metadata["pull_request"] is True
        cursor = json.loads((state_dir(tmp_path) / "github_issues.json").read_text())
        assert cursor["since"]["acme/widgets"].startswith("2024-01-03")
        # Next run asks only for what changed since.
        gh.repos["acme/widgets"].issues.append(issue(4, "Docs typo", "teh", "2024-02-01T00:00:00Z"))
        gh.requests.clear()
        report = refresh_source("github_issues", gh_config(gh), tmp_path)
        listing = [r for r in gh.requests if r["path"].endswith("/issues")]
        assert listing[0]["query"]["since"].startswith("2024-01-03")
        assert report.documents == 4


def test_github_rate_limit_and_mid_pagination_error_keep_stored_data(tmp_path: Path) -> None:
    with FakeGitHub([widgets()], per_page=1) as gh:
        refresh_source("github_issues", gh_config(gh), tmp_path)
        before = stored(tmp_path, "github_issues")
        cursor_before = (state_dir(tmp_path) / "github_issues.json").read_text()
        gh.repos["acme/widgets"].issues.append(issue(4, "New", "x", "2024-02-01T00:00:00Z"))
        gh.repos["acme/widgets"].issues.append(issue(5, "Newer", "y", "2024-02-02T00:00:00Z"))
        gh.fail_issue_page = 3  # the API fails in the middle of pagination (#3, #4, boom)
        report = refresh_source("github_issues", gh_config(gh, retries=0), tmp_path)
        assert report.status == "partial" and "500" in report.message
        after = stored(tmp_path, "github_issues")
        assert set(before) < set(after)  # nothing lost, page 1 kept
        assert (state_dir(tmp_path) / "github_issues.json").read_text() == cursor_before

        gh.fail_issue_page = None
        gh.rate_remaining = 0  # resets in 2030: far beyond the maximum wait
        report = refresh_source("github_issues", gh_config(gh), tmp_path)
        assert report.status == "failed" and report.rate_limit_waits == 0
        assert "rate limit exhausted" in report.message and "GITHUB_TOKEN" in report.message
        assert "2030-03-17T17:46:40+00:00" in report.message
        assert "max_rate_limit_wait_s (900 s)" in report.message
        assert stored(tmp_path, "github_issues").keys() == after.keys()
        assert (state_dir(tmp_path) / "github_issues.json").read_text() == cursor_before


@pytest.mark.parametrize("status", [403, 429])
def test_github_spent_rate_limit_is_waited_out_mid_pagination(tmp_path: Path, status: int) -> None:
    """The quota runs out between pages; the source waits for the reset and finishes."""
    with FakeGitHub([widgets()], per_page=1) as gh:
        gh.rate_limited_status = status
        gh.rate_remaining = 3  # repo, page 1, comments of #1; page 2 is refused
        gh.rate_reset = int(time.time()) + 2  # a real reset, a second or two away
        report = refresh_source("github_issues", gh_config(gh), tmp_path)
        assert report.status == "ok", report.message
        assert gh.rate_limited_responses >= 1 and report.rate_limit_waits >= 1
        assert 0 < report.rate_limit_waited_s <= 3
        numbers = sorted(d.metadata["number"] for d in stored(tmp_path, "github_issues").values())
        assert numbers == [1, 2, 3]  # every page, none twice
        cursor = json.loads((state_dir(tmp_path) / "github_issues.json").read_text())
        assert cursor["since"]["acme/widgets"].startswith("2024-01-03")


def test_github_repos_wait_for_the_reset_and_a_403_without_a_spent_quota_is_not_retried(
    tmp_path: Path,
) -> None:
    with FakeGitHub([widgets()]) as gh:
        gh.rate_remaining = 0
        gh.rate_reset = int(time.time()) + 1
        report = refresh_source("github_repos", gh_config(gh), tmp_path)
        assert report.status == "ok" and report.rate_limit_waits == 1, report.message
        assert len(stored(tmp_path, "github_repos")) == 2
        # A secondary rate limit names its wait (Retry-After): waited out too.
        secondary = [(403, {"Retry-After": "1"}, b'{"message": "secondary rate limit"}')]
        gh.hook = lambda path: secondary.pop() if secondary and "/branches/" in path else None
        gh.repos["acme/widgets"].sha = "d" * 40
        report = refresh_source("github_repos", gh_config(gh), tmp_path)
        assert report.status == "ok" and report.rate_limit_waits == 1, report.message
        # A 403 that is not a rate limit (no access) fails at once with its own message.
        forbidden = (403, {"Content-Type": "application/json"}, b'{"message": "Not accessible"}')
        gh.hook = lambda path: forbidden if path.endswith("/branches/main") else None
        gh.repos["acme/widgets"].sha = "c" * 40
        seen = len(gh.requests)
        report = refresh_source("github_repos", gh_config(gh), tmp_path)
        assert report.status == "failed" and "403" in report.message
        assert "Not accessible" in report.message
        assert len(gh.requests) - seen == 2  # repo, branch: no retry of the 403
        assert len(stored(tmp_path, "github_repos")) == 2  # nothing lost


def test_github_source_without_repos_is_disabled(tmp_path: Path) -> None:
    report = refresh_source("github_repos", GitHubConfig(), tmp_path)
    assert report.status == "disabled" and "corpus.github.repos" in report.message


def se_fixture() -> FakeStackExchange:
    qs = [
        {
            "question_id": i,
            "title": f"How do I reverse a list {i} &amp; keep it?",
            "body": f"<p>I have <code>xs</code> number {i}.</p>",
            "tags": ["python", "list"],
            "score": i,
            "accepted_answer_id": 100 + i if i != 3 else None,
            "last_activity_date": 1_700_000_000 + i,
            "creation_date": 1_700_000_000,
            "link": f"https://stackoverflow.com/q/{i}",
        }
        for i in range(1, 6)
    ]
    answers = {
        100 + i: {
            "answer_id": 100 + i,
            "question_id": i,
            "score": 3,
            "body": "<p>Slice it:</p>"
            f"<pre><code>def rev(xs):\n\n    return xs[::-{i}]\n</code></pre>",
        }
        for i in range(1, 6)
    }
    return FakeStackExchange(qs, answers)


def test_stackoverflow_questions_with_accepted_answers(tmp_path: Path) -> None:
    with se_fixture() as se:
        cfg = StackExchangeConfig(api_url=se.base_url, tags=["python"])
        report = refresh_source("stackoverflow", cfg, tmp_path)
        assert report.status == "ok" and report.fetched == 4
        assert report.skipped == {"no_accepted_answer": 1}
        assert (
            sum(1 for r in se.requests if r["path"].startswith("/2.3/questions")) == 3
        )  # has_more
        doc = stored(tmp_path, "stackoverflow")["https://stackoverflow.com/q/2"]
        assert doc.title == "How do I reverse a list 2 & keep it?"
        assert "## Accepted answer" in doc.text
        assert "```\ndef rev(xs):\n\n    return xs[::-2]\n```" in doc.text  # code block whole
        assert doc.metadata["accepted"] is True and doc.metadata["score"] == 5
        se.requests.clear()
        refresh_source("stackoverflow", cfg, tmp_path)
        q = next(r for r in se.requests if r["path"].startswith("/2.3/questions"))
        assert q["query"]["fromdate"] == str(1_700_000_006)


def test_stackoverflow_quota_exhausted_is_a_clear_message(tmp_path: Path) -> None:
    with se_fixture() as se:
        cfg = StackExchangeConfig(api_url=se.base_url, tags=["python"])
        refresh_source("stackoverflow", cfg, tmp_path)
        se.quota_remaining = 0
        report = refresh_source("stackoverflow", cfg, tmp_path)
        assert report.status == "failed"
        assert "quota exhausted" in report.message and "STACKEXCHANGE_KEY" in report.message
        assert report.documents == 4  # stored data intact


POSTS = """<?xml version="1.0" encoding="utf-8"?>
<posts>
  <row Id="1" PostTypeId="1" AcceptedAnswerId="2" Score="5" Title="Sort a dict by value?"
       Tags="|python|dictionary|" Body="&lt;p&gt;How?&lt;/p&gt;"
       CreationDate="2020-01-01T00:00:00" />
  <row Id="2" PostTypeId="2" ParentId="1" Score="9"
       Body="&lt;pre&gt;&lt;code&gt;sorted(d.items(), key=lambda kv: kv[1])&lt;/code&gt;"
       />
  <row Id="3" PostTypeId="1" Score="1" Title="Unanswered" Tags="&lt;python&gt;" Body="x" />
  <row Id="4" PostTypeId="1" AcceptedAnswerId="5" Title="Java thing" Tags="|java|" Body="y" />
  <row Id="5" PostTypeId="2" ParentId="4" Body="z" />
</posts>
"""


def test_posts_xml_dump_is_streamed(tmp_path: Path) -> None:
    dump = tmp_path / "Posts.xml"
    dump.write_text(POSTS)
    report = refresh_source(
        "stackoverflow", StackExchangeConfig(posts_xml=str(dump), tags=[]), tmp_path / "c"
    )
    assert report.status == "ok" and report.fetched == 2
    report = refresh_source(
        "stackoverflow",
        StackExchangeConfig(posts_xml=str(dump), tags=["python"], api_url="http://127.0.0.1:9"),
        tmp_path / "d",
    )
    # The dump part worked; the API part (nothing listening) failed: partial, dump kept.
    assert report.status == "partial" and report.fetched == 1
    doc = next(iter(stored(tmp_path / "d", "stackoverflow").values()))
    assert "sorted(d.items(), key=lambda kv: kv[1])" in doc.text and doc.metadata["score"] == 14


@pytest.mark.parametrize(
    "bad",
    [
        POSTS[: len(POSTS) // 2],  # truncated
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>'
        "<posts>&b;</posts>",  # entity expansion (billion laughs) is refused
    ],
)
def test_malformed_or_hostile_posts_xml_fails_cleanly(tmp_path: Path, bad: str) -> None:
    dump = tmp_path / "Posts.xml"
    dump.write_text(bad)
    report = refresh_source("stackoverflow", StackExchangeConfig(posts_xml=str(dump)), tmp_path)
    assert report.status in ("failed", "partial")
    assert "Posts.xml" in report.message


PAGE = """<html><head><title>{title}</title></head><body>
<nav class="menu"><a href="/docs/">Home</a></nav>
<main><h1>{title}</h1><p>Explains {title}.</p>
<pre class="highlight python">def {fn}():\n\n    return "{title}"\n</pre>{links}</main>
<footer>footer text</footer></body></html>"""


def site() -> FakeSite:
    def page(title: str, fn: str, links: str = "") -> tuple[str, str]:
        return "text/html; charset=utf-8", PAGE.format(title=title, fn=fn, links=links)

    return FakeSite(
        {
            "/robots.txt": ("text/plain", "User-agent: *\nDisallow: /docs/private/\n"),
            "/docs/index.html": page(
                "Index",
                "index",
                '<a href="guide.html">g</a> <a href="private/secret.html">p</a>'
                ' <a href="/elsewhere.html">e</a> <a href="data.bin">d</a>',
            ),
            "/docs/guide.html": page("Guide", "guide", '<a href="index.html#top">i</a>'),
            "/docs/private/secret.html": page("Private", "private"),
            "/docs/data.bin": ("application/octet-stream", b"\x00\x01"),
            "/elsewhere.html": page("Elsewhere", "elsewhere"),
        }
    )


def test_docs_crawl_respects_prefix_robots_and_etags(tmp_path: Path) -> None:
    with site() as s:
        cfg = DocsConfig(urls=[f"{s.base_url}/docs/index.html"], delay_s=0.0)
        report = refresh_source("docs", cfg, tmp_path)
        assert report.status == "ok"
        docs = stored(tmp_path, "docs")
        assert sorted(d.title for d in docs.values()) == ["Guide", "Index"]
        # private/ is disallowed by robots.txt; the nav's /docs/ link is a 404 on this site.
        assert report.skipped == {"robots_disallowed": 1, "not_html": 1, "http_404": 1}
        assert not any("/elsewhere" in r["path"] for r in s.requests)  # outside the prefix
        # Second run: every page answers 304 and the stored copies stand.
        report = refresh_source("docs", cfg, tmp_path)
        assert report.skipped["not_modified"] == 2 and report.documents == 2


def test_docs_from_sitemap(tmp_path: Path) -> None:
    with site() as s:
        s.set(
            "/sitemap.xml",
            "application/xml",
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{s.base_url}/docs/guide.html</loc></url>"
            f"<url><loc>{s.base_url}/elsewhere.html</loc></url></urlset>",
        )
        report = refresh_source(
            "docs", DocsConfig(urls=[f"{s.base_url}/sitemap.xml"], delay_s=0), tmp_path
        )
        assert report.status == "ok"
        assert sorted(d.title for d in stored(tmp_path, "docs").values()) == ["Elsewhere", "Guide"]


RSS = """<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
<item><title>Generators in depth</title><link>{base}/posts/gen.html</link><guid>gen-1</guid>
<description>Short teaser.</description><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>
</channel></rss>"""
ATOM = """<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>Atom blog</title><id>urn:blog</id><updated>2024-01-02T00:00:00Z</updated>
<entry><title>Decorators</title><id>urn:dec</id><link href="{base}/posts/dec.html"/>
<updated>2024-01-02T00:00:00Z</updated><category term="python"/>
<content type="html">{content}</content></entry></feed>"""


def test_rss_and_atom_feeds(tmp_path: Path) -> None:
    long_html = "&lt;p&gt;" + "Decorators wrap functions. " * 40 + "&lt;/p&gt;"
    with FakeSite({}) as s:
        s.set("/rss.xml", "application/rss+xml", RSS.format(base=s.base_url))
        s.set("/atom.xml", "application/atom+xml", ATOM.format(base=s.base_url, content=long_html))
        s.set("/posts/gen.html", "text/html", PAGE.format(title="Generators", fn="gen", links=""))
        s.set("/broken.xml", "application/rss+xml", "<rss><channel><item><title>x")
        cfg = FeedsConfig(
            feeds=[f"{s.base_url}/rss.xml", f"{s.base_url}/atom.xml", f"{s.base_url}/broken.xml"],
            delay_s=0,
        )
        report = refresh_source("blogs", cfg, tmp_path)
        docs = stored(tmp_path, "blogs")
        titles = sorted(d.title for d in docs.values())
        assert "Decorators" in titles and "Generators in depth" in titles
        gen = next(d for d in docs.values() if d.title == "Generators in depth")
        assert 'return "Generators"' in gen.text  # teaser replaced by the fetched article
        dec = next(d for d in docs.values() if d.title == "Decorators")
        assert dec.metadata["tags"] == ["python"]
        assert report.status == "ok"
        # Unchanged feeds: 304s, nothing refetched, nothing lost.
        report = refresh_source("blogs", cfg, tmp_path)
        assert report.skipped["feed_not_modified"] >= 2 and report.documents == len(docs)
