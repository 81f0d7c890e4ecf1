"""Scoring's cost in this tree against a baseline tree, paired in one run (issue 46: at most
1.25x on HumanEval and on ClassEval; issue 38's first version compared one driver file).

Each side is a whole tree (a git worktree of another commit: its drivers, its host code, its
sandbox protocol), run as ``codegen eval humaneval --canonical`` and ``codegen eval classeval
--canonical`` in a subprocess of its own with PYTHONPATH set to the tree and a fresh
CODEGEN_HOME (no verdict cache), on the same backend and workers. Runs alternate: per round and
set the side that goes first swaps, so a load that drifts during the run weighs on both. The
wall time is the evaluation's own (``wall_s`` of its JSON: no interpreter start). Prints one
JSON object: per set each side's wall seconds summed over the rounds, their ratio (this tree
over the baseline), the per-round ratios and their median, the solved counts (and ClassEval's
isolated verdicts), the load average at each run's start, and whether the ratio is within
1.25. The ratio means something on a quiet machine only: at load 7 to 11, two identical trees
measured 1.21 on 40 HumanEval tasks (rounds 1.66 and 0.99) and 1.05 on 16 ClassEval tasks.

    .venv/bin/python -m benchmarks.scoring.isolation_cost --baseline-tree /tmp/old-3b8c0a5
        [--tree .] [--sets humaneval,classeval] [--humaneval-limit 40] [--classeval-limit 16]
        [--rounds 2] [--backend docker] [--classeval-tasks FILE]

``--old-rev REV`` (the recorded form) makes a worktree of REV the baseline and ``--limit N``
is ``--humaneval-limit``. The full sets: ``--humaneval-limit 164 --classeval-limit 100``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, SHARED, machine
from benchmarks.pick.move_unchanged import worktree

ACCEPTED_RATIO = 1.25
SETS = ("humaneval", "classeval")
CLI = "import sys\nfrom codegen.orchestration.cli import main\nsys.exit(main(sys.argv[1:]))"


def python_of(tree: Path) -> str:
    venv = tree / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def evaluation(name: str, args: argparse.Namespace) -> list[str]:
    """The ``codegen eval`` arguments of one set."""
    if name == "humaneval":
        return ["eval", "humaneval", "--canonical", "--limit", str(args.humaneval_limit)]
    tasks = ["--tasks", str(args.classeval_tasks), "--limit", str(args.classeval_limit)]
    return ["eval", "classeval", *tasks, "--canonical"]


def run_side(tree: Path, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One set scored by ``tree`` from an empty home: its wall time and what it solved."""
    with tempfile.TemporaryDirectory(prefix=f"isolation-cost-{name}-") as home:
        env = {**os.environ, "PYTHONPATH": str(tree), "CODEGEN_HOME": home}
        env.update({"DAGSTER_HOME": home, "CODEGEN_SANDBOX__BACKEND": args.backend})
        env["CODEGEN_SANDBOX__PACKAGE_SET"] = "classeval" if name == "classeval" else "default"
        command = [python_of(tree), "-c", CLI, *evaluation(name, args), "--json"]
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True)
        measured = time.perf_counter() - started
    try:
        out = json.loads(done.stdout)
    except ValueError:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])[-300:]
        raise SystemExit(
            f"isolation_cost: error: {name} in {tree} (exit {done.returncode}): {tail}"
        ) from None
    side = {
        "wall_s": float(out.get("wall_s") or measured),
        "solved": out.get("solved_tasks"),
        "scored": out.get("tasks_scored"),
        "load_1m": round(load, 2),
    }
    figures = out.get("classeval") or {}
    if "verdicts" in figures:
        side["verdicts_isolated"] = f"{figures.get('verdicts_isolated')} of {figures['verdicts']}"
    return side


def paired(
    trees: dict[str, Path], name: str, index: int, args: argparse.Namespace
) -> dict[str, Any]:
    """``args.rounds`` runs of each side (``trees``: current, baseline) on one set, alternating
    which goes first."""
    runs: dict[str, list[dict[str, Any]]] = {"current": [], "baseline": []}
    for round_ in range(args.rounds):
        order = ["baseline", "current"] if (round_ + index) % 2 == 0 else ["current", "baseline"]
        for which in order:
            runs[which].append(run_side(trees[which], name, args))
    pairs = zip(runs["current"], runs["baseline"], strict=True)
    rounds = [round(c["wall_s"] / b["wall_s"], 3) for c, b in pairs]
    current = sum(r["wall_s"] for r in runs["current"])
    base = sum(r["wall_s"] for r in runs["baseline"])
    ratio = current / base
    return {
        "current_s": round(current, 2),
        "baseline_s": round(base, 2),
        "ratio": round(ratio, 3),
        "within_1.25": ratio <= ACCEPTED_RATIO,
        "round_ratios": rounds,
        "median_round_ratio": round(statistics.median(rounds), 3),
        "current": runs["current"],
        "baseline": runs["baseline"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline-tree", type=Path, help="a checkout of the commit to compare with"
    )
    parser.add_argument("--old-rev", help="the baseline as a commit (a worktree under /tmp)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the tree measured (default: this)")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--humaneval-limit", "--limit", type=int, default=40)
    parser.add_argument("--classeval-limit", type=int, default=16)
    parser.add_argument(
        "--classeval-tasks", type=Path, default=SHARED / "datasets/classeval/ClassEval_data.json.gz"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    args = parser.parse_args()
    if (args.baseline_tree is None) == (args.old_rev is None):
        print(
            "isolation_cost: error: give one of --baseline-tree DIR and --old-rev REV",
            file=sys.stderr,
        )
        return 2
    baseline = args.baseline_tree or worktree(args.old_rev)
    chosen = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SETS]
    if unknown or not chosen:
        print(
            f"isolation_cost: error: unknown set {unknown[:1]}; choose from {', '.join(SETS)}",
            file=sys.stderr,
        )
        return 2
    for tree in (args.tree, baseline):
        if not (tree / "codegen" / "__init__.py").is_file():
            print(f"isolation_cost: error: {tree} is not a checkout (no codegen/)", file=sys.stderr)
            return 2
    if "classeval" in chosen and not args.classeval_tasks.is_file():
        print(
            f"isolation_cost: error: no ClassEval task file {args.classeval_tasks}", file=sys.stderr
        )
        return 2
    if args.rounds < 1:
        print("isolation_cost: error: --rounds must be at least 1", file=sys.stderr)
        return 2
    trees = {"current": args.tree.resolve(), "baseline": baseline.resolve()}
    report = {
        "tree": str(trees["current"]),
        "baseline_tree": str(trees["baseline"]),
        "machine": machine(),
        "backend": args.backend,
        "rounds": args.rounds,
        "limits": {"humaneval": args.humaneval_limit, "classeval": args.classeval_limit},
        "sets": {name: paired(trees, name, i, args) for i, name in enumerate(chosen)},
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
