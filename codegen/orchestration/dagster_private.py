"""Every private Dagster API the project relies on, in one place.

Dagster keeps no compatibility promise for ``dagster._*``; these are the names the code location
needs that have no public equivalent in 1.13 (the custom executor, the SQLite storage with
long-lived connections, the in-process backfill driver, the daemon status check, the stale-
value IO managers). Importing them only from here makes an upgrade one file to read, and
``tests/orchestration/test_dagster_private.py`` names each one, so a release that moves one
fails there first with its name rather than deep inside a run.

Names resolve lazily (PEP 562 ``__getattr__``): the CLI imports this module for every command,
and the daemon and backfill internals are slow to import and needed by few commands.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the private module that defines it (dagster 1.13).
PRIVATE_APIS: dict[str, str] = {
    "UnresolvedAssetJobDefinition": "dagster._core.definitions.unresolved_asset_job_definition",
    "EngineEventData": "dagster._core.events",
    "ExecuteRunWithPlanIterable": "dagster._core.execution.api",
    "BulkActionStatus": "dagster._core.execution.backfill",
    "PartitionBackfill": "dagster._core.execution.backfill",
    "create_compute_log_file_key": "dagster._core.execution.compute_logs",
    "PlanExecutionContext": "dagster._core.execution.context.system",
    "PlanOrchestrationContext": "dagster._core.execution.context.system",
    "PlanExecutionContextManager": "dagster._core.execution.context_creation_job",
    "_trigger_hook": "dagster._core.execution.plan.execute_plan",
    "dagster_event_sequence_for_step": "dagster._core.execution.plan.execute_plan",
    "InstanceConcurrencyContext": "dagster._core.execution.plan.instance_concurrency_context",
    "ExecutionPlan": "dagster._core.execution.plan.plan",
    "RetryMode": "dagster._core.execution.retries",
    "get_retries_config": "dagster._core.execution.retries",
    "StepDependencyConfig": "dagster._core.execution.step_dependency_config",
    "get_step_dependency_config_field": "dagster._core.execution.step_dependency_config",
    "DagsterStorage": "dagster._core.storage.base_storage",
    "SqliteEventLogStorage": "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "INDEX_SHARD_NAME": "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "PickledObjectFilesystemIOManager": "dagster._core.storage.fs_io_manager",
    "SqliteRunStorage": "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "SqliteScheduleStorage": "dagster._core.storage.schedules",
    "SQLITE_BUSY_TIMEOUT_SECONDS": "dagster._core.storage.sqlite",
    "DagsterSqliteStorage": "dagster._core.storage.sqlite_storage",
    "_event_logs_directory": "dagster._core.storage.sqlite_storage",
    "_runs_directory": "dagster._core.storage.sqlite_storage",
    "_schedule_directory": "dagster._core.storage.sqlite_storage",
    "WILL_RETRY_TAG": "dagster._core.storage.tags",
    "create_test_daemon_workspace_context": "dagster._core.test_utils",
    "make_new_backfill_id": "dagster._core.utils",
    "ModuleTarget": "dagster._core.workspace.load_target",
    "execute_backfill_iteration": "dagster._daemon.backfill",
    "get_daemon_statuses": "dagster._daemon.controller",
    "QueuedRunCoordinatorDaemon": "dagster._daemon.run_coordinator.queued_run_coordinator_daemon",
    "ConfigurableClass": "dagster._serdes",
    "ConfigurableClassData": "dagster._serdes",
    "cached_method": "dagster._utils.cached_method",
}

if TYPE_CHECKING:
    pass


def __getattr__(name: str) -> Any:
    module = PRIVATE_APIS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


__all__ = sorted(PRIVATE_APIS)
