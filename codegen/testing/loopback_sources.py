"""Loopback HTTP servers that speak the corpus sources' real wire shapes, from fixtures.

* :class:`FakeGitHub`: GitHub REST v3 (repos, branches, tarball redirect + archive, issues
  with ``Link`` pagination and ``since``, comments, rate-limit headers and a 403 or 429 when
  the quota is spent until ``X-RateLimit-Reset`` passes, injectable 500s on a given page).
* :class:`FakeStackExchange`: the Stack Exchange API 2.3 wrapper object (``items``,
  ``has_more``, ``quota_max``, ``quota_remaining``, ``backoff``, ``error_id`` errors).
* :class:`FakeSite`: static files (HTML pages, ``sitemap.xml``, ``robots.txt``, RSS/Atom feeds)
  with ETag / If-None-Match support.

All record the latest requests in ``.requests`` (path, query, headers; a bounded
``codegen.replay.history.History``) and serve GET only on ``127.0.0.1`` with an ephemeral port.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, NotRequired, TypedDict
from urllib.parse import parse_qs, urlparse

from codegen.replay.history import History

if TYPE_CHECKING:
    from codegen.corpus.connectors import Answer, Question

Response = tuple[int, dict[str, str], bytes]


class RecordedRequest(TypedDict):
    path: str
    query: dict[str, str]  # the last value of each parameter
    headers: dict[str, str]  # names lower-cased


# GitHub REST v3 objects, the fields PyGithub reads here.
class GitHubUser(TypedDict):
    login: str


class GitHubLabel(TypedDict):
    name: str


class PullRequestRef(TypedDict, total=False):
    url: str


class GitHubIssue(TypedDict):
    """An issue as a fixture gives it (``issue`` builds one)."""

    number: int
    title: str
    body: str
    state: str  # open, closed
    state_reason: str | None
    comments: int  # how many
    created_at: str  # ISO 8601, Z
    updated_at: str
    labels: list[GitHubLabel]
    user: GitHubUser
    pull_request: NotRequired[PullRequestRef]  # present on pull requests only


class ServedIssue(GitHubIssue):
    """An issue as the server answers it: the fixture plus its URLs."""

    url: str
    comments_url: str
    html_url: str
    repository_url: str


class GitHubComment(TypedDict, total=False):
    id: int
    body: str
    user: GitHubUser


class GitHubLicence(TypedDict):
    key: str
    spdx_id: str
    name: str


class GitHubRepo(TypedDict):
    id: int
    name: str
    full_name: str
    url: str
    html_url: str
    default_branch: str
    stargazers_count: int
    pushed_at: str
    license: GitHubLicence | None


class StackExchangeSite(TypedDict):
    api_site_parameter: str
    name: str


class _Server:
    """Base: routes GET requests to ``self.handle(path, query, headers) -> Response``."""

    def __init__(self) -> None:
        self.requests: History[RecordedRequest] = History()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append(RecordedRequest(path=url.path, query=query, headers=headers))
                status, out_headers, body = outer.handle(url.path, query, headers)
                self.send_response(status)
                for k, v in out_headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def handle(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Response:
        raise NotImplementedError

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _json(status: int, data: object, headers: dict[str, str] | None = None) -> Response:
    """``data``: anything ``json.dumps`` takes (the API objects above, error bodies)."""
    return (
        status,
        {"Content-Type": "application/json", **(headers or {})},
        json.dumps(data).encode(),
    )


def make_tarball(top: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class FakeRepo:
    name: str  # owner/repo
    files: dict[str, bytes]
    sha: str = "a" * 40
    stars: int = 10
    licence: str | None = "MIT"
    issues: list[GitHubIssue] = field(default_factory=list)
    comments: dict[int, list[GitHubComment]] = field(default_factory=dict)  # by issue number


def issue(
    number: int,
    title: str,
    body: str,
    updated: str,
    *,
    state: str = "open",
    state_reason: str | None = None,
    comments: int = 0,
    created_at: str | None = None,  # None: ``updated``
    labels: Sequence[str] = (),
    pull_request: PullRequestRef | None = None,  # given (``{}`` will do): a pull request
) -> GitHubIssue:
    """A GitHub issue object in the REST shape."""
    out = GitHubIssue(
        number=number,
        title=title,
        body=body,
        state=state,
        state_reason=state_reason,
        comments=comments,
        created_at=created_at or updated,
        updated_at=updated,
        labels=[GitHubLabel(name=n) for n in labels],
        user=GitHubUser(login="someone"),
    )
    if pull_request is not None:
        out["pull_request"] = pull_request
    return out


class FakeGitHub(_Server):
    def __init__(self, repos: list[FakeRepo], per_page: int = 2) -> None:
        super().__init__()
        self.repos = {r.name: r for r in repos}
        self.per_page = per_page
        self.rate_remaining: int | None = None  # None: unlimited
        self.rate_limit = 60  # the quota restored once the reset time has passed
        self.rate_reset = 1_900_000_000  # epoch seconds (X-RateLimit-Reset)
        self.rate_limited_status = 403  # GitHub answers a spent primary limit with 403 or 429
        self.rate_limited_responses = 0
        self.hook: Callable[[str], Response | None] | None = None  # answers a path first
        self.fail_issue_page: int | None = None  # answer 500 on this page of issues
        self.archive_downloads = 0

    def _repo_json(self, r: FakeRepo) -> GitHubRepo:
        base = self.base_url
        return GitHubRepo(
            id=abs(hash(r.name)) % 10**6,
            name=r.name.split("/")[1],
            full_name=r.name,
            url=f"{base}/repos/{r.name}",
            html_url=f"https://github.com/{r.name}",
            default_branch="main",
            stargazers_count=r.stars,
            pushed_at="2024-05-01T00:00:00Z",
            license=GitHubLicence(key="mit", spdx_id=r.licence, name=r.licence)
            if r.licence
            else None,
        )

    def _rate_headers(self) -> dict[str, str]:
        if self.rate_remaining is None:
            return {}
        return {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(max(self.rate_remaining, 0)),
            "X-RateLimit-Reset": str(self.rate_reset),
        }

    def handle(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Response:
        if self.hook is not None and (hooked := self.hook(path)) is not None:
            return hooked
        if self.rate_remaining is not None:
            if self.rate_remaining <= 0 and time.time() >= self.rate_reset:
                self.rate_remaining = self.rate_limit
            if self.rate_remaining <= 0:
                self.rate_limited_responses += 1
                return _json(
                    self.rate_limited_status,
                    {
                        "message": "API rate limit exceeded for 127.0.0.1.",
                        "documentation_url": "https://docs.github.com/rest/rate-limit",
                    },
                    self._rate_headers(),
                )
            self.rate_remaining -= 1
        rh = self._rate_headers()
        parts = path.strip("/").split("/")
        if parts[:1] == ["archives"]:
            name = "/".join(parts[1:3]).removesuffix(".tar.gz")
            self.archive_downloads += 1
            r = self.repos[name]
            top = f"{name.replace('/', '-')}-{r.sha[:7]}"
            return 200, {"Content-Type": "application/x-gzip"}, make_tarball(top, r.files)
        if parts[:1] != ["repos"] or len(parts) < 3:
            return _json(404, {"message": "Not Found"}, rh)
        name = "/".join(parts[1:3])
        r = self.repos.get(name)
        if r is None:
            return _json(404, {"message": "Not Found"}, rh)
        rest = parts[3:]
        if not rest:
            return _json(200, self._repo_json(r), rh)
        if rest[0] == "branches":
            return _json(200, {"name": rest[1], "commit": {"sha": r.sha, "url": ""}}, rh)
        if rest[0] == "tarball":
            return 302, {"Location": f"{self.base_url}/archives/{name}.tar.gz", **rh}, b""
        if rest == ["issues"]:
            return self._issues(r, query, rh)
        if rest[0] == "issues" and len(rest) == 2:
            found = [i for i in r.issues if i["number"] == int(rest[1])]
            if not found:
                return _json(404, {"message": "Not Found"}, rh)
            base = f"{self.base_url}/repos/{r.name}/issues"
            return _json(200, self._issue_json(r, found[0], base), rh)
        if rest[0] == "issues" and rest[2:] == ["comments"]:
            return _json(200, r.comments.get(int(rest[1]), []), rh)
        return _json(404, {"message": "Not Found"}, rh)

    def _issue_json(self, r: FakeRepo, i: GitHubIssue, base: str) -> ServedIssue:
        return ServedIssue(
            **i,
            url=f"{base}/{i['number']}",
            comments_url=f"{base}/{i['number']}/comments",
            html_url=f"https://github.com/{r.name}/issues/{i['number']}",
            repository_url=f"{self.base_url}/repos/{r.name}",
        )

    def _issues(self, r: FakeRepo, query: dict[str, str], rh: dict[str, str]) -> Response:
        items = sorted(r.issues, key=lambda i: i["updated_at"])
        if "since" in query:
            since = datetime.fromisoformat(query["since"].replace("Z", "+00:00"))
            items = [
                i
                for i in items
                if datetime.fromisoformat(i["updated_at"].replace("Z", "+00:00")) >= since
            ]
        page = int(query.get("page", 1))
        if self.fail_issue_page == page:
            return _json(500, {"message": "Server Error"}, rh)
        per = self.per_page
        chunk = items[(page - 1) * per : page * per]
        base = f"{self.base_url}/repos/{r.name}/issues"
        q = "&".join(f"{k}={v}" for k, v in query.items() if k != "page")
        links = []
        if page * per < len(items):
            links.append(f'<{base}?{q}&page={page + 1}>; rel="next"')
            last = (len(items) + per - 1) // per
            links.append(f'<{base}?{q}&page={last}>; rel="last"')
        out = [self._issue_json(r, i, base) for i in chunk]
        return _json(200, out, {**rh, **({"Link": ", ".join(links)} if links else {})})


class FakeStackExchange(_Server):
    """``/2.3/sites``, ``/2.3/questions`` (paged, ``tagged``, ``fromdate``), ``/2.3/answers/{ids}``.

    ``answers`` maps answer id -> answer object.
    """

    def __init__(self, questions: list[Question], answers: dict[int, Answer]) -> None:
        super().__init__()
        self.questions = questions
        self.answers = answers
        self.page_size_cap = 2
        self.quota_remaining = 300
        self.backoff_on_page: int | None = None
        self.error_on_page: int | None = None

    def _wrap(
        self,
        items: Sequence[Question | Answer | StackExchangeSite],
        has_more: bool,
        extra: dict[str, int] | None = None,  # more wrapper fields (``backoff``)
    ) -> Response:
        self.quota_remaining -= 1
        body = {
            "items": items,
            "has_more": has_more,
            "quota_max": 300,
            "quota_remaining": max(self.quota_remaining, 0),
            **(extra or {}),
        }
        # The real API always gzips its responses.
        return (
            200,
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            gzip.compress(json.dumps(body).encode()),
        )

    def handle(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Response:
        if self.quota_remaining <= 0:
            err = {
                "error_id": 502,
                "error_name": "throttle_violation",
                "error_message": "too many requests from this IP, more available in 3600 seconds",
            }
            return _json(400, err)
        parts = path.strip("/").split("/")
        if parts[1:] == ["sites"]:
            site = StackExchangeSite(api_site_parameter="stackoverflow", name="Stack Overflow")
            return self._wrap([site], False)
        page = int(query.get("page", 1))
        if self.error_on_page == page:
            return _json(
                400, {"error_id": 500, "error_name": "internal_error", "error_message": "boom"}
            )
        per = min(int(query.get("pagesize", 100)), self.page_size_cap)
        if parts[1:] == ["questions"]:
            items = [
                q
                for q in self.questions
                if not query.get("tagged") or query["tagged"] in q["tags"]
                if q["last_activity_date"] >= int(query.get("fromdate", 0))
            ]
            chunk = items[(page - 1) * per : page * per]
            extra = {"backoff": 0} if self.backoff_on_page == page else {}
            return self._wrap(chunk, page * per < len(items), extra)
        if len(parts) == 3 and parts[1] == "answers":
            ids = {int(x) for x in parts[2].split(";")}
            items = [a for a in self.answers.values() if a["answer_id"] in ids]
            return self._wrap(items, False)
        return _json(404, {"error_id": 404, "error_name": "no_method", "error_message": path})


class FakeSite(_Server):
    """Static pages by path; ETags are content hashes and If-None-Match answers 304."""

    def __init__(self, pages: dict[str, tuple[str, bytes | str]]) -> None:
        super().__init__()
        self.pages = {
            p: (ct, b if isinstance(b, bytes) else b.encode()) for p, (ct, b) in pages.items()
        }
        self.hook: Callable[[str], Response | None] | None = None

    def set(self, path: str, content_type: str, body: bytes | str) -> None:
        self.pages[path] = (content_type, body if isinstance(body, bytes) else body.encode())

    def handle(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Response:
        if self.hook is not None and (hooked := self.hook(path)) is not None:
            return hooked
        if path not in self.pages:
            return 404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>"
        ct, body = self.pages[path]
        import hashlib

        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if headers.get("if-none-match") == etag:
            return 304, {"ETag": etag}, b""
        return 200, {"Content-Type": ct, "ETag": etag}, body


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
