"""Which endpoint a queued request runs on: the caller's, or none (never a silent other one).

``codegen generate`` hands a request to the daemon when one serves the instance. The daemon's
processes have the environment ``make run`` started with, not the caller's, so the request
carries the caller's non-secret route (base URL and models, ``codegen.agents.llm.LLMRoute``)
and the daemon calls that. The key is not part of a route and never travels: the daemon uses
its own ``OPENAI_API_KEY``, which is only right when it is the caller's key too. To tell
without showing either key, the daemon publishes a salted hash of its key (and its own base
URL) in ``$CODEGEN_HOME/daemon/llm.json`` on every inbox-sensor tick; the caller compares its
own hash and refuses, in one line naming both endpoints, when they differ. The salt is a random
per-home value, so the hash says nothing about the key beyond equality.

Programmer candidates on other endpoints name the variable holding their key (``api_key_env``);
the route carries that name, never the key. The daemon publishes the same salted hash for each
variable its own ``[llm] candidates`` name, and a request whose candidate names a variable the
daemon lacks, or holds another value in, is refused the same way.

Those checks are the caller's courtesy; the one that guards the daemon's secrets is its own
(``foreign_endpoint``, run by the process that runs the request before any call): a stored
route is followed only to endpoints the daemon's own settings name, its ``OPENAI_API_KEY`` goes
only to its ``[llm] base_url`` or an ``[llm] allowed_base_urls`` entry, and a candidate's key
variable only to the endpoint the daemon's own ``[llm] candidates`` pair it with. A request row
edited to name another endpoint or variable is refused in one line, and nothing is sent.

The one exception: a process with no key to send (no ``OPENAI_API_KEY`` and none of the
candidates' ``api_key_env`` variables set in it) follows any route, since nothing secret can go
with it; its calls then carry no Authorization header at all. That is the offline setup (a
scripted or replay server on loopback, no key anywhere), and the report's ``endpoints`` say
where the calls went. The caller's check applies the same rule to what the daemon published.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from codegen.agents.llm import CandidateRoute, LLMRoute, resolved_base_url, shown_url
from codegen.durable import atomic_write_text

KEY_ENV = "OPENAI_API_KEY"  # the openai SDK's own variable; no other key is ever read
# A published environment older than this is a daemon gone or a sensor stopped: the sensor
# ticks every 10 s.
FRESH_S = 60.0


def _dir(home: Path) -> Path:
    return Path(home) / "daemon"


def key_fingerprint(home: Path, name: str = KEY_ENV) -> str | None:
    """A salted hash of this process's ``OPENAI_API_KEY`` (or of variable ``name``; None when
    it has none)."""
    key = os.environ.get(name)
    if not key:
        return None
    salt_file = _dir(home) / "salt"
    if not salt_file.exists():
        salt_file.parent.mkdir(parents=True, exist_ok=True)
        with open(salt_file, "a") as fh:  # two first writers: both append, the first wins
            fh.write(secrets.token_hex(16) + "\n")
    salt = salt_file.read_text().splitlines()[0]
    return hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DaemonEnvironment:
    """What the daemon's processes would call without a route, and its key's fingerprint."""

    base_url: str
    key: str | None
    at: float  # time.time() of the publication
    # The hash of each variable the daemon's own [llm] candidates name (api_key_env), by name.
    key_envs: dict[str, str | None] = field(default_factory=dict)
    # Where the daemon sends its OPENAI_API_KEY (base_url and [llm] allowed_base_urls); None:
    # a publication from before the list was kept.
    endpoints: list[str] | None = None

    def fresh(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.at <= FRESH_S


def publish_daemon_environment(
    home: Path,
    base_url: str | None = None,
    key_envs: Iterable[str] = (),
    allowed_base_urls: Iterable[str] = (),
) -> DaemonEnvironment:
    """Called in the daemon's processes (the inbox sensor): record its endpoint and key hash,
    the hash of each of ``key_envs`` (the variables its own candidates name), and where its
    key may go (its endpoint and ``allowed_base_urls``)."""
    own = resolved_base_url(base_url)
    env = DaemonEnvironment(
        own,
        key_fingerprint(home),
        time.time(),
        {name: key_fingerprint(home, name) for name in sorted(set(key_envs))},
        [own, *allowed_base_urls],
    )
    published = {
        "base_url": env.base_url,
        "key": env.key,
        "at": env.at,
        "key_envs": env.key_envs,
        "endpoints": env.endpoints,
    }
    atomic_write_text(_dir(home) / "llm.json", json.dumps(published))
    return env


def daemon_environment(home: Path) -> DaemonEnvironment | None:
    try:
        data = json.loads((_dir(home) / "llm.json").read_text())
        key, at = data.get("key"), data["at"]
        if not isinstance(at, int | float) or not (key is None or isinstance(key, str)):
            return None
        named = data.get("key_envs") or {}
        if not isinstance(named, dict) or not all(
            v is None or isinstance(v, str) for v in named.values()
        ):
            return None
        endpoints = data.get("endpoints")
        if endpoints is not None and not (
            isinstance(endpoints, list) and all(isinstance(e, str) for e in endpoints)
        ):
            return None
        return DaemonEnvironment(str(data["base_url"]), key, float(at), dict(named), endpoints)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def wait_for_daemon_environment(home: Path, timeout_s: float = 30.0) -> DaemonEnvironment | None:
    """The daemon's fresh publication, waiting up to one sensor tick and a half for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        env = daemon_environment(home)
        if env is not None and env.fresh():
            return env
        if time.monotonic() >= deadline:
            return None
        time.sleep(1.0)


