"""Start, check and stop the docker deployment (``codegen/deploy/docker/docker-compose.yml``).

``up`` starts Postgres, the code server, the webserver and the daemon, then waits until the
webserver answers GraphQL with the code location loaded, and prints the UI's address. ``down``
stops and removes the containers and the network; the volumes (CODEGEN_HOME, Postgres data)
stay unless ``--volumes`` is given.

    python -m codegen.deploy.stack up | down [--volumes] | status
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

import requests

from codegen.deploy.images import DOCKER_DIR, DeployError
from codegen.json_types import JSONObject, JSONValue

COMPOSE_FILE = DOCKER_DIR / "docker-compose.yml"
LOCATION = "multiagent_codegen"

LOCATIONS_QUERY = """
{
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { repositories { name jobs { name } } }
          ... on PythonError { message }
        }
      }
    }
  }
}
"""
DAEMONS_QUERY = """
{ instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } } }
"""


# The answers to the queries above, as the webserver sends them (the fields asked for).
class JobName(TypedDict):
    name: str


class Repository(TypedDict):
    name: str
    jobs: list[JobName]


# Functional form: a class body would mangle ``__typename``.
LocationOrLoadError = TypedDict(
    "LocationOrLoadError",
    {"__typename": str, "repositories": list[Repository], "message": str},
    total=False,
)


class LocationEntry(TypedDict):
    name: str
    loadStatus: str  # LOADING, LOADED
    locationOrLoadError: LocationOrLoadError


class WorkspaceOrError(TypedDict, total=False):
    locationEntries: list[LocationEntry]


class LocationsData(TypedDict):
    workspaceOrError: WorkspaceOrError


class DaemonStatus(TypedDict):
    daemonType: str
    required: bool
    healthy: bool | None


class DaemonHealth(TypedDict):
    allDaemonStatuses: list[DaemonStatus]


class InstanceHealth(TypedDict):
    daemonHealth: DaemonHealth


class DaemonsData(TypedDict):
    instance: InstanceHealth


def read_env_file() -> dict[str, str]:
    """codegen/deploy/docker/.env, the deployment's defaults (docker-compose reads the same
    file)."""
    values: dict[str, str] = {}
    for line in (DOCKER_DIR / ".env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def host_address_for_containers() -> str:
    """The host's address on docker0, where ``host.docker.internal`` (host-gateway) points.

    A server on the host that the deployment's containers must reach (a local LLM endpoint)
    listens here: containers cannot reach the host's loopback.
    """
    proc = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True
    )
    words = proc.stdout.split()
    if "inet" not in words:
        raise DeployError("docker0 has no IPv4 address; is dockerd running with its bridge?")
    return words[words.index("inet") + 1].split("/")[0]


@dataclass
class Stack:
    """One deployment; ``overrides`` win over the process environment and .env."""

    overrides: Mapping[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        defaults = read_env_file()
        merged = {**defaults, **{k: os.environ[k] for k in defaults if k in os.environ}}
        return {**os.environ, **merged, **self.overrides}

    def setting(self, key: str) -> str:
        return self.env[key]

    @property
    def ui_url(self) -> str:
        return f"http://{self.setting('CODEGEN_UI_HOST')}:{self.setting('CODEGEN_UI_PORT')}"

    def compose_command(self, *args: str) -> list[str]:
        """The docker-compose command line for this deployment (run it with ``self.env``)."""
        exe = shutil.which("docker-compose")
        if exe is None:
            raise DeployError("docker-compose is not installed (apt-get install docker-compose)")
        return [exe, "-f", str(COMPOSE_FILE), *args]

    def compose(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.compose_command(*args), env=self.env, capture_output=True, text=True
        )
        if check and proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-2000:]
            raise DeployError(f"docker-compose {' '.join(args)} failed: {tail}")
        return proc

    def home_path(self) -> Path:
        """CODEGEN_HOME as this host sees it: the named volume's directory (readable by root)."""
        proc = subprocess.run(
            ["docker", "volume", "inspect", self.setting("CODEGEN_HOME_VOLUME")],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise DeployError(f"no CODEGEN_HOME volume: {proc.stderr.strip()}")
        return Path(json.loads(proc.stdout)[0]["Mountpoint"])

    def container_id(self, service: str) -> str:
        out = self.compose("ps", "-q", service).stdout.strip()
        if not out:
            raise DeployError(f"service {service} has no container")
        return out.splitlines()[0]

    def up(self, timeout_s: float = 300.0) -> LocationEntry:
        self.compose("up", "-d", "--no-build")
        return self.wait_ready(timeout_s)

    def down(self, *, volumes: bool = False) -> None:
        # Run containers are the launcher's, not compose's: remove them first, or the network
        # they are attached to cannot be removed (a run still going is lost, as with any stop).
        network = self.setting("COMPOSE_PROJECT_NAME")
        runs = subprocess.run(
            [
                "docker",
                "ps",
                "-aq",
                "--filter",
                f"network={network}",
                "--filter",
                "label=dagster/run_id",
            ],
            capture_output=True,
            text=True,
        ).stdout.split()
        if runs:
            subprocess.run(["docker", "rm", "-f", *runs], capture_output=True)
        self.compose("down", "--remove-orphans", *(["--volumes"] if volumes else []))

    def graphql(self, query: str, variables: Mapping[str, JSONValue] | None = None) -> JSONObject:
        """The ``data`` of the webserver's answer; its shape is the query's (callers name it
        with the TypedDict of that query)."""
        resp = requests.post(
            f"{self.ui_url}/graphql",
            json={"query": query, "variables": variables or {}},
            timeout=30,
        )
        resp.raise_for_status()
        body = resp.json()
        if body.get("errors"):
            raise DeployError(f"GraphQL errors: {body['errors']}")
        data = body["data"]
        if not isinstance(data, dict):
            raise DeployError(f"GraphQL answer without data: {str(body)[:500]}")
        return data

    def location(self) -> LocationEntry | None:
        data = cast(LocationsData, self.graphql(LOCATIONS_QUERY))["workspaceOrError"]
        for entry in data.get("locationEntries", []):
            if entry["name"] == LOCATION:
                return entry
        return None

    def daemons_not_ready(self) -> list[str]:
        """The daemon's required loops that have not reported a heartbeat yet.

        Until the run-failure consumer has run once it has no cursor, and a failure recorded
        before that is never retried (Dagster starts a missing cursor at the newest event), so
        the deployment is not ready before every loop has beaten.
        """
        try:
            data = cast(DaemonsData, self.graphql(DAEMONS_QUERY))
        except (requests.RequestException, ValueError, DeployError):
            return ["(daemon health unavailable)"]
        statuses = data["instance"]["daemonHealth"]["allDaemonStatuses"]
        return [d["daemonType"] for d in statuses if d["required"] and not d["healthy"]]

    def wait_ready(self, timeout_s: float = 300.0) -> LocationEntry:
        """The code location's entry once the webserver has it LOADED and every daemon loop
        has reported (or a clear error)."""
        deadline = time.monotonic() + timeout_s
        last = "the webserver did not answer"
        while time.monotonic() < deadline:
            try:
                entry = self.location()
            except (requests.RequestException, ValueError) as exc:
                last = f"the webserver did not answer: {exc}"
            else:
                if entry is None:
                    last = f"no code location {LOCATION!r} yet"
                elif entry["loadStatus"] == "LOADED":
                    loaded = entry["locationOrLoadError"]
                    if loaded["__typename"] != "RepositoryLocation":
                        last = f"the code location failed to load: {loaded.get('message', loaded)}"
                    else:
                        waiting = self.daemons_not_ready()
                        if not waiting:
                            return entry
                        last = f"daemon loops not running yet: {', '.join(waiting)}"
                else:
                    last = f"code location {entry['loadStatus'].lower()}"
            time.sleep(2)
        logs = self.compose("logs", "--tail", "30", check=False).stdout[-4000:]
        raise DeployError(f"the deployment did not come up in {timeout_s:.0f} s: {last}\n{logs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the docker deployment.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start it and wait until the UI serves the code location")
    down = sub.add_parser("down", help="stop and remove the containers")
    down.add_argument("--volumes", action="store_true", help="also delete CODEGEN_HOME and data")
    sub.add_parser("status", help="the code location's state, as JSON")
    args = parser.parse_args(argv)
    stack = Stack()
    try:
        if args.command == "up":
            entry = stack.up()
            repos = entry["locationOrLoadError"]["repositories"]
            jobs = sum(len(r["jobs"]) for r in repos)
            print(f"Dagster UI: {stack.ui_url} (code location {LOCATION}, {jobs} jobs)")
        elif args.command == "down":
            stack.down(volumes=args.volumes)
        else:
            print(json.dumps(stack.location(), indent=2))
    except DeployError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
