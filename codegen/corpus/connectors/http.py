"""A polite HTTP client for the docs and blog sources: retries, robots.txt, delay, size cap,
and a fence: it fetches only on the hosts it was configured with.

The fence (``Fence``): every URL it fetches, each redirect hop included, must be http(s) on a
configured host and port (a sitemap or feed listing another host or port, a redirect to one, is
refused unfetched), and its host must resolve to public addresses only: loopback, private,
link-local (the cloud metadata address 169.254.169.254), shared and reserved ranges are
refused unless the configuration names the address itself (an IP literal or ``localhost`` in a
configured URL) or lists the host in ``private_hosts`` (a docs server on the intranet).
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.robotparser
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

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
    location: str | None = None  # a redirect's target, not yet followed


class TooLarge(Exception):
    pass


class OffLimits(Exception):
    """A URL outside the fence; the message is the skip reason (``off_host``,
    ``private_address``, ``not_http``, ``robots_disallowed``, ``too_many_redirects``)."""


MAX_REDIRECTS = 5
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_port(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:  # a port that is not a number
        return None
    return parts.hostname.lower(), port


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass
class Fence:
    """The hosts (name and port) a source may fetch from, and those allowed non-public
    addresses."""

    hosts: set[tuple[str, int]] = field(default_factory=set)
    private_hosts: set[str] = field(default_factory=set)

    @classmethod
    def around(cls, urls: Iterable[str], private_hosts: Iterable[str] = ()) -> Fence:
        hosts = {hp for u in urls if (hp := _host_port(u)) is not None}
        # An address written into the configuration is listed by that very act.
        named = {h for h, _ in hosts if _is_literal(h) or h == "localhost"}
        return cls(hosts, named | {h.lower().strip("[]") for h in private_hosts})

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be fetched (a skip reason), or None."""
        host_port = _host_port(url)
        if host_port is None:
            return "not_http"
        if host_port not in self.hosts:
            return "off_host"
        host, port = host_port
        if host in self.private_hosts:
            return None
        try:
            infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return None  # does not resolve: the fetch itself fails, as a fetch error
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            mapped = getattr(address, "ipv4_mapped", None)
            if not (mapped or address).is_global:
                return "private_address"
        return None


class PoliteClient:
    def __init__(
        self,
        user_agent: str,
        timeout_s: float = 30.0,
        retries: int = 3,
        delay_s: float = 1.0,
        max_bytes: int = MAX_BYTES,
        *,
        fence: Fence,
    ) -> None:
        self.fence = fence
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

    def refusal(self, url: str) -> str | None:
        """Why ``url`` is not fetched (a skip reason: outside the fence, or disallowed by its
        site's robots.txt), or None. Checked before anything is sent to its host."""
        return self.fence.refusal(url) or (None if self.allowed(url) else "robots_disallowed")

    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            parser: urllib.robotparser.RobotFileParser | None = None
            try:
                got = self._get(f"{origin}/robots.txt", {}, robots=False)
                if got.status == 200:
                    parser = urllib.robotparser.RobotFileParser()
                    parser.parse(got.body.decode("utf-8", "replace").splitlines())
            except (requests.RequestException, TooLarge, OffLimits):
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

    def _get(self, url: str, headers: dict[str, str], *, robots: bool = True) -> Fetched:
        """GET ``url``, following redirects one hop at a time, each hop checked against the
        fence (and, when ``robots``, its site's robots.txt) before it is sent; OffLimits
        otherwise."""
        for _ in range(MAX_REDIRECTS + 1):
            refused = self.fence.refusal(url)
            if refused is None and robots and not self.allowed(url):
                refused = "robots_disallowed"
            if refused is not None:
                raise OffLimits(refused)
            got = self._get_once(url, headers)
            if got.location is None:
                return got
            url = urljoin(url, got.location)
        raise OffLimits("too_many_redirects")

    def _get_once(self, url: str, headers: dict[str, str]) -> Fetched:
        self._wait(urlsplit(url).netloc)
        self.requests += 1
        with self.session.get(
            url, headers=headers, timeout=self.timeout_s, stream=True, allow_redirects=False
        ) as resp:
            if resp.is_redirect:
                return Fetched(url, resp.status_code, "", b"", None, None, resp.headers["location"])
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
