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
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codegen.agents.endpoint import LLMRoute, resolved_base_url

KEY_ENV = "OPENAI_API_KEY"  # the openai SDK's own variable; no other key is ever read
# A published environment older than this is a daemon gone or a sensor stopped: the sensor
# ticks every 10 s.
FRESH_S = 60.0


def _dir(home: Path) -> Path:
    return Path(home) / "daemon"


def key_fingerprint(home: Path) -> str | None:
    """A salted hash of this process's ``OPENAI_API_KEY`` (None when it has none)."""
    key = os.environ.get(KEY_ENV)
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

    def fresh(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.at <= FRESH_S


def publish_daemon_environment(home: Path, base_url: str | None = None) -> DaemonEnvironment:
    """Called in the daemon's processes (the inbox sensor): record its endpoint and key hash."""
    env = DaemonEnvironment(resolved_base_url(base_url), key_fingerprint(home), time.time())
    folder = _dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump({"base_url": env.base_url, "key": env.key, "at": env.at}, fh)
    os.replace(tmp, folder / "llm.json")
    return env


def daemon_environment(home: Path) -> DaemonEnvironment | None:
    try:
        data = json.loads((_dir(home) / "llm.json").read_text())
        key, at = data.get("key"), data["at"]
        if not isinstance(at, int | float) or not (key is None or isinstance(key, str)):
            return None
        return DaemonEnvironment(str(data["base_url"]), key, float(at))
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
    if daemon.key == key_fingerprint(home):
        return None
    have = "another" if daemon.key else "no"
    return (
        f"the daemon serving this instance (endpoint {daemon.base_url}) has {have} "
        f"{KEY_ENV} than this shell (endpoint {route.base_url}): restart `make run` with this "
        "environment, or run the request here with --launch here"
    )
