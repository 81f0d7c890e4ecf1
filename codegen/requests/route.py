"""Which endpoint a queued request runs on: the caller's, or none (never a silent other one).

``codegen generate`` hands a request to the daemon when one serves the instance. The daemon's
processes have the environment ``make run`` started with, not the caller's, so the request
carries the caller's non-secret route (base URL and models, ``codegen.agents.endpoint.LLMRoute``)
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
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codegen.agents.endpoint import LLMRoute, resolved_base_url
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

    def fresh(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.at <= FRESH_S


def publish_daemon_environment(
    home: Path, base_url: str | None = None, key_envs: Iterable[str] = ()
) -> DaemonEnvironment:
    """Called in the daemon's processes (the inbox sensor): record its endpoint and key hash,
    and the hash of each of ``key_envs`` (the variables its own candidates name)."""
    env = DaemonEnvironment(
        resolved_base_url(base_url),
        key_fingerprint(home),
        time.time(),
        {name: key_fingerprint(home, name) for name in sorted(set(key_envs))},
    )
    published = {"base_url": env.base_url, "key": env.key, "at": env.at, "key_envs": env.key_envs}
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
        return DaemonEnvironment(str(data["base_url"]), key, float(at), dict(named))
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
