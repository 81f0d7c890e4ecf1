"""A task file in-process and as a Dagster backfill: the same figures, the same cache.

    .venv/bin/python -m benchmarks.crew.task_set_backfill FILE [--mbpp] [--limit N]

On fresh data directories (and a fresh Dagster home for the backfill), through the CLI:

1. ``in_process``  ``codegen eval tasks FILE --canonical --json`` (``mbpp --tasks`` with
   ``--mbpp``), nothing cached;
2. ``backfill``    the same with ``--backfill`` in another fresh home: the file is staged,
   its tasks become dynamic partitions ``<digest>:<task>``, runs execute in their own
   processes;
3. ``after``       the in-process command again in the backfill's home: every task a cache hit.

Prints one JSON object: each run's figures (pass@k, solved, scored, failures, canonical
failures), wall time, and ``figures_equal`` (all three identical).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIGURES = (
    "pass_at_k",
    "tasks_scored",
    "samples",
    "passed_samples",
    "solved_tasks",
    "missing",
    "failures_by_category",
    "canonical_failures",
)


def run(home: Path, command: list[str]) -> tuple[dict[str, object], float]:
    env = {
        **os.environ,
        "CODEGEN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster_home"),
        "CODEGEN_CORPUS__BUILD_ON_FIRST_RUN": "false",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "codegen", "eval", *command, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {tail[0]}")
    return json.loads(done.stdout), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task_file", type=Path)
    parser.add_argument("--mbpp", action="store_true", help="codegen eval mbpp --tasks FILE")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()

    base = ["mbpp", "--tasks", str(args.task_file)] if args.mbpp else ["tasks", str(args.task_file)]
    base += ["--canonical"] + (["--limit", str(args.limit)] if args.limit else [])
    homes = [Path(tempfile.mkdtemp(prefix="codegen-taskset-")) for _ in range(2)]
    result: dict[str, object] = {"command": base, "cpus": os.cpu_count()}
    figures = {}
    for label, home, extra in (
        ("in_process", homes[0], []),
        ("backfill", homes[1], ["--backfill"]),
        ("after", homes[1], []),
    ):
        found, wall = run(home, base + extra)
        figures[label] = {k: found.get(k) for k in FIGURES}
        result[label] = {
            "pass_at_k": found.get("pass_at_k"),
            "solved_tasks": found.get("solved_tasks"),
            "tasks_scored": found.get("tasks_scored"),
            "canonical_failures": len(found.get("canonical_failures") or []),  # type: ignore[arg-type]
            "cached_tasks": found.get("cached_tasks"),
            "backfill_status": found.get("backfill_status"),
            "task_set": found.get("task_set"),
            "wall_s": round(wall, 2),
        }
        print(f"{label}: {result[label]}", file=sys.stderr)
    result["figures_equal"] = figures["in_process"] == figures["backfill"] == figures["after"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
