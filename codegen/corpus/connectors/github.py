"""GitHub sources through PyGithub: repository code (one tarball per repository) and issues.

``api_url`` points PyGithub at any server speaking the GitHub REST API (tests use a loopback
one). The token comes from GITHUB_TOKEN; without it GitHub allows 60 requests an hour, which
is said in the report rather than treated as an error. An exhausted rate limit (403 or 429 with
``X-RateLimit-Remaining: 0``) is waited out until ``X-RateLimit-Reset``, in the HTTP layer, so
pagination resumes where it stopped; a reset further away than ``max_rate_limit_wait_s`` stops
the source with a clear message instead, keeping what was fetched and the cursor where it was.

Cursors: per repository the commit SHA of the default branch (an unchanged repository is not
downloaded again) and, for issues, the newest ``updated_at`` seen (fetched with ``since``).
"""

from __future__ import annotations

import fnmatch
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import PurePosixPath
from types import TracebackType
from typing import TYPE_CHECKING, TypedDict

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.util.retry import Retry

from codegen.corpus.clean import decode_bytes
from codegen.corpus.connectors.base import (
    Progress,
    RepoCursor,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
)
from codegen.corpus.model import Document, content_hash

if TYPE_CHECKING:
    from github.Issue import Issue
    from github.IssueComment import IssueComment
    from urllib3.connectionpool import ConnectionPool
    from urllib3.response import BaseHTTPResponse

SUFFIXES = {
    "python": (".py",),
    "markdown": (".md",),
    "rst": (".rst",),
    "text": (".txt",),
}
MAX_ARCHIVE_BYTES = 500_000_000


@dataclass
class GitHubConfig:
    api_url: str = "https://api.github.com"
    repos: list[str] = field(default_factory=list)
    issue_repos: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=lambda: ["python", "markdown"])
    include_paths: list[str] = field(default_factory=list)
    exclude_paths: list[str] = field(default_factory=lambda: ["*/tests/*", "*/test/*"])
    max_file_bytes: int = 500_000
    max_issues: int = 500
    token: str | None = field(default=None, repr=False)  # never printed
    timeout_s: float = 30.0
    retries: int = 3
    request_delay_s: float = 0.0
    max_rate_limit_wait_s: float = 900.0  # a reset further away stops the source instead


class RepoMetadata(TypedDict):
    """What every file of one repository download carries, besides its repo and path."""

    sha: str
    stars: int
    updated_at: str | None
    licence: str | None  # SPDX id


class IssueQuery(TypedDict, total=False):
    """The arguments of ``Repository.get_issues`` this source uses."""

    state: str
    sort: str
    direction: str
    since: datetime


class RateLimitWaitTooLong(Exception):
    """The rate limit resets later than the configured maximum wait."""

    def __init__(self, wait_s: float, reset: int, max_wait_s: float) -> None:
        super().__init__(f"rate limit resets in {wait_s:.0f} s")
        self.wait_s, self.reset, self.max_wait_s = wait_s, reset, max_wait_s


