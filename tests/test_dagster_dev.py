"""`dagster dev` starts from the project root, loads the code location cleanly, and stops."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
LOCATIONS_QUERY = """
{ workspaceOrError { __typename ... on Workspace { locationEntries {
    name loadStatus
    locationOrLoadError { __typename ... on PythonError { message }
      ... on RepositoryLocation { repositories { name assetNodes { id } } } }
} } } }
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dagster_dev_serves_the_code_location(isolated_home: Path) -> None:
    port = free_port()
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.Popen(
        [str(dagster), "dev", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        info = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                info = requests.get(f"{base}/server_info", timeout=2).json()
                entries = requests.post(
                    f"{base}/graphql", json={"query": LOCATIONS_QUERY}, timeout=10
                ).json()["data"]["workspaceOrError"]["locationEntries"]
                if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                    break
            except (requests.ConnectionError, requests.Timeout, KeyError, ValueError):
                pass
            time.sleep(1)
        else:
            raise AssertionError("dagster dev did not load the code location in time")
        assert info and "dagster_webserver_version" in info
        [entry] = entries
        assert entry["name"] == "multiagent_codegen"
        location = entry["locationOrLoadError"]
        assert location["__typename"] == "RepositoryLocation", location
        assert location["repositories"][0]["assetNodes"], "no assets in the code location"
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    assert rc in (0, -signal.SIGINT), f"dagster dev exited with {rc}"