def refusal(home: Path, route: LLMRoute, daemon: DaemonEnvironment | None) -> str | None:
    """Why the daemon cannot run a request on ``route`` with the caller's key (None: it can)."""
    if daemon is None:
        return (
            f"a daemon serves this instance but has not said which endpoint and key it uses; "
            f"this request is for {route.base_url}: run it with --launch here"
        )
    own = key_fingerprint(home)
    # No key on either side (the daemon's own candidates' variables included): nothing secret
    # can travel, so the daemon may call an endpoint its settings do not list.
    keyless = (
        daemon.key is None
        and own is None
        and not route.key_envs()
        and not any(daemon.key_envs.values())
    )
    if (
        not keyless
        and daemon.endpoints is not None
        and not any(same_endpoint(route.base_url, e) for e in daemon.endpoints)
    ):
        return (
            f"the daemon serving this instance (endpoint {shown_url(daemon.base_url)}) sends its "
            f"{KEY_ENV} only to the endpoints its settings name, not to this shell's "
            f"{shown_url(route.base_url)}: add it to the daemon's [llm] allowed_base_urls and "
            "restart `make run`, or run the request here with --launch here"
        )
    if daemon.key != own:
        if daemon.key is None:
            keys = f"has no {KEY_ENV} and this shell has one"
        elif own is None:
            keys = f"has an {KEY_ENV} and this shell has none"
        else:
            keys = f"has a different {KEY_ENV} from this shell's"
        return (
            f"the daemon serving this instance (endpoint {daemon.base_url}) {keys} (endpoint "
            f"{route.base_url}): restart `make run` with this shell's environment, or run the "
            "request here with --launch here"
        )
    for index, name in route.key_envs():
        mine = key_fingerprint(home, name)
        if mine is None:
            return (
                f"[llm] candidates[{index}] takes its key from {name} (api_key_env), which is "
                "not set in this shell"
            )
        theirs = daemon.key_envs.get(name)
        if theirs != mine:
            # The daemon publishes only the variables its own [llm] candidates name.
            have = f"a different {name} from this shell's" if theirs else f"no {name}"
            url = route.candidates[index].base_url or route.base_url
            return (
                f"the daemon serving this instance has {have} for [llm] candidates[{index}] "
                f"(api_key_env, endpoint {url}): restart `make run` with this environment and "
                "these candidates, or run the request here with --launch here"
            )
    return None


def same_endpoint(a: str, b: str) -> bool:
    """Whether two base URLs name one endpoint (scheme and host case, a trailing slash and a
    default port aside)."""
    return _endpoint_key(a) == _endpoint_key(b)


def _endpoint_key(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def keys_set(
    environ: Mapping[str, str], route: LLMRoute, candidates: Iterable[CandidateRoute] = ()
) -> list[str]:
    """The key variables set in ``environ`` that calls on ``route`` could send: ``OPENAI_API_KEY``
    and each ``api_key_env`` that the route's or the process's own ``candidates`` name."""
    named = [c.api_key_env for c in (*route.candidates, *candidates) if c.api_key_env]
    return sorted({name for name in (KEY_ENV, *named) if environ.get(name)})


def foreign_endpoint(
    route: LLMRoute,
    base_url: str | None,
    candidates: Iterable[CandidateRoute],
    allowed_base_urls: Iterable[str] = (),
    *,
    environ: Mapping[str, str],
) -> str | None:
    """Why the process whose own settings are ``base_url`` (None: the SDK's environment),
    ``candidates`` and ``allowed_base_urls``, and whose environment is ``environ``, must not call
    a stored ``route``, in one line; None when every endpoint and key variable of the route is
    one those settings name, or when ``environ`` holds no key the calls could send.

    Where the keys would go: ``OPENAI_API_KEY`` to the route's base URL (and to each candidate
    without its own); a candidate's ``api_key_env`` variable to its base URL (or the route's);
    a candidate with its own base URL and no variable sends no key, but is still a host the
    request would send its text to, so it too must be one the settings name."""
    own = resolved_base_url(base_url)
    main = [own, *allowed_base_urls]  # where OPENAI_API_KEY may go
    own_candidates = list(candidates)
    keys = keys_set(environ, route, own_candidates)
    if not keys:
        return None  # nothing secret to send: any endpoint (a replay server, say) may be called
    pairs = [(c.base_url or own, c.api_key_env) for c in own_candidates if c.api_key_env]
    hosts = main + [c.base_url for c in own_candidates if c.base_url]

    def listed(url: str, among: Iterable[str]) -> bool:
        return any(same_endpoint(url, u) for u in among)

    settings = f"its endpoint {shown_url(own)}; [llm] base_url, candidates or allowed_base_urls"
    if not listed(route.base_url, main):
        return (
            f"refused: the request names endpoint {shown_url(route.base_url)}, which this "
            f"daemon's settings ({settings}) do not, and it has {', '.join(keys)} set; its "
            "keys go nowhere else and no call was made"
        )
    for index, entry in enumerate(route.candidates):
        url = entry.base_url or route.base_url
        name = entry.api_key_env
        if name is not None and name != KEY_ENV:
            if not any(same_endpoint(url, u) and name == n for u, n in pairs):
                return (
                    f"refused: the request's candidate {index} sends the key in {name} "
                    f"(api_key_env) to {shown_url(url)}, which this daemon's own [llm] "
                    "candidates do not; no call was made"
                )
        elif not listed(url, main if name == KEY_ENV or entry.base_url is None else hosts):
            return (
                f"refused: the request's candidate {index} names endpoint {shown_url(url)}, "
                f"which this daemon's settings ({settings}) do not; no call was made"
            )
    return None
