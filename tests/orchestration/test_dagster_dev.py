"""`make run` starts `dagster dev`, which loads the code location cleanly, and stops on SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.dagster_instance  # CI runs these again on Postgres
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


def test_make_run_serves_the_code_location(isolated_home: Path) -> None:
    port = free_port()
    # `make run` is what the README promises; the venv is already current here, so it goes
    # straight to `dagster dev` with DAGSTER_HOME from the environment (set by conftest).
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}", f"PYTHON={sys.executable}"],
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
    # make reports its interrupted child as error 2 (or dies of the signal itself).
    assert rc in (0, 2, 130, -signal.SIGINT), f"make run exited with {rc}"
    assert (isolated_home / "dagster_home" / "dagster.yaml").exists()
