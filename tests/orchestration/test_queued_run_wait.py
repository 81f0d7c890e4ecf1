"""`codegen generate` on the daemon's queue: a failed run is final only once Dagster has said
it will not retry it. Dagster stores a run's FAILURE before its `will_retry` verdict, so a CLI
that polls in between must wait for the verdict, then for the retry."""

from __future__ import annotations

import threading
import time

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, instance_for_test

from codegen.orchestration.cli.generate import _wait_for_queued_run
from codegen.orchestration.dagster_private import WILL_RETRY_TAG

REQUEST = "r-0001"
RETRIES = {"run_retries": {"enabled": True, "max_retries": 1}}


def add_run(instance: DagsterInstance, status: DagsterRunStatus, **tags: str) -> str:
    run = DagsterRun(
        job_name="request_job", status=status, tags={"dagster/partition": REQUEST, **tags}
    )
    instance.add_run(run)
    return run.run_id


def test_a_failure_waits_for_the_retry_verdict_then_for_the_retry() -> None:
    with instance_for_test(overrides=RETRIES) as instance:
        lost = add_run(instance, DagsterRunStatus.FAILURE)  # no verdict yet
        retried: list[str] = []

        def retry_daemon() -> None:
            time.sleep(1.0)
            instance.add_run_tags(lost, {WILL_RETRY_TAG: "true"})
            time.sleep(1.0)
            retried.append(
                add_run(instance, DagsterRunStatus.SUCCESS, **{"dagster/parent_run_id": lost})
            )

        daemon = threading.Thread(target=retry_daemon)
        daemon.start()
        run_id, success = _wait_for_queued_run(instance, REQUEST, poll_s=0.1)
        daemon.join()
        assert (run_id, success) == (retried[0], True)


@pytest.mark.parametrize("verdict", ["false", None])
def test_a_failure_is_final_when_dagster_will_not_retry(verdict: str | None) -> None:
    # "false": Dagster said no; None: no verdict within the wait (its process died first).
    with instance_for_test(overrides=RETRIES) as instance:
        tags = {WILL_RETRY_TAG: verdict} if verdict else {}
        failed = add_run(instance, DagsterRunStatus.FAILURE, **tags)
        started = time.monotonic()
        result = _wait_for_queued_run(instance, REQUEST, poll_s=0.1, retry_verdict_wait_s=1.0)
        assert result == (failed, False)
        if verdict is None:
            assert time.monotonic() - started >= 1.0  # it did wait for a verdict


def test_without_run_retries_a_failure_is_final_at_once() -> None:
    with instance_for_test() as instance:
        failed = add_run(instance, DagsterRunStatus.FAILURE)
        assert _wait_for_queued_run(instance, REQUEST, poll_s=0.1) == (failed, False)
