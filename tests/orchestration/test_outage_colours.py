"""Dagster's colours match the request: an outage is a failed run, not a materialization.

With the endpoint down, `codegen generate` ends in one outcome on stdout and at most three
progress lines on stderr (no traceback, no Dagster log line); the run is FAILURE and no
`solution_code` partition is materialized, so the UI shows red and a re-run retries.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus

pytestmark = pytest.mark.dagster_instance


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_down_fails_the_run_and_materializes_no_code(isolated_home: Path) -> None:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1",
        "OPENAI_API_KEY": "sk-test",
        "CODEGEN_LLM__MAX_RETRIES": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "generate", "Write is_palindrome(s).", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode not in (0, 1, 2), proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "error" and "cannot reach the LLM endpoint" in out["reason"]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) <= 3, lines
    assert "Traceback" not in proc.stderr and " - dagster - " not in proc.stderr, lines
    assert "Warning" not in proc.stderr, lines  # no BetaWarning and the like

    instance = DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        run = instance.get_run_by_id(out["run_id"])
        assert run is not None and run.status is DagsterRunStatus.FAILURE
        assert run.tags["codegen/request"] == "Write is_palindrome(s)."
        for name in ("request_spec", "solution_code", "documentation"):
            assert not instance.fetch_materializations(AssetKey(name), limit=1).records, name
    finally:
        instance.dispose()
    report = json.loads((Path(out["artifact_dir"]) / "report.json").read_text())
    assert report["status"] == "error" and report["reason"] == out["reason"]
