"""A polite HTTP client for the docs and blog sources: retries, robots.txt, delay, size cap."""

from __future__ import annotations

import time
import urllib.robotparser
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

MAX_BYTES = 5_000_000  # a page larger than this is not documentation worth indexing


@dataclass
class Fetched:
    url: str
    status: int
    content_type: str
    body: bytes
    etag: str | None
    last_modified: str | None


class TooLarge(Exception):
    pass


class PoliteClient:
    def __init__(
        self,
        user_agent: str,
        timeout_s: float = 30.0,
        retries: int = 3,
        delay_s: float = 1.0,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.session = requests.Session()
        # 429 and 5xx are retried with exponential backoff, honouring Retry-After.
        retry = Retry(
            total=retries,
            backoff_factor=0.5,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=("GET", "HEAD"),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))
        self.session.headers["User-Agent"] = user_agent
        self.user_agent = user_agent
        self.timeout_s = timeout_s
        self.delay_s = delay_s
        self.max_bytes = max_bytes
        self._robots: dict[str, urllib.robotparser.RobotFileParser | None] = {}
        self._last: dict[str, float] = {}
        self.requests = 0

    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            parser: urllib.robotparser.RobotFileParser | None = None
            try:
                got = self._get(f"{origin}/robots.txt", {})
                if got.status == 200:
                    parser = urllib.robotparser.RobotFileParser()
                    parser.parse(got.body.decode("utf-8", "replace").splitlines())
            except (requests.RequestException, TooLarge):
                parser = None  # no robots.txt reachable: everything is allowed
            self._robots[origin] = parser
        parser = self._robots[origin]
        return parser is None or parser.can_fetch(self.user_agent, url)

    def _wait(self, host: str) -> None:
        last = self._last.get(host)
        if last is not None:
            pause = self.delay_s - (time.monotonic() - last)
            if pause > 0:
                time.sleep(pause)
        self._last[host] = time.monotonic()

    def _get(self, url: str, headers: dict[str, str]) -> Fetched:
        self._wait(urlsplit(url).netloc)
        self.requests += 1
        with self.session.get(url, headers=headers, timeout=self.timeout_s, stream=True) as resp:
            declared = int(resp.headers.get("content-length") or 0)
            if declared > self.max_bytes:
                raise TooLarge(url)
            body = b""
            for block in resp.iter_content(65536):
                body += block
                if len(body) > self.max_bytes:
                    raise TooLarge(url)
            return Fetched(
                url=resp.url,
                status=resp.status_code,
                content_type=resp.headers.get("content-type", ""),
                body=body,
                etag=resp.headers.get("etag"),
                last_modified=resp.headers.get("last-modified"),
            )

    def get(self, url: str, etag: str | None = None, last_modified: str | None = None) -> Fetched:
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return self._get(url, headers)
