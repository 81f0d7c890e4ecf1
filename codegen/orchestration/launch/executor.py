"""An in-process executor that runs independent steps at the same time, on threads.

Dagster's ``in_process_executor`` runs one step after another, so the test designer waits for
the programmer; its ``multiprocess_executor`` runs them side by side but pays a process per
step (fork, instance, plan, resource init: 2-5 s each on the loaded 2-core CI machine, nine
steps per request). A request's steps mostly wait on the model, so threads in one process
give the parallelism without that cost: resources (the sandbox pool among them) are built
once per run, and the event log is written from one process.

The scheduling is Dagster's own: ``ActiveExecution`` decides which steps are ready, honours
retries, ``max_concurrent``, tag limits and instance pools (``pool=`` on an op), and
``dagster_event_sequence_for_step`` runs each step exactly as the in-process executor does.
Only the loop that starts steps and relays their events is ours. Steps must be thread-safe,
which the crew's are (each call builds its own client; sandboxes are shared by design).
"""

from __future__ import annotations

import itertools
import os
import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial

from dagster import (
    DagsterEvent,
    Executor,
    Field,
    InitExecutorContext,
    Int,
    StepExecutionContext,
    executor,
)

from codegen.orchestration.dagster_private import (
    EngineEventData,
    ExecuteRunWithPlanIterable,
    ExecutionPlan,
    InstanceConcurrencyContext,
    PlanExecutionContext,
    PlanExecutionContextManager,
    PlanOrchestrationContext,
    RetryMode,
    StepDependencyConfig,
    _trigger_hook,
    create_compute_log_file_key,
    dagster_event_sequence_for_step,
    get_retries_config,
    get_step_dependency_config_field,
)

DEFAULT_MAX_CONCURRENT = 8


class _StepCrashed:
    """A step's worker raised outside Dagster's own error handling (a framework error)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Done:
    """A worker's last message for its step."""


_DONE = _Done()
# What a worker sends the orchestrating thread: its submission token and an event of the step,
# the step's crash, or that it is done.
StepMessage = tuple[int, DagsterEvent | _StepCrashed | _Done]


def _run_step(
    token: int, step_context: StepExecutionContext, events: queue.Queue[StepMessage]
) -> None:
    try:
        for event in dagster_event_sequence_for_step(step_context):
            events.put((token, event))
    except BaseException as exc:  # relayed to the orchestrating thread, which re-raises it
        events.put((token, _StepCrashed(exc)))
    finally:
        events.put((token, _DONE))


