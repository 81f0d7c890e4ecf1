"""The private Dagster APIs the project relies on: each named here, each still where we take it.

A Dagster release that moves or renames one fails the test that names it, instead of a run.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import codegen
from codegen.orchestration import dagster_private

RELIED_ON = {
    # The threaded in-process executor (orchestration/launch/executor.py).
    "EngineEventData": "dagster._core.events",
    "ExecuteRunWithPlanIterable": "dagster._core.execution.api",
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
    # SQLite storage over long-lived connections (orchestration/instance/storage.py).
    "DagsterStorage": "dagster._core.storage.base_storage",
    "SqliteEventLogStorage": "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "INDEX_SHARD_NAME": "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "SqliteRunStorage": "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "SqliteScheduleStorage": "dagster._core.storage.schedules",
    "SQLITE_BUSY_TIMEOUT_SECONDS": "dagster._core.storage.sqlite",
    "DagsterSqliteStorage": "dagster._core.storage.sqlite_storage",
    "_event_logs_directory": "dagster._core.storage.sqlite_storage",
    "_runs_directory": "dagster._core.storage.sqlite_storage",
    "_schedule_directory": "dagster._core.storage.sqlite_storage",
    "ConfigurableClass": "dagster._serdes",
    "ConfigurableClassData": "dagster._serdes",
    # Backfills driven in process (orchestration/backfill.py).
    "BulkActionStatus": "dagster._core.execution.backfill",
    "PartitionBackfill": "dagster._core.execution.backfill",
    "make_new_backfill_id": "dagster._core.utils",
    "create_test_daemon_workspace_context": "dagster._core.test_utils",
    "ModuleTarget": "dagster._core.workspace.load_target",
    "execute_backfill_iteration": "dagster._daemon.backfill",
    "QueuedRunCoordinatorDaemon": "dagster._daemon.run_coordinator.queued_run_coordinator_daemon",
    # Sensors and the review job select asset jobs by their unresolved definitions.
    "UnresolvedAssetJobDefinition": ("dagster._core.definitions.unresolved_asset_job_definition"),
    # codegen generate: whether a daemon serves, and whether a failed run will be retried.
    "get_daemon_statuses": "dagster._daemon.controller",
    "WILL_RETRY_TAG": "dagster._core.storage.tags",
    # The IO managers that refuse stale values (io_managers.py, gcs_io_manager.py).
    "PickledObjectFilesystemIOManager": "dagster._core.storage.fs_io_manager",
    "cached_method": "dagster._utils.cached_method",
}


def test_the_compatibility_module_lists_exactly_the_apis_named_here() -> None:
    assert dagster_private.PRIVATE_APIS == RELIED_ON


@pytest.mark.parametrize("name", sorted(RELIED_ON))
def test_each_private_api_is_still_where_we_take_it(name: str) -> None:
    module = importlib.import_module(RELIED_ON[name])
    assert getattr(dagster_private, name) is getattr(module, name)


def test_no_other_module_imports_private_dagster() -> None:
    package = Path(codegen.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "dagster_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("dagster._")]
    assert not offenders
