"""8 requests at once against the containerized deployment, with the daemon SIGKILLed and
restarted mid-way and one run's container SIGKILLed: every request still ends exactly once.

Eight, twice the instance's 4 concurrent request runs, so that the queue holds some back and
the daemon dies with runs queued and in flight; `benchmarks.deploy.deploy_load` drives larger
bursts for throughput."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from codegen.deploy.load import FINISHED, leftover_containers, run_load

if TYPE_CHECKING:
    from tests.deploy.conftest import Deployment

# Eight runs, each in its own container, on a 2-core machine: minutes, not seconds.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(2400)]

CLI_REQUESTS, INBOX_REQUESTS = 2, 6


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


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
    # run container removed (given the seconds Docker takes to remove an exited one).
    assert result.container_hosts
    assert not leftover_containers(result.container_hosts)
