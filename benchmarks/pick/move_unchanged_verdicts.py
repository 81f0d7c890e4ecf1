"""Are the verdicts and the ClassEval pick unchanged by a move? The recorded-samples fidelity
files scored, and ClassEval's five greedy files picked among by the crew, by an older
commit's tree and by this one, each in a subprocess of its own with PYTHONPATH set to its tree
and a fresh CODEGEN_HOME (no tree reads the other's cached verdicts).

    .venv/bin/python -m benchmarks.pick.move_unchanged_verdicts [--commit e704e59]
        [--parts fidelity,classeval] [--limit N] [--workers 2] [--shared /work/shared]
        [--package-set classeval] [--backend docker] [--store]

The sibling of ``move_unchanged`` (MapCoder's HumanEval and MBPP picks) for the rest of issue
47's "behaviour unchanged":

* ``fidelity``: each tree's ``published_tables.score_file`` (the ``--samples-file`` scoring)
  on MapCoder's recorded HumanEval files (``source_codes[-1]`` as a whole module against the
  wheel's tasks) and its MBPP files (against a task file of each row's own test, as
  ``mbpp_published`` does). Per file and task, each sample's verdict (passed, category)
  compared; the failure messages compared too, apart (``messages_differing``).
* ``classeval``: each tree's ``classeval_replay_crew.run_crew_config`` on the five greedy
  ``class_H`` files, five candidates per task, on the held-out tasks: per task, the crew's
  final code and status compared (``picks_differing``: the final code alone).

``--limit N``: the first N tasks of each file (fidelity) and the first N held-out tasks
(classeval). Prints one JSON object: per set ``identical``, ``compared``, ``differing``,
``only_in_one`` and a few differing examples; ``--store`` writes it to
benchmarks/results/move_unchanged_verdicts.json. The older tree is the git worktree
``move_unchanged`` makes under /tmp. Not part of the test run: it executes in the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, ROOT, SHARED, machine
from benchmarks.pick.move_unchanged import worktree

PARTS = ("fidelity", "classeval")
RESULT = RESULTS / "move_unchanged_verdicts.json"
SIDE = Path(__file__).with_name("move_unchanged_side.py")
# Each benchmark module a side calls: its name among the flat scripts of before the move
# (benchmarks/ on the path) and in the package of now.
MODULES = {
    "published_tables": ("published_tables", "benchmarks.scoring.published_tables"),
    "classeval_replay_crew": ("classeval_replay_crew", "benchmarks.crew.classeval_replay_crew"),
}
# Recorded-samples files under the shared folder, per set: HumanEval's as published_tables
# reads them, MBPP's as mbpp_published does.
FIDELITY_SETS = {"humaneval": "replays/mapcoder", "mbpp": "replays/mapcoder-mbpp"}
SHOWN = 5  # differing examples printed per set


def modules_of(tree: Path) -> tuple[dict[str, str], str]:
    """The benchmark modules' import names in ``tree`` and the PYTHONPATH that finds them."""
    if (tree / "benchmarks" / "published_tables.py").is_file():  # the flat scripts of before
        path = os.pathsep.join((str(tree), str(tree / "benchmarks")))
        return {key: flat for key, (flat, _) in MODULES.items()}, path
    return {key: package for key, (_, package) in MODULES.items()}, str(tree)


