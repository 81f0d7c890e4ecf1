"""HumanEval through a real Dagster backfill: a real instance, runs in their own processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, instance_for_test

from codegen.evaluation.humaneval import task_keys
from codegen.orchestration.backfill import configure_pools, drive_backfill, submit_backfill
from codegen.orchestration.definitions import build_definitions
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.settings import get_settings
from codegen.testing.scripted_crew import make_handler

pytestmark = pytest.mark.docker
POOLS = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}


def latest_metadata(instance: DagsterInstance, key: str) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(AssetKey(key))
    assert event is not None and event.asset_materialization is not None, key
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def materialized_partitions(instance: DagsterInstance, key: str) -> set[str]:
    return set(instance.get_materialized_partitions(AssetKey(key)))


def failures(instance: DagsterInstance) -> list[str]:
    """Step failure messages of every run, for assertion messages."""
    from dagster import DagsterEventType

    found = []
    for run in instance.get_runs():
        kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
        for rec in instance.all_logs(run.run_id, of_type=kinds):
            data = rec.dagster_event.event_specific_data if rec.dagster_event else None
            found.append(str(getattr(data, "error", data))[:3000])
        found += [r.user_message for r in instance.all_logs(run.run_id) if "rror" in r.user_message]
    return found


def check_result(instance: DagsterInstance, name: str) -> Any:
    from dagster import AssetCheckKey

    records = instance.event_log_storage.get_asset_check_execution_history(
        AssetCheckKey(AssetKey("humaneval_summary"), name), limit=1
    )
    assert records, f"check {name} never ran"
    return records[0].event.dagster_event.event_specific_data


def test_backfill_scores_canonical_and_crew_partitions(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = task_keys()[30:34]
    with ScriptedOpenAIServer(handler=make_handler(solve=keys[:2])) as server:
        # Runs execute in other processes: they find the endpoint through the environment.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
        defs = build_definitions()
        with instance_for_test(overrides=POOLS) as instance:
            assert configure_pools(instance, get_settings()) == {"llm": 2, "sandbox": 2}
            selection = [
                "humaneval_canonical",
                "humaneval_samples",
                "humaneval_scores",
                "humaneval_summary",
            ]
            backfill_id = submit_backfill(
                instance, defs, [AssetKey(k) for k in selection], keys, title="subset"
            )
            progress = drive_backfill(instance, backfill_id, timeout_s=400)
            assert progress.status == "COMPLETED_SUCCESS", (progress, failures(instance))
            assert progress.runs_failed == 0
            for asset in selection[:3]:
                assert materialized_partitions(instance, asset) == set(keys), asset
            summary = latest_metadata(instance, "humaneval_summary")
            # Canonical: every scored task passes.
            assert summary["canonical_passed"] == 4 and summary["canonical_scored"] == 4
            # Crew: exactly the two tasks the scripted model solves.
            assert summary["pass@1"] == 0.5
            assert summary["crew_tasks_scored"] == 4
            rows = {r.data["task"]: r.data for r in summary["tasks"].records}
            assert {k: rows[k]["passed"] for k in keys} == dict.fromkeys(
                keys[:2], 1
            ) | dict.fromkeys(keys[2:], 0)
            by_category = {
                r.data["category"]: r.data["samples"]
                for r in summary["failures_by_category"].records
            }
            assert sum(by_category.values()) == 2 and by_category["crew_status"] == 0
            assert "data:image/png;base64," in summary["report"]
            assert Path(summary["plot"]).read_bytes().startswith(b"\x89PNG")
            # The self-check demands all 164: a subset, however clean, does not pass it.
            check = check_result(instance, "canonical_verified")
            assert check.passed is False
            assert check.metadata["passed"].value == 4
            assert check.metadata["not_scored"].value == 160
            assert instance.event_log_storage.get_concurrency_info("llm").slot_count == 2
        roles = {r.role for r in server.requests if r.method == "POST"}
        assert roles == {"analyzer", "test_designer", "programmer", "reviewer", "documenter"}