def threaded_execution_iterator(
    job_context: PlanExecutionContext, execution_plan: ExecutionPlan, max_concurrent: int
) -> Iterator[DagsterEvent]:
    """``inner_plan_execution_iterator`` with up to ``max_concurrent`` steps in flight."""
    compute_log_manager = job_context.instance.compute_log_manager
    step_keys = [step.key for step in execution_plan.get_steps_to_execute_in_topo_order()]
    events: queue.Queue[StepMessage] = queue.Queue()
    # By submission, not step key: a retried step is submitted again, possibly before the
    # thread of its failed attempt has sent its last message.
    running: dict[int, tuple[StepExecutionContext, list[DagsterEvent]]] = {}
    submitted = itertools.count()
    with ExitStack() as stack:
        concurrency = stack.enter_context(
            InstanceConcurrencyContext(job_context.instance, job_context.dagster_run)
        )
        active = stack.enter_context(
            execution_plan.start(
                retry_mode=job_context.retry_mode,
                max_concurrent=max_concurrent,
                instance_concurrency_context=concurrency,
                step_dependency_config=job_context.step_dependency_config,
            )
        )
        log_key = compute_log_manager.build_log_key_for_run(
            job_context.run_id, create_compute_log_file_key()
        )
        log_context = stack.enter_context(compute_log_manager.capture_logs(log_key))
        yield DagsterEvent.capture_logs(job_context, step_keys, log_key, log_context)
        pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="dagster-step")
        )
        stopping = False
        while running or not (stopping or active.is_complete):
            if not stopping and active.check_for_interrupts():
                # Threads cannot be stopped from outside: running steps finish, none start.
                stopping = True
                active.mark_interrupted()
                yield DagsterEvent.engine_event(
                    job_context,
                    "Threaded executor: interrupted; waiting for running steps to finish",
                    EngineEventData.interrupted([c.step.key for c, _ in running.values()]),
                )
            if not stopping:
                for step in active.get_steps_to_execute(limit=max_concurrent - len(running)):
                    step_context = job_context.for_step(step, active.get_known_state())
                    token = next(submitted)
                    running[token] = (step_context, [])
                    pool.submit(_run_step, token, step_context, events)
                yield from active.concurrency_event_iterator(job_context)
            if not running:
                yield from active.plan_events_iterator(job_context)
                if not stopping:
                    active.sleep_til_ready()  # waiting on a retry delay or a pool slot
                continue
            token, item = events.get()
            step_context, step_events = running[token]
            if isinstance(item, _StepCrashed):
                raise item.error
            if item is not _DONE:
                step_events.append(item)
                yield item
                active.handle_event(item)
                continue
            del running[token]
            key = step_context.step.key
            if not any(other.step.key == key for other, _ in running.values()):
                # (A retry of this step already running is its own attempt, not a loss.)
                active.verify_complete(job_context, key)
            for event in active.plan_events_iterator(job_context):
                step_events.append(event)
                yield event
            yield from _trigger_hook(step_context, step_events)


class ThreadedInProcessExecutor(Executor):
    def __init__(
        self,
        retries: RetryMode,
        max_concurrent: int,
        step_dependency_config: StepDependencyConfig | None = None,
    ) -> None:
        self._retries = retries
        self.max_concurrent = max_concurrent
        self._step_dependency_config = step_dependency_config or StepDependencyConfig.default()

    @property
    def retries(self) -> RetryMode:
        return self._retries

    @property
    def step_dependency_config(self) -> StepDependencyConfig:
        return self._step_dependency_config

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        yield DagsterEvent.engine_event(
            plan_context,
            f"Executing steps on up to {self.max_concurrent} threads (pid: {os.getpid()})",
            event_specific_data=EngineEventData.in_process(
                os.getpid(), execution_plan.step_keys_to_execute
            ),
        )
        yield from ExecuteRunWithPlanIterable(
            execution_plan=plan_context.execution_plan,
            iterator=partial(threaded_execution_iterator, max_concurrent=self.max_concurrent),
            execution_context_manager=PlanExecutionContextManager(
                job=plan_context.job,
                retry_mode=plan_context.retry_mode,
                execution_plan=plan_context.execution_plan,
                run_config=plan_context.run_config,
                dagster_run=plan_context.dagster_run,
                instance=plan_context.instance,
                raise_on_error=plan_context.raise_on_error,
                output_capture=plan_context.output_capture,
                step_dependency_config=self.step_dependency_config,
            ),
        )


@executor(
    name="threaded_in_process",
    config_schema={
        "retries": get_retries_config(),
        "max_concurrent": Field(
            Int,
            default_value=DEFAULT_MAX_CONCURRENT,
            description="Steps running at once (they mostly wait on the model or the sandbox).",
        ),
        "step_dependency_config": get_step_dependency_config_field(),
    },
)
def threaded_in_process_executor(init_context: InitExecutorContext) -> ThreadedInProcessExecutor:
    """All steps in the run's process, independent ones at the same time on threads."""
    config = init_context.executor_config
    return ThreadedInProcessExecutor(
        retries=RetryMode.from_config(config["retries"]),  # type: ignore[arg-type]
        max_concurrent=int(config["max_concurrent"]),  # type: ignore[arg-type]
        step_dependency_config=StepDependencyConfig.from_config(
            config.get("step_dependency_config")  # type: ignore[arg-type]
        ),
    )