def run_side(tree: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """One part in ``tree``'s own subprocess: the side's records, keyed by file and task; an
    error when its ``codegen`` came from another tree."""
    modules, path = modules_of(tree)
    command = [sys.executable, "-c", SIDE.read_text() + "\nrun_side()\n"]
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("CODEGEN_HOME", None)  # the side makes a fresh one
    done = subprocess.run(
        command,
        input=json.dumps({**spec, **modules}),
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"move_unchanged_verdicts: error: {spec['part']} in {tree}: {done.stderr[-2000:]}"
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(out["tree"]).resolve() != tree.resolve():
        raise SystemExit(f"move_unchanged_verdicts: error: {tree}'s side ran {out['tree']}")
    return out["records"]


def compare(
    old: dict[str, Any], new: dict[str, Any], verdict: Callable[[Any], Any] = lambda v: v
) -> dict[str, Any]:
    """Per key, whether ``verdict`` of the two trees' records agrees. Identical only when some
    key was compared and both trees hold the same keys."""
    both = sorted(old.keys() & new.keys())
    differing = [k for k in both if verdict(old[k]) != verdict(new[k])]
    only = sorted(old.keys() ^ new.keys())
    return {
        "identical": bool(both) and not differing and not only,
        "compared": len(both),
        "differing": len(differing),
        "only_in_one": len(only),
        "examples": [
            {"key": k, "old": old.get(k), "new": new.get(k)} for k in (differing + only)[:SHOWN]
        ],
    }


def sample_verdicts(scores: list[list[Any]]) -> list[list[Any]]:
    """Each sample's [passed, category], its message left out."""
    return [score[:2] for score in scores]


def fidelity_compared(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per set (a record's key starts ``SET/``), the samples' verdicts compared."""
    out: dict[str, dict[str, Any]] = {}
    for name in FIDELITY_SETS:
        mine = [{k: v for k, v in side.items() if k.startswith(f"{name}/")} for side in (old, new)]
        row = compare(*mine, verdict=sample_verdicts)
        row["samples"] = sum(len(v) for v in mine[1].values())
        row["passed"] = {
            side: sum(s[0] for v in records.values() for s in v)
            for side, records in zip(("old", "new"), mine, strict=True)
        }
        row["messages_differing"] = compare(*mine)["differing"]
        out[f"{name}_fidelity"] = row
    return out


def classeval_compared(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Per task, the crew's final code and status compared; ``picks_differing`` counts the
    final code alone (a status may differ where the crew's own tests of a class that draws
    random numbers pass in one run and fail in the next, and the repair is not recorded)."""
    row = compare(old, new)
    row["picks_differing"] = compare(old, new, verdict=lambda r: r["code"])["differing"]
    row["statuses"] = {
        side: dict(Counter(r["status"] for r in records.values()))
        for side, records in (("old", old), ("new", new))
    }
    return row


def fidelity_files(shared: Path, limit: int | None, work: Path) -> list[dict[str, Any]]:
    """Each recorded file's first ``limit`` tasks as samples-file lines; MBPP's with a task
    file of the rows' own tests."""
    files = []
    for name, folder in FIDELITY_SETS.items():
        for path in sorted((shared / folder).glob("*.jsonl")):
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            rows = rows[:limit] if limit else rows
            ids = [r.get("task_id") or r["name"] for r in rows]
            tasks = None
            if name == "mbpp":
                tasks = work / f"{path.stem}-tasks.jsonl"
                fields = ("prompt", "entry_point", "test")
                tasks.write_text(
                    "".join(
                        json.dumps({"task_id": i, **{f: r[f] for f in fields}}) + "\n"
                        for i, r in zip(ids, rows, strict=True)
                    )
                )
            lines = [
                {"task_id": i, "solution": r["source_codes"][-1]}
                for i, r in zip(ids, rows, strict=True)
            ]
            label = f"{name}/{path.name}"
            files.append({"label": label, "lines": lines, "tasks": tasks and str(tasks)})
    return files


def command_of(args: argparse.Namespace) -> str:
    """The command as run, every option spelled out."""
    return (
        ".venv/bin/python -m benchmarks.pick.move_unchanged_verdicts"
        f" --commit {args.commit} --parts {args.parts}"
        + (f" --limit {args.limit}" if args.limit else "")
        + f" --workers {args.workers} --shared {args.shared}"
        + f" --package-set {args.package_set} --backend {args.backend}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="e704e59", help="the commit before the move")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"of {', '.join(PARTS)}")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks (see above)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--shared", type=Path, default=SHARED, help="the recorded runs and data sets (replays/...)"
    )
    parser.add_argument(
        "--package-set", default="classeval", help="the sandbox's package set for ClassEval"
    )
    parser.add_argument("--backend", default="docker", help="the sandbox backend for fidelity")
    parser.add_argument("--store", action="store_true", help=f"write {RESULT.name}")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        named = ", ".join(unknown) or "(none named)"
        parser.exit(2, f"move_unchanged_verdicts: error: no part {named}\n")
    if args.limit is not None and args.limit < 1:
        parser.exit(2, "move_unchanged_verdicts: error: --limit must be at least 1\n")
    if not (args.shared / "replays").is_dir():
        parser.exit(2, f"move_unchanged_verdicts: error: no replays/ under {args.shared}\n")
    trees = {"old": worktree(args.commit), "new": ROOT}
    result: dict[str, Any] = {
        "command": command_of(args),
        "trees": {"old": f"{args.commit} ({trees['old']})", "new": str(ROOT)},
        "sets": {},
    }
    wall: dict[str, float] = {}
    common = {"workers": args.workers, "limit": args.limit, "backend": args.backend}
    with tempfile.TemporaryDirectory(prefix="move-unchanged-verdicts-") as work:
        specs = {
            "fidelity": {"files": fidelity_files(args.shared, args.limit, Path(work))},
            "classeval": {
                "data": str(args.shared / "replays" / "classeval"),
                "tasks": str(args.shared / "datasets" / "classeval" / "ClassEval_data.json.gz"),
                "package_set": args.package_set,
            },
        }
        for part in parts:
            records = {}
            for side, tree in trees.items():  # the older tree first, then this one
                started = time.perf_counter()
                records[side] = run_side(tree, {"part": part, **common, **specs[part]})
                wall[f"{part}_{side}"] = round(time.perf_counter() - started, 1)
            if part == "fidelity":
                result["sets"] |= fidelity_compared(records["old"], records["new"])
            else:
                result["sets"]["classeval_five_greedy"] = classeval_compared(
                    records["old"], records["new"]
                )
    result["identical"] = all(s["identical"] for s in result["sets"].values())
    result["wall_s"] = wall
    result["machine"] = f"{machine()}; load average {os.getloadavg()[0]:.1f} at the end"
    text = json.dumps(result, indent=1)
    print(text)
    if args.store:
        RESULT.write_text(text + "\n")
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
