"""The shipped run queue with a real dagster-daemon: a burst of CLI requests waits its turn.

The request limit in $DAGSTER_HOME/dagster.yaml is lowered to 1 (the way the README says to
change it), three `codegen generate` start at once, and while they run the instance never
holds more than one started request run; each command still ends with its own report.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus

from codegen.orchestration.cli.generate import daemon_running
from codegen.orchestration.instance import INSTANCE_TEMPLATE, configured_instance
from codegen.replay.scripted import Reply, ScriptedOpenAIServer, primes_handler
from codegen.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ACTIVE = {DagsterRunStatus.STARTING, DagsterRunStatus.STARTED}

# Not in the Postgres re-run: the deployment load test drives the daemon on Postgres.
pytestmark = pytest.mark.docker


def slow_primes(role: str, body: dict[str, object]) -> Reply:
    # Long enough that the three runs would overlap if the queue let them.
    return Reply.delay(0.5, then=primes_handler(role, body))


def test_a_burst_of_cli_requests_queues_within_the_request_limit(isolated_home: Path) -> None:
    home = isolated_home / "dagster_home"
    config = yaml.safe_load(INSTANCE_TEMPLATE.read_text())
    for limit in config["concurrency"]["runs"]["tag_concurrency_limits"]:
        if limit["value"] == "request":
            limit["limit"] = 1
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    instance = configured_instance(get_settings())

    with ScriptedOpenAIServer(handler=slow_primes) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
        }
        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 180
            while not daemon_running(instance):
                assert daemon.poll() is None, "dagster-daemon exited"
                assert time.monotonic() < deadline, "the daemon never reported healthy"
                time.sleep(1)
            procs = [
                subprocess.Popen(
                    [str(BIN / "codegen"), "generate", f"Write primes_up_to(n) (#{i}).", "--json"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                )
                for i in range(3)
            ]
            most_active, ever_queued = 0, False
            while any(p.poll() is None for p in procs):
                runs = instance.get_runs()
                most_active = max(most_active, sum(r.status in ACTIVE for r in runs))
                ever_queued |= any(r.status is DagsterRunStatus.QUEUED for r in runs)
                time.sleep(0.5)
            outputs = [p.communicate() for p in procs]
        finally:
            os.killpg(daemon.pid, signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)

    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert "queued for the daemon" in err  # auto: a daemon serves the instance
    reports = [json.loads(out) for out, _ in outputs]
    assert [r["status"] for r in reports] == ["passed"] * 3
    runs = instance.get_runs()
    assert {r.run_id for r in runs} == {r["run_id"] for r in reports}
    assert all(r.tags.get("codegen/kind") == "request" for r in runs)
    assert most_active == 1 and ever_queued