def rate_limit_wait(
    status: int, headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait on a rate-limited answer, or None when this is not one.

    A secondary rate limit names its wait (``Retry-After``). A spent primary one waits for
    ``X-RateLimit-Reset``, measured against the response's ``Date`` (the server's clock,
    truncated to the second, so waking at ``reset`` by it is never early) when there is one,
    else the local clock plus a second for skew.
    """
    if status not in (403, 429):
        return None
    retry_after = headers.get("Retry-After") or ""
    if retry_after.isdigit():
        return float(retry_after)
    if headers.get("X-RateLimit-Remaining") != "0":
        return None
    reset = headers.get("X-RateLimit-Reset") or ""
    if not reset.isdigit():
        return None
    try:
        server_now, margin = parsedate_to_datetime(headers["Date"]).timestamp(), 0.0
    except (KeyError, TypeError, ValueError, IndexError):
        server_now, margin = now(), 1.0
    return max(int(reset) - server_now, 0.0) + margin


class RateLimitRetry(Retry):
    """urllib3 retries that wait out a spent rate limit until its reset, bounded.

    Server errors (and a 429 that is not a spent quota) back off exponentially as before. A 403
    that is not a spent quota (no access, say) is answered as is, not retried. The wait happens
    inside the request, so a paginated listing continues with the page that was refused.
    """

    def __init__(
        self,
        *,
        max_wait_s: float = 900.0,
        on_wait: Callable[[float], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **retry_options: object,  # urllib3's own (total, backoff_factor, ...), passed through
    ) -> None:
        self.max_wait_s = max_wait_s
        self.on_wait = on_wait
        self.sleep_for = sleep
        self.rate_wait_s: float | None = None
        super().__init__(**retry_options)  # type: ignore[arg-type]

    def new(self, **retry_options: object) -> RateLimitRetry:
        retry_options.update(max_wait_s=self.max_wait_s, on_wait=self.on_wait, sleep=self.sleep_for)
        return super().new(**retry_options)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> RateLimitRetry:
        wait = None if response is None else rate_limit_wait(response.status, response.headers)
        if response is not None and response.status == 403 and wait is None:
            # Not a rate limit: give the caller the 403 itself (raise_on_status is off).
            raise MaxRetryError(_pool, url, ResponseError("403 is not retried"))
        if wait is not None and wait > self.max_wait_s:
            header = response.headers.get("X-RateLimit-Reset") or ""
            reset = int(header) if header.isdigit() else int(time.time() + wait)
            raise RateLimitWaitTooLong(wait, reset, self.max_wait_s)
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        assert isinstance(retry, RateLimitRetry)
        retry.rate_wait_s = wait
        return retry

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        if self.rate_wait_s is None:
            super().sleep(response)
            return
        if self.on_wait is not None:
            self.on_wait(self.rate_wait_s)
        self.sleep_for(self.rate_wait_s)


def _retry(cfg: GitHubConfig, report: SourceReport, progress: Progress) -> RateLimitRetry:
    def on_wait(seconds: float) -> None:
        report.rate_limit_waits += 1
        report.rate_limit_waited_s = round(report.rate_limit_waited_s + seconds, 3)
        progress(f"{report.source}: GitHub rate limit spent, waiting {seconds:.0f} s for the reset")

    return RateLimitRetry(
        total=cfg.retries,
        backoff_factor=0.5,
        status_forcelist=(403, 429, 500, 502, 503, 504),
        allowed_methods=("GET",),
        raise_on_status=False,
        max_wait_s=cfg.max_rate_limit_wait_s,
        on_wait=on_wait,
    )


def _client(cfg: GitHubConfig, report: SourceReport, retry: Retry) -> Github:
    if not cfg.token:
        report.message = "GITHUB_TOKEN is not set: unauthenticated, GitHub allows 60 requests/hour"
    return Github(
        auth=Auth.Token(cfg.token) if cfg.token else None,
        base_url=cfg.api_url.rstrip("/"),
        timeout=int(cfg.timeout_s),
        retry=retry,
        per_page=100,
        seconds_between_requests=cfg.request_delay_s,
    )


def _error(exc: Exception, what: str) -> SourceError:
    if isinstance(exc, RateLimitWaitTooLong):
        when = datetime.fromtimestamp(exc.reset, UTC).isoformat()
        return SourceError(
            f"GitHub rate limit exhausted while fetching {what}: it resets at {when}, in "
            f"{exc.wait_s:.0f} s, more than corpus.github.max_rate_limit_wait_s "
            f"({exc.max_wait_s:.0f} s); stopped, the next run resumes; "
            "set GITHUB_TOKEN for a higher limit"
        )
    if isinstance(exc, RateLimitExceededException):
        reset = (exc.headers or {}).get("x-ratelimit-reset") or (exc.headers or {}).get(
            "X-RateLimit-Reset"
        )
        when = (
            datetime.fromtimestamp(int(reset), UTC).isoformat()
            if reset and reset.isdigit()
            else "?"
        )
        return SourceError(
            f"GitHub rate limit exhausted while fetching {what} (resets {when}); "
            "set GITHUB_TOKEN for a higher limit"
        )
    if isinstance(exc, GithubException):
        msg = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
        return SourceError(f"GitHub API error {exc.status} while fetching {what}: {msg}")
    return SourceError(f"GitHub request failed while fetching {what}: {type(exc).__name__}: {exc}")


def _wanted(path: str, cfg: GitHubConfig) -> str | None:
    """The language of a path to keep, or None."""
    suffix = PurePosixPath(path).suffix
    language = next((lang for lang in cfg.languages if suffix in SUFFIXES.get(lang, ())), None)
    if language is None:
        return None
    if cfg.include_paths and not any(fnmatch.fnmatch(path, p) for p in cfg.include_paths):
        return None
    if any(fnmatch.fnmatch("/" + path, p) or fnmatch.fnmatch(path, p) for p in cfg.exclude_paths):
        return None
    return language


def _archive_documents(
    url: str,
    name: str,
    meta: RepoMetadata,
    cfg: GitHubConfig,
    report: SourceReport,
    session: requests.Session,
) -> Iterator[Document]:
    headers = {"Authorization": f"token {cfg.token}"} if cfg.token else {}
    with session.get(url, headers=headers, stream=True, timeout=cfg.timeout_s) as resp:
        report.requests += 1
        if resp.status_code != 200:
            raise SourceError(f"archive download for {name} failed: HTTP {resp.status_code}")
        size = int(resp.headers.get("content-length") or 0)
        if size > MAX_ARCHIVE_BYTES:
            report.skip("oversized_archive")
            return
        resp.raw.decode_content = True
        try:
            # Stream mode: members are read in order, never extracted to disk (no path tricks).
            with tarfile.open(fileobj=resp.raw, mode="r|*") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    # GitHub tarballs have one top folder, owner-repo-sha/.
                    path = member.name.split("/", 1)[1] if "/" in member.name else member.name
                    language = _wanted(path, cfg)
                    if language is None:
                        continue
                    if member.size > cfg.max_file_bytes:
                        report.skip("oversized")
                        continue
                    fh = tar.extractfile(member)
                    text, _ = decode_bytes(fh.read() if fh else b"", python=path.endswith(".py"))
                    if text is None:
                        report.skip("binary")
                        continue
                    yield Document(
                        id=content_hash(f"github:{name}:{path}")[:32],
                        source="github_repos",
                        uri=f"https://github.com/{name}/blob/{meta['sha']}/{path}",
                        title=f"{name}/{path}",
                        text=text,
                        language=language,
                        licence=meta["licence"],
                        metadata={**meta, "repo": name, "path": path},
                    )
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise SourceError(f"archive of {name} is malformed: {exc}") from exc


def fetch_repos(
    cfg: GitHubConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not cfg.repos:
        raise SourceDisabled("no repositories listed in corpus.github.repos")
    retry = _retry(cfg, report, progress)
    gh = _client(cfg, report, retry)
    session = requests.Session()  # archive downloads wait out rate limits the same way
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    seen = state.setdefault("repos", {})
    for gone in sorted(set(seen) - set(cfg.repos)):
        # No longer configured: its stored files are dropped on this run.
        report.replace_scopes.append(("repo", gone, True))
        del seen[gone]
    for name in cfg.repos:
        try:
            repo = gh.get_repo(name)
            branch = repo.get_branch(repo.default_branch)
            sha = branch.commit.sha
            report.requests += 2
            if (cursor := seen.get(name)) is not None and cursor.get("sha") == sha:
                report.replace_scopes.append(("repo", name, False))  # keep stored as is
                progress(f"github_repos: {name} unchanged at {sha[:10]}")
                continue
            link = repo.get_archive_link("tarball", ref=sha)
            report.requests += 1
        except (GithubException, RateLimitWaitTooLong, requests.RequestException) as exc:
            raise _error(exc, name) from exc
        meta = RepoMetadata(
            sha=sha,
            stars=repo.stargazers_count,
            updated_at=repo.pushed_at.isoformat() if repo.pushed_at else None,
            licence=repo.license.spdx_id if repo.license else None,
        )
        count = 0
        try:
            for doc in _archive_documents(link, name, meta, cfg, report, session):
                count += 1
                yield doc
        except (RateLimitWaitTooLong, requests.RequestException) as exc:
            raise _error(exc, f"the archive of {name}") from exc
        # This repository's stored files are replaced by this download (deleted files go).
        report.replace_scopes.append(("repo", name, True))
        seen[name] = RepoCursor(sha=sha, files=count)
        progress(f"github_repos: {name}: {count} files at {sha[:10]}")


def _issue_text(issue: Issue, comments: list[IssueComment]) -> str:
    kind = "Pull request" if issue.pull_request is not None else "Issue"
    parts = [
        f"# {issue.title}",
        "",
        f"{kind} #{issue.number} ({issue.state})",
        "",
        issue.body or "",
    ]
    for c in comments:
        parts += ["", f"## Comment by {c.user.login if c.user else 'unknown'}", "", c.body or ""]
    if issue.state == "closed":
        reason = getattr(issue, "state_reason", None) or "closed"
        last = comments[-1].body if comments else ""
        parts += ["", "## Resolution", "", f"Closed ({reason}).", "", last or ""]
    return "\n".join(parts).strip() + "\n"


def fetch_issues(
    cfg: GitHubConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not cfg.issue_repos:
        raise SourceDisabled("no repositories listed in corpus.github.issue_repos")
    gh = _client(cfg, report, _retry(cfg, report, progress))
    cursors = state.setdefault("since", {})
    for name in cfg.issue_repos:
        since = cursors.get(name)
        newest = since
        count = 0
        try:
            repo = gh.get_repo(name)
            query = IssueQuery(state="all", sort="updated", direction="asc")
            if since:
                query["since"] = datetime.fromisoformat(since)
            for issue in repo.get_issues(**query):
                if count >= cfg.max_issues:
                    break
                comments = list(issue.get_comments()) if issue.comments else []
                count += 1
                updated = issue.updated_at.isoformat() if issue.updated_at else None
                if updated and (newest is None or updated > newest):
                    newest = updated
                yield Document(
                    id=content_hash(f"github_issue:{name}:{issue.number}")[:32],
                    source="github_issues",
                    uri=issue.html_url,
                    title=f"{name}#{issue.number}: {issue.title}",
                    text=_issue_text(issue, comments),
                    language="issue",
                    metadata={
                        "repo": name,
                        "number": issue.number,
                        "state": issue.state,
                        "pull_request": issue.pull_request is not None,
                        "score": issue.comments,
                        "created_at": issue.created_at.isoformat() if issue.created_at else None,
                        "updated_at": updated,
                        "tags": [label.name for label in issue.labels],
                    },
                )
        except (GithubException, RateLimitWaitTooLong, requests.RequestException) as exc:
            raise _error(exc, f"issues of {name}") from exc
        if newest:
            cursors[name] = newest
        progress(f"github_issues: {name}: {count} updated issues")
