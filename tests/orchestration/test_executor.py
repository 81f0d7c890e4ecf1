"""The threaded in-process executor on a real instance: parallel steps, failures, retries."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from dagster import (
    DagsterEventType,
    DagsterInstance,
    Failure,
    In,
    Nothing,
    RetryPolicy,
    execute_job,
    instance_for_test,
    job,
    op,
    reconstructable,
)

from codegen.orchestration.instance import storage_overrides
from codegen.orchestration.launch import threaded_in_process_executor

pytestmark = pytest.mark.dagster_instance

ATTEMPTS: dict[str, int] = {}
LOCK = threading.Lock()


@op
def slow_a() -> None:
    time.sleep(1.0)


@op
def slow_b() -> None:
    time.sleep(1.0)


@op(ins={"a": In(Nothing), "b": In(Nothing)})
def after_both() -> None:
    pass


@op
def broken() -> None:
    raise Failure("broken on purpose")


@op(ins={"upstream": In(Nothing)})
def never_runs() -> None:
    raise AssertionError("a step downstream of a failure ran")


@op(retry_policy=RetryPolicy(max_retries=2))
def flaky() -> int:
    with LOCK:
        ATTEMPTS["flaky"] = ATTEMPTS.get("flaky", 0) + 1
        attempt = ATTEMPTS["flaky"]
    if attempt < 3:
        raise RuntimeError(f"attempt {attempt} fails")
    return attempt


@job(executor_def=threaded_in_process_executor)
def parallel_job() -> None:
    after_both(a=slow_a(), b=slow_b())


@job(executor_def=threaded_in_process_executor)
def failing_job() -> None:
    never_runs(upstream=broken())
    slow_a()


@job(executor_def=threaded_in_process_executor)
def flaky_job() -> None:
    flaky()


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test(overrides=storage_overrides()) as inst:
        yield inst


def step_windows(instance: DagsterInstance, run_id: str) -> dict[str, tuple[float, float]]:
    starts, ends = {}, {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type is DagsterEventType.STEP_START:
            starts[entry.step_key] = entry.timestamp
        elif event.event_type is DagsterEventType.STEP_SUCCESS:
            ends[entry.step_key] = entry.timestamp
    return {key: (starts[key], ends[key]) for key in ends}


def test_independent_steps_run_at_the_same_time(instance: DagsterInstance) -> None:
    result = execute_job(reconstructable(parallel_job), instance=instance)
    assert result.success
    windows = step_windows(instance, result.run_id)
    (a0, a1), (b0, b1), (c0, _) = windows["slow_a"], windows["slow_b"], windows["after_both"]
    assert min(a1, b1) > max(a0, b0), "the two independent steps did not overlap"
    assert c0 >= max(a1, b1), "the downstream step started before its inputs were done"


def test_max_concurrent_one_runs_steps_one_after_another(instance: DagsterInstance) -> None:
    config = {"execution": {"config": {"max_concurrent": 1}}}
    result = execute_job(reconstructable(parallel_job), instance=instance, run_config=config)
    assert result.success
    windows = step_windows(instance, result.run_id)
    (a0, a1), (b0, b1) = windows["slow_a"], windows["slow_b"]
    assert min(a1, b1) <= max(a0, b0)


def test_a_failure_skips_what_depends_on_it_and_fails_the_run(instance: DagsterInstance) -> None:
    result = execute_job(reconstructable(failing_job), instance=instance, raise_on_error=False)
    assert not result.success
    assert {e.step_key for e in result.get_step_failure_events()} == {"broken"}
    started = {e.step_key for e in result.all_events if e.event_type is DagsterEventType.STEP_START}
    assert "never_runs" not in started  # abandoned, as with Dagster's own executors
    assert "slow_a" in {e.step_key for e in result.get_step_success_events()}


def test_retry_policies_are_honoured(instance: DagsterInstance) -> None:
    ATTEMPTS.clear()
    with execute_job(reconstructable(flaky_job), instance=instance) as result:
        assert result.success
        assert result.output_for_node("flaky") == 3
