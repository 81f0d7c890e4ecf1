"""Is the pick unchanged by a move? The same selection records re-picked by an older commit's
tree and by this one, each in a subprocess of its own with PYTHONPATH set to its tree.

    .venv/bin/python -m benchmarks.pick.move_unchanged [--commit e704e59] [--sets humaneval,mbpp]
        [--limit N] [--workers 2] [--tests] [--shared /work/shared]

Issue 47 moved ``codegen/agents/`` into rooms with the behaviour unchanged; e704e59 is the
commit before that move. For each set (MapCoder's recorded HumanEval runs, five candidates
per task; its MBPP runs, three) both trees run their own selection benchmark
(``benchmarks/selection.py`` there, ``benchmarks.pick.selection`` here) on one shared
execution cache: the older tree executes each task once in the sandbox, and this tree finds
every task's programs, tests and shared inputs already executed only when it builds the same
ones (``executed_tasks`` 0 on its side). Every rule's call is recorded: per task and rule, the
share of correct members in the group picked and whether the rule calls it passing, with and
without the suspect checks. Prints one JSON object: per set, whether those picks and the
summary figures (timings left out) are identical, with counts; on whole sets also this
tree's tasks solved per rule against the stored record (benchmarks/results/); with
``--tests`` the number of tests each tree's pytest collects.

The older tree is a git worktree under /tmp, made once and kept (``git worktree remove``
drops it). Not part of the test run: it executes every task in the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, ROOT, SHARED

# Each set's arguments to the selection benchmark, under the shared data folder.
SETS = {
    "humaneval": ["--mapcoder", "replays/mapcoder"],
    "mbpp": [
        "--mapcoder",
        "replays/mapcoder-mbpp",
        "--mbpp-set",
        "datasets/mbpp/mbpp-multiple-397.jsonl",
    ],
}
# Figures of a run that measure the machine, not the pick.
TIMINGS = ("execution_seconds", "load_average", "executed_tasks", "sandbox_seconds_per_task_at_100")

# Runs in each tree's subprocess: its selection main() with every rule wrapped to record what
# it returns, in call order (task by task, rule by rule); prints the run's JSON and the record.
RECORDER = r"""
import contextlib, io, json, sys
module_name, *argv = sys.argv[1:]
selection = __import__(module_name, fromlist=["main"])
original = selection.strategies
picks = {}

def recorded(name, rule):
    def run(draw):
        got = rule(draw)
        picks.setdefault(name, []).append(
            [round(got.share, 9), got.passing, got.passing_with_suspect]
        )
        return got
    return run

def strategies(reliability=None):
    return {name: recorded(name, rule) for name, rule in original(reliability).items()}

selection.strategies = strategies
sys.argv = ["selection", *argv]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    selection.main()
print(json.dumps({"summary": json.loads(out.getvalue()), "picks": picks}))
"""


def worktree(commit: str) -> Path:
    """A git worktree of ``commit`` under /tmp (made once, then reused)."""
    tree = Path("/tmp") / f"move-unchanged-{commit}"
    if not (tree / "codegen").is_dir():
        done = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"move_unchanged: error: no worktree of {commit}: {done.stderr}")
    return tree


def selection_of(tree: Path) -> tuple[str, str]:
    """The selection module's import name in ``tree`` and the PYTHONPATH that finds it."""
    if (tree / "benchmarks" / "selection.py").is_file():  # the flat scripts of before
        return "selection", os.pathsep.join((str(tree), str(tree / "benchmarks")))
    return "benchmarks.pick.selection.__main__", str(tree)


def run_set(tree: Path, args: list[str], cache: Path, workers: int) -> dict[str, Any]:
    module, path = selection_of(tree)
    command = [sys.executable, "-c", RECORDER, module, *args, "--cache", str(cache)]
    command += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"move_unchanged: error: selection in {tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compared(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Per rule and task, whether the two trees' picks agree; and the summaries'."""
    rules = sorted(set(old["picks"]) | set(new["picks"]))
    differing = {
        rule: sum(
            a != b
            for a, b in zip(old["picks"].get(rule, []), new["picks"].get(rule, []), strict=False)
        )
        + abs(len(old["picks"].get(rule, [])) - len(new["picks"].get(rule, [])))
        for rule in rules
    }
    summary = [{k: v for k, v in s["summary"].items() if k not in TIMINGS} for s in (old, new)]
    changed = sorted(
        k for k in summary[0].keys() | summary[1].keys() if summary[0].get(k) != summary[1].get(k)
    )
    return {
        "identical": not any(differing.values()) and not changed,
        "tasks": new["summary"]["tasks"],
        "rules": len(rules),
        "picks_compared": sum(len(v) for v in new["picks"].values()),
        "picks_differing": {rule: n for rule, n in differing.items() if n},
        "rules_only_in_one": sorted(set(old["picks"]) ^ set(new["picks"])),
        "summary_fields_differing": changed,
        "executed_tasks": {
            "old": old["summary"]["executed_tasks"],
            "new": new["summary"]["executed_tasks"],
        },
        "solved_weighted_checks": {
            "old": old["summary"]["solved"]["weighted_checks"],
            "new": new["summary"]["solved"]["weighted_checks"],
        },
    }


def against_stored(name: str, new: dict[str, Any]) -> dict[str, Any]:
    """This tree's tasks solved per rule against the stored record's (the rules both hold)."""
    stored = json.loads((RESULTS / f"selection_mapcoder_{name}.json").read_text())["solved"]
    ours = new["summary"]["solved"]
    common = sorted(stored.keys() & ours.keys())
    return {
        "rules_compared": len(common),
        "differing": {
            k: {"stored": stored[k], "now": ours[k]} for k in common if stored[k] != ours[k]
        },
    }


def collected_tests(tree: Path) -> int:
    """How many tests pytest collects in ``tree`` (its own code first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    found = re.search(r"(\d+) tests? collected", done.stdout)
    if not found:
        raise SystemExit(f"move_unchanged: error: no test count in {tree}: {done.stdout[-500:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="e704e59", help="the commit before the move")
    parser.add_argument("--sets", default="humaneval,mbpp", help=f"of {', '.join(SETS)}")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks of each set")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/move-unchanged-cache"))
    parser.add_argument("--tests", action="store_true", help="also count each tree's tests")
    parser.add_argument(
        "--shared", type=Path, default=SHARED, help="the recorded runs and data sets (replays/...)"
    )
    args = parser.parse_args()
    names = [s for s in args.sets.split(",") if s]
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        parser.exit(2, f"move_unchanged: error: no set {', '.join(unknown)}\n")
    old_tree = worktree(args.commit)
    args.cache.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"old": args.commit, "new": str(ROOT), "sets": {}}
    for name in names:
        extra = [a if a.startswith("--") else str(args.shared / a) for a in SETS[name]]
        extra += ["--limit", str(args.limit)] if args.limit else []
        cache = args.cache / f"{name}-{args.limit or 'all'}.json"
        # The older tree first: it executes what the cache lacks, and the new tree is then
        # judged on the same executions.
        old = run_set(old_tree, extra, cache, args.workers)
        new = run_set(ROOT, extra, cache, args.workers)
        result["sets"][name] = compared(old, new)
        if not args.limit:
            result["sets"][name]["stored_record"] = against_stored(name, new)
    if args.tests:
        result["tests_collected"] = {"old": collected_tests(old_tree), "new": collected_tests(ROOT)}
    result["identical"] = all(s["identical"] for s in result["sets"].values())
    print(json.dumps(result, indent=2))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
