"""8 requests at once against the containerized deployment, with the daemon SIGKILLed and
restarted mid-way and one run's container SIGKILLed: every request still ends exactly once.

Eight, twice the instance's 4 concurrent request runs, so that the queue holds some back and
the daemon dies with runs queued and in flight; `benchmarks.deploy.deploy_load` drives larger
bursts for throughput."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import docker
import pytest

from codegen.deploy.load import FINISHED, leftover_containers, run_load
from codegen.sandbox.backends.docker import ABANDONED_AFTER_S, reap_leftovers

if TYPE_CHECKING:
    from tests.deploy.conftest import Deployment

# Eight runs, each in its own container, on a 2-core machine: minutes, not seconds.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(2400)]

CLI_REQUESTS, INBOX_REQUESTS = 2, 6


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def reaped_as_the_next_start_would(left: list[str]) -> dict[str, str]:
    """A run container killed between creating a sandbox container and starting it leaves
    that container "created": nothing ever ran in it, so auto-remove never fires, and the
    next sandbox start removes it (``reap_leftovers``) once ``ABANDONED_AFTER_S`` has passed
    since its creation. Waits for that and reaps as that start would. Returns the other
    leftovers' states (no reaper removes those: each is a defect)."""
    client = docker.from_env()
    found = client.api.containers(all=True, filters={"id": left})
    others = {c["Id"][:12]: c["State"] for c in found if c["State"] != "created"}
    created = [c["Created"] for c in found if c["State"] == "created"]
    if created:
        time.sleep(max(0.0, max(created) + ABANDONED_AFTER_S + 1.0 - time.time()))
        reap_leftovers(client)
    return others


def test_a_burst_survives_a_killed_daemon_and_a_killed_run_container(
    deployment: Deployment,
) -> None:
    result, cli = run_load(
        deployment.stack,
        deployment.home,
        cli_requests=CLI_REQUESTS,
        inbox_requests=INBOX_REQUESTS,
        faults=True,
    )
    print(json.dumps(result.summary(), indent=2))  # shown with -s, and on failure

    # Every CLI call printed its summary and exited 0 (the scripted model's code passes).
    for code, summary, stderr in cli:
        assert code == 0 and summary is not None, stderr
        assert summary["status"] == "passed"

    ids = [o.request_id for o in result.outcomes]
    assert len(ids) == CLI_REQUESTS + INBOX_REQUESTS
    assert len(set(ids)) == len(ids), "a request id appears twice"
    assert not [i for i in ids if i.startswith("(")], f"lost requests: {ids}"
    inbox = deployment.home / "inbox"
    assert not (inbox / "rejected").exists() or not any((inbox / "rejected").iterdir())
    assert not [p for p in inbox.iterdir() if p.is_file()], "an inbox file was never picked up"

    killed = {f["run_id"] for f in result.faults if f["fault"] == "run container SIGKILL"}
    assert len(killed) == 1 and any(f["fault"] == "daemon restarted" for f in result.faults)
    assert not result.unretried, json.dumps(result.unretried, indent=1)
    assert not result.stray_reports, result.stray_reports
    for outcome in result.outcomes:
        # One status and one report per request.
        assert outcome.report is not None, f"{outcome.request_id} has no report.json"
        assert outcome.report["status"] == "passed", outcome.report
        assert outcome.report["request_id"] == outcome.request_id
        runs = outcome.runs
        assert all(r["status"] in FINISHED for r in runs)
        succeeded = [r for r in runs if r["status"] == "SUCCESS"]
        assert len(succeeded) == 1, f"{outcome.request_id}: {[r['status'] for r in runs]}"
        if killed & {r["runId"] for r in runs}:
            # The killed run failed and Dagster's run retries launched it once more.
            [failed] = [r for r in runs if r["runId"] in killed]
            assert failed["status"] == "FAILURE"
            assert tags(succeeded[0]).get("dagster/parent_run_id") == failed["runId"]
            assert len(runs) == 2
        else:
            assert len(runs) == 1, f"{outcome.request_id} ran {len(runs)} times"
    assert sum(len(o.runs) for o in result.outcomes) == len(ids) + 1

    # The queue held the burst back: never more runs at once than the instance allows.
    summary = result.summary()
    assert summary["queue"]["max_queued"] > 0

    # Nothing left behind: no sandbox container of any container the load used, and every
    # run container removed (given the seconds Docker takes to remove an exited one); a
    # sandbox container the killed run created and never started goes at the next sandbox
    # start once it counts as abandoned, as it does in service.
    assert result.container_hosts
    left = leftover_containers(result.container_hosts)
    if left:
        assert not reaped_as_the_next_start_would(left)
        assert not leftover_containers(result.container_hosts, settle_s=5.0)
