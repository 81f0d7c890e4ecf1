"""Every multi-candidate set the pick is measured on, held-out tasks first, and whether the
rule ships: a selection rule ships only if, on the held-out part of every set, its pick is not
below the best single run (several models) or pass@1 (several samples of one model).

    .venv/bin/python -m benchmarks.pick.every_set [--run] [--workers W]

The sets and the script that measures each (its JSON under benchmarks/results/):

* MapCoder HumanEval, five runs (``learned_pick --data .../mapcoder``; 40 held out, seed 41);
* MapCoder MBPP, three runs (``learned_pick --data .../mapcoder-mbpp``; 100 held out, seed 43);
* ClassEval, the five greedy files named as five models, and each t0.2 file's five samples of
  one model (``crew.classeval_replay_crew``; 30 held out, seed 37).
* APPS, MapCoder's five ChatGPT runs named as five models (``crew.apps_replay_crew``; 40 held
  out, seed 47).

``--run`` runs each script with ``--store`` first (about an hour on two busy cores); without
it, the table is built from the JSON they stored. Writes benchmarks/results/pick_every_set.json
(each source's command and machine beside its figures) and prints it; exits 1 when the rule
does not ship. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, SHARED, machine

RESULT = RESULTS / "pick_every_set.json"


def sources(workers: int) -> dict[str, list[str]]:
    """Each stored JSON and the command that writes it."""
    run = [sys.executable, "-m"]
    mbpp_set = SHARED / "datasets" / "mbpp" / "mbpp-multiple-397.jsonl"
    return {
        "learned_pick_humaneval": [
            *(*run, "benchmarks.pick.learned_pick", "--data", str(SHARED / "replays" / "mapcoder")),
            *("--workers", str(workers), "--store"),
        ],
        "learned_pick_mbpp": [
            *(*run, "benchmarks.pick.learned_pick"),
            *("--data", str(SHARED / "replays" / "mapcoder-mbpp"), "--mbpp-set", str(mbpp_set)),
            *("--workers", str(workers), "--store"),
        ],
        "classeval_replay_crew": [
            *(*run, "benchmarks.crew.classeval_replay_crew", "--workers", str(workers), "--store"),
        ],
        "apps_replay_crew": [
            *(*run, "benchmarks.crew.apps_replay_crew", "--workers", str(workers), "--store"),
        ],
    }


def row(
    pick: int, baseline: float, baseline_name: str, part: dict[str, Any], tasks: int
) -> dict[str, Any]:
    return {
        "tasks": tasks,
        "pick": pick,
        "baseline": baseline,
        "baseline_is": baseline_name,
        "pick_minus_baseline": round(pick - baseline, 2),
        "oracle": part["oracle"],
    }


def mapcoder_set(data: dict[str, Any]) -> dict[str, Any]:
    return {
        part: row(
            data[part]["learned"],
            data[part]["best_single"],
            "best single run",
            data[part],
            data[part]["tasks"],
        )
        for part in ("held_out", "all")
    }


def classeval_sets(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in data["all"]:
        if name == "five_greedy":
            out["classeval_five_greedy"] = {
                part: row(
                    data[part][name]["ours"],
                    data[part][name]["best_single"],
                    "best single file",
                    data[part][name],
                    data[part]["tasks"],
                )
                for part in ("held_out", "all")
            }
        elif name.startswith("t02_"):
            out[f"classeval_{name}"] = {
                part: row(
                    data[part][name]["ours"],
                    data[part][name]["pass@1"],
                    "pass@1",
                    data[part][name],
                    data[part]["tasks"],
                )
                for part in ("held_out", "all")
            }
    return out


def apps_set(data: dict[str, Any]) -> dict[str, Any]:
    return {
        part: row(
            data[part]["five_chatgpt"]["ours"],
            data[part]["five_chatgpt"]["best_single"],
            "best single run",
            data[part]["five_chatgpt"],
            data[part]["tasks"],
        )
        for part in ("held_out", "all")
    }


def table() -> dict[str, Any]:
    stored = {stem: json.loads((RESULTS / f"{stem}.json").read_text()) for stem in sources(1)}
    sets = {
        "humaneval_mapcoder_five_runs": mapcoder_set(stored["learned_pick_humaneval"]),
        "mbpp_mapcoder_three_runs": mapcoder_set(stored["learned_pick_mbpp"]),
        **classeval_sets(stored["classeval_replay_crew"]),
        "apps_chatgpt_five_runs": apps_set(stored["apps_replay_crew"]),
    }
    held_ok = {name: s["held_out"]["pick"] >= s["held_out"]["baseline"] for name, s in sets.items()}
    return {
        "command": "python -m benchmarks.pick.every_set",
        "sets": sets,
        "held_out_not_below_baseline": held_ok,
        "ships": all(held_ok.values()),
        "sources": {
            stem: {"command": data.get("command"), "machine": data.get("machine")}
            for stem, data in stored.items()
        },
        "machine": machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", action="store_true", help="run every set's script first")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.run:
        for stem, command in sources(args.workers).items():
            done = subprocess.run(command, stdout=subprocess.DEVNULL)
            if done.returncode != 0:
                raise SystemExit(f"every_set: error: {stem}: exit {done.returncode}")
    missing = [s for s in sources(1) if not (RESULTS / f"{s}.json").exists()]
    if missing:
        raise SystemExit(f"every_set: error: no stored {', '.join(missing)} (run with --run)")
    result = table()
    text = json.dumps(result, indent=1)
    Path(RESULT).write_text(text + "\n")
    print(text)
    if not result["ships"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
