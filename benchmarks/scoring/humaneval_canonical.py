"""HumanEval canonical verification: 164 solutions through our sandbox, two ways.

    .venv/bin/python -m benchmarks.scoring.humaneval_canonical [--limit N] [--skip-backfill]

1. ``direct``   (the baseline): the in-process path of ``codegen eval humaneval --canonical``,
   on a fresh data directory, so nothing is cached;
2. ``cached``   the same command again: every task is a cache hit;
3. ``backfill`` a real Dagster asset backfill of ``humaneval_canonical`` (all partitions) plus
   ``humaneval_summary`` on a fresh instance: runs in their own processes, pools enforced, and
   the ``canonical_verified`` check evaluated on the summary.

Prints one JSON object; ``backfill_over_direct`` is the price of the orchestration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--skip-backfill", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="codegen-humaneval-"))
    os.environ["CODEGEN_HOME"] = str(home)
    os.environ.setdefault("CODEGEN_ENV", "local")

    from codegen.evaluation.harness import CANONICAL, evaluate
    from codegen.evaluation.humaneval import select_keys
    from codegen.evaluation.report import summarize
    from codegen.orchestration.launch import open_session, sandbox_resource
    from codegen.settings import get_settings

    settings = get_settings()
    keys = select_keys(args.limit)
    result: dict[str, object] = {
        "tasks": len(keys),
        "workers": settings.eval.workers,
        "sandbox_pool_size": settings.sandbox.pool_size,
        "cpus": os.cpu_count(),
    }
    for label in ("direct", "cached"):
        started = time.perf_counter()
        s = open_session(settings, None, CANONICAL)
        with sandbox_resource(settings).open() as box:
            outcomes, errors = evaluate(
                s.store, s.config, keys, s.generator(box), box, workers=s.workers
            )
            result["backend"] = box.backend
            summary = summarize(s.store, s.config.config_id, CANONICAL, keys)
        wall = time.perf_counter() - started
        result[label] = {
            "passed": summary.passed_samples,
            "scored": summary.tasks_scored,
            "pass@1": summary.pass_at_1,
            "errors": len(errors),
            "cache_hits": sum(o.generation_cached and o.scoring_cached for o in outcomes),
            "wall_s": round(wall, 2),
            "s_per_task": round(wall / len(keys), 3),
        }
        print(f"{label}: {result[label]}", file=sys.stderr)

    if not args.skip_backfill:
        from codegen.orchestration.backfill import stdout_to_stderr

        with stdout_to_stderr():  # Dagster's child processes log to stdout; keep it for JSON
            result["backfill"] = run_backfill(home, keys)
        direct = result["direct"]["wall_s"]  # type: ignore[index]
        result["backfill_over_direct"] = round(result["backfill"]["wall_s"] / direct, 2)  # type: ignore[index]
    print(json.dumps(result, indent=2))


def run_backfill(home: Path, keys: list[str]) -> dict[str, object]:
    import shutil

    from dagster import AssetCheckKey, AssetKey, instance_for_test

    from codegen.orchestration.backfill import configure_pools, drive_backfill, submit_backfill
    from codegen.orchestration.definitions import build_definitions
    from codegen.settings import get_settings

    shutil.rmtree(home / "eval", ignore_errors=True)  # no cache from the direct runs
    get_settings.cache_clear()
    overrides = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}
    started = time.perf_counter()
    with instance_for_test(overrides=overrides) as instance:
        configure_pools(instance, get_settings())
        backfill_id = submit_backfill(
            instance,
            build_definitions(),
            [AssetKey("humaneval_canonical"), AssetKey("humaneval_summary")],
            keys,
            title="canonical verification",
        )
        progress = drive_backfill(
            instance,
            backfill_id,
            timeout_s=3600,
            on_progress=lambda p: print(f"backfill: {p}", file=sys.stderr),
        )
        wall = time.perf_counter() - started
        event = instance.get_latest_materialization_event(AssetKey("humaneval_summary"))
        meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
        checks = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(AssetKey("humaneval_summary"), "canonical_verified"), limit=1
        )
        check = checks[0].event.dagster_event.event_specific_data if checks else None
        return {
            "status": progress.status,
            "runs": progress.runs,
            "runs_failed": progress.runs_failed,
            "partitions_materialized": len(
                instance.get_materialized_partitions(AssetKey("humaneval_canonical"))
            ),
            "passed": meta["canonical_passed"].value if "canonical_passed" in meta else None,
            "canonical_verified_check": None if check is None else bool(check.passed),
            "wall_s": round(wall, 2),
            "s_per_task": round(wall / len(keys), 3),
        }


if __name__ == "__main__":
    main()
