"""The containerized deployment: up with `make deploy-docker`, the UI serving the code location,
and a request run in its own container from the worker image, on the Postgres instance."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from codegen.deploy.images import WORKER_TAG
from codegen.deploy.stack import LOCATION
from codegen.orchestration.launch import CODEGEN_JOB

if TYPE_CHECKING:
    from tests.deploy.conftest import Deployment

# The first test also brings the deployment up (the session fixture): a minute or two.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]

INSTANCE_QUERY = """
{
  instance {
    runLauncher { name }
    runQueuingSupported
    runQueueConfig { maxConcurrentRuns tagConcurrencyLimitsYaml }
    daemonHealth { allDaemonStatuses { daemonType required healthy } }
  }
}
"""
RUNS_QUERY = """
query Runs($partition: String!) {
  runsOrError(filter: {tags: [{key: "dagster/partition", value: $partition}]}) {
    ... on Runs { results { runId status tags { key value } } }
  }
}
"""


def drop_into_inbox(home: Path, name: str, text: str) -> None:
    inbox = home / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    partial = inbox / f"{name}.part"  # the sensor leaves *.part alone until the rename
    partial.write_text(text)
    partial.rename(inbox / name)


def wait_for(predicate, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def request_id_of(home: Path, name: str) -> str | None:
    processed = home / "inbox" / "processed"
    for path in processed.glob(f"*__{name}") if processed.is_dir() else []:
        return path.name.split("__", 1)[0]
    return None


def test_the_ui_serves_the_code_location_with_the_docker_launcher(deployment: Deployment) -> None:
    entry = deployment.stack.location()
    assert entry is not None and entry["loadStatus"] == "LOADED"
    loaded = entry["locationOrLoadError"]
    assert loaded["__typename"] == "RepositoryLocation", loaded
    jobs = {j["name"] for repo in loaded["repositories"] for j in repo["jobs"]}
    assert {CODEGEN_JOB, "submit_request_job"} <= jobs
    assert entry["name"] == LOCATION

    instance = deployment.graphql(INSTANCE_QUERY)["instance"]
    assert instance["runLauncher"]["name"] == "DockerRunLauncher"
    assert instance["runQueuingSupported"] is True
    # The shared instance file's queue limits reach the deployment (one definition).
    assert "codegen/kind" in instance["runQueueConfig"]["tagConcurrencyLimitsYaml"]

    def daemons_healthy() -> bool:
        health = deployment.graphql(INSTANCE_QUERY)["instance"]["daemonHealth"]
        required = [d for d in health["allDaemonStatuses"] if d["required"]]
        return bool(required) and all(d["healthy"] for d in required)

    wait_for(daemons_healthy, 120, "the daemon's heartbeats")


def test_an_inbox_request_runs_in_its_own_container_and_writes_its_report(
    deployment: Deployment,
) -> None:
    home = deployment.home
    drop_into_inbox(home, "primes.txt", "Write primes_up_to(n) returning the primes <= n.")
    request_id = wait_for(lambda: request_id_of(home, "primes.txt"), 120, "the inbox sensor")
    report_path = home / "artifacts" / request_id / "report.json"
    wait_for(report_path.exists, 300, f"{report_path}")
    report = json.loads(report_path.read_text())
    assert report["status"] == "passed" and report["tests_passed"] == report["tests_total"] > 0

    def finished_runs() -> list[dict]:
        runs = deployment.graphql(RUNS_QUERY, {"partition": request_id})["runsOrError"]["results"]
        return [r for r in runs if r["status"] in {"SUCCESS", "FAILURE", "CANCELED"}]

    [run] = wait_for(finished_runs, 120, "the run to finish")
    assert run["status"] == "SUCCESS"
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags["dagster/image"] == WORKER_TAG, tags
    assert tags["docker/container_id"]
    # The crew's LLM calls came from the run's container, through the bridge.
    roles = {r.role for r in deployment.server.requests}
    assert {"analyzer", "test_designer", "programmer", "reviewer", "documenter"} <= roles
