"""The evaluation assets as the code location defines them: partitions, pools, jobs."""

from __future__ import annotations

from dagster import AssetKey

from codegen.orchestration.definitions import build_definitions


def test_partitions_pools_and_jobs() -> None:
    defs = build_definitions()
    pools = {}
    for name in ("humaneval_samples", "humaneval_scores", "humaneval_canonical"):
        assets_def = defs.resolve_assets_def(AssetKey(name))
        keys = assets_def.partitions_def.get_partition_keys()
        assert len(keys) == 164 and keys[0] == "HumanEval-0" and keys[-1] == "HumanEval-163"
        assert assets_def.backfill_policy.max_partitions_per_run == 41
        pools[name] = assets_def.op.pool
    # Generation talks to the LLM, scoring to the sandbox: separate concurrency limits.
    assert pools == {
        "humaneval_samples": "llm",
        "humaneval_scores": "sandbox",
        "humaneval_canonical": "sandbox",
    }
    summary = defs.resolve_assets_def(AssetKey("humaneval_summary"))
    assert summary.partitions_def is None
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get(AssetKey("humaneval_summary")).parent_keys} == {
        "humaneval_scores",
        "humaneval_canonical",
    }
    checks = {k.name for k in graph.asset_check_keys if k.asset_key.path == ["humaneval_summary"]}
    assert checks == {"canonical_verified"}
    for job in ("humaneval_crew_job", "humaneval_canonical_job", "humaneval_summary_job"):
        assert defs.resolve_job_def(job) is not None


def test_task_set_assets_share_one_dynamic_partitions_definition() -> None:
    defs = build_definitions()
    pools = {}
    for name in ("task_set_samples", "task_set_scores", "task_set_canonical"):
        assets_def = defs.resolve_assets_def(AssetKey(name))
        assert assets_def.partitions_def.name == "task_set_tasks"
        assert assets_def.backfill_policy.max_partitions_per_run == 41
        pools[name] = assets_def.op.pool
    assert pools == {
        "task_set_samples": "llm",
        "task_set_scores": "sandbox",
        "task_set_canonical": "sandbox",
    }
    graph = defs.resolve_asset_graph()
    for summary, parents in (
        ("task_set_summary", {"task_set_scores", "task_set_canonical"}),
        ("task_set_file_summary", {"task_set_file_scores"}),
    ):
        assert defs.resolve_assets_def(AssetKey(summary)).partitions_def is None
        assert {k.to_user_string() for k in graph.get(AssetKey(summary)).parent_keys} == parents
