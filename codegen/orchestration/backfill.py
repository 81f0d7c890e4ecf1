"""Submit asset backfills and, where no daemon runs, drive them in this process.

Dagster 1.13 has no public Python call that launches an asset backfill (the UI and GraphQL
do it), so this module is the one place that touches the internals it needs:
``PartitionBackfill`` to create one, and the backfill daemon's own iteration (plus the
run-queue daemon's when the instance queues runs) to execute it exactly as ``dagster-daemon``
would: runs are launched by the instance's run launcher, in their own processes, and pools
are enforced by the instance. Checked against the installed dagster 1.13.27.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import AssetKey, DagsterInstance, Definitions

from codegen.orchestration.dagster_private import (
    BulkActionStatus,
    PartitionBackfill,
    make_new_backfill_id,
)
from codegen.orchestration.instance import KIND_EVALUATION, kind_tags
from codegen.settings import PROJECT_ROOT, Settings

if TYPE_CHECKING:
    from codegen.evaluation.session import BackfillPlan

CODE_MODULE = "codegen.orchestration.definitions"
LOCATION_NAME = "multiagent_codegen"
_DONE = {
    BulkActionStatus.COMPLETED,
    BulkActionStatus.COMPLETED_SUCCESS,
    BulkActionStatus.COMPLETED_FAILED,
    BulkActionStatus.FAILED,
    BulkActionStatus.CANCELED,
}


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 to stderr: Dagster's code servers and daemons, started as child
    processes, log to stdout, which belongs to our JSON and result lines."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def configure_pools(instance: DagsterInstance, settings: Settings) -> dict[str, int]:
    """Set the "llm" and "sandbox" pool limits from settings (dagster.yaml only has a default)."""
    from codegen.evaluation.session import LLM_POOL, SANDBOX_POOL

    limits = {
        LLM_POOL: settings.eval.llm_concurrency,
        SANDBOX_POOL: settings.eval.sandbox_concurrency,
    }
    for pool, limit in limits.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)
    return limits


def submit_backfill(
    instance: DagsterInstance,
    defs: Definitions,
    asset_keys: Sequence[AssetKey],
    partition_keys: Sequence[str] | None,
    *,
    title: str,
    in_process: bool = True,
    kind: str = KIND_EVALUATION,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Record a backfill of ``asset_keys`` over ``partition_keys`` (None: all partitions);
    ``tags`` go on the backfill and every run it launches.

    Unpartitioned assets in the selection (the summary) run after all their upstream
    partitions, as in a backfill launched from the UI. ``in_process`` runs each run's steps in
    the run's own process: every evaluation run has one op (plus a check), so a process per
    step would only add an interpreter start-up (seconds on a busy 2-core machine).
    """
    backfill_id = make_new_backfill_id()
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=backfill_id,
        asset_graph=defs.resolve_asset_graph(),
        partition_names=list(partition_keys) if partition_keys is not None else None,
        asset_selection=list(asset_keys),
        backfill_timestamp=time.time(),
        # The run queue's limit for this kind of work applies.
        tags={**kind_tags(kind), **(tags or {})},
        dynamic_partitions_store=instance,
        all_partitions=partition_keys is None,
        title=title,
        description=None,
        run_config={"execution": {"config": {"in_process": {}}}} if in_process else None,
    )
    instance.add_backfill(backfill)
    return backfill_id


def submit_plan(
    instance: DagsterInstance, settings: Settings, plan: BackfillPlan
) -> tuple[str, dict[str, int]]:
    """Submit an evaluation's backfill (``codegen.evaluation.session``): its task file's
    partitions added, the pools set from settings; returns (backfill id, pool limits)."""
    from dagster import AssetKey

    from codegen.evaluation.session import TASK_SET_PARTITIONS
    from codegen.orchestration.definitions import build_definitions

    if plan.new_partitions:
        instance.add_dynamic_partitions(TASK_SET_PARTITIONS, plan.new_partitions)
    pools = configure_pools(instance, settings)
    backfill_id = submit_backfill(
        instance,
        build_definitions(),
        [AssetKey(k) for k in plan.selection],
        plan.partitions,
        title=plan.title,
        tags=plan.tags,
    )
    return backfill_id, pools


@dataclass
class BackfillProgress:
    status: str
    runs: int
    runs_done: int
    runs_failed: int


def backfill_progress(instance: DagsterInstance, backfill_id: str) -> BackfillProgress:
    from dagster import DagsterRunStatus, RunsFilter

    backfill = instance.get_backfill(backfill_id)
    runs = instance.get_runs(filters=RunsFilter.for_backfill(backfill_id))
    finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    return BackfillProgress(
        status=backfill.status.value if backfill else "UNKNOWN",
        runs=len(runs),
        runs_done=sum(r.status in finished for r in runs),
        runs_failed=sum(r.status == DagsterRunStatus.FAILURE for r in runs),
    )


def drive_backfill(
    instance: DagsterInstance,
    backfill_id: str,
    *,
    timeout_s: float = 3600.0,
    poll_s: float = 0.5,
    on_progress: Callable[[BackfillProgress], None] | None = None,
) -> BackfillProgress:
    """Execute a submitted backfill here, as the daemon would, until it finishes."""
    from dagster import QueuedRunCoordinator

    from codegen.orchestration.dagster_private import (
        ModuleTarget,
        QueuedRunCoordinatorDaemon,
        create_test_daemon_workspace_context,
        execute_backfill_iteration,
    )

    logger = logging.getLogger("codegen.backfill")
    target = ModuleTarget(
        module_name=CODE_MODULE,
        attribute="defs",
        working_directory=str(PROJECT_ROOT) if PROJECT_ROOT.exists() else os.getcwd(),
        location_name=LOCATION_NAME,
    )
    deadline = time.monotonic() + timeout_s
    queued = isinstance(instance.run_coordinator, QueuedRunCoordinator)
    last: BackfillProgress | None = None
    with create_test_daemon_workspace_context(target, instance) as ctx:
        queue_daemon = QueuedRunCoordinatorDaemon(interval_seconds=1) if queued else None
        try:
            while True:
                list(execute_backfill_iteration(ctx, logger))
                if queue_daemon is not None:
                    list(queue_daemon.run_iteration(ctx))
                progress = backfill_progress(instance, backfill_id)
                if on_progress and progress != last:
                    on_progress(progress)
                last = progress
                status = BulkActionStatus(progress.status) if progress.status != "UNKNOWN" else None
                if status in _DONE:
                    return progress
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"backfill {backfill_id} not finished after {timeout_s:.0f}s "
                        f"({progress.runs_done}/{progress.runs} runs done)"
                    )
                time.sleep(poll_s)
        finally:
            if queue_daemon is not None:
                queue_daemon.__exit__(None, None, None)
