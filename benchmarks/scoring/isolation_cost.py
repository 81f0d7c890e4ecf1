"""Scoring with the candidate in a process of its own against the scoring it replaced, on the
same samples in one run (issue 38: new/old at most 1.5).

The samples are MapCoder's five recorded HumanEval runs (``../shared/replays/mapcoder``, read
at run time, never copied): per task the five runs' extracted code is one batch. Task by task
the old driver (``score_driver.py`` at ``--old-rev``, read with ``git show``) and the current
one score the same batch in alternating order, twice over; prints one JSON line with both
totals, their ratio, the median per-task ratio and how many verdicts agree.

    .venv/bin/python -m benchmarks.scoring.isolation_cost [--limit N] [--old-rev 6f6248f~1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import codegen.evaluation.scoring as scoring
from benchmarks.common import SHARED
from codegen.evaluation.humaneval import get_problem
from codegen.sandbox import backend_names, open_sandbox
from codegen.sandbox.types import Limits

REPLAYS = SHARED / "replays" / "mapcoder"
FILES = [
    "ChatGPT-CoT-Python3-0-1.jsonl",
    "ChatGPT-MapCoder-5-5-Human-Python3-0-1.jsonl",
    "GPT4-Turbo-CoT-Human-Python3-0-1.jsonl",
    "GPT4-Turbo-MapCoder-5-5-Human-Python3-0-1.jsonl",
    "Gemini-Direct-Human-Python3-0-1.jsonl",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=164)
    parser.add_argument("--old-rev", default="6f6248f~1")
    parser.add_argument("--backend", default="docker", choices=backend_names())
    args = parser.parse_args()
    old_source = subprocess.run(
        ["git", "show", f"{args.old_rev}:codegen/evaluation/score_driver.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    current = scoring.driver_files

    def use(old: bool) -> None:
        if old:
            scoring.driver_files = lambda f: {**current(f), "driver.py": old_source}
        else:
            scoring.driver_files = current

    rows: dict[str, list[str]] = {}
    for name in FILES:
        with open(REPLAYS / name) as fh:
            for line in fh:
                row = json.loads(line)
                rows.setdefault(row["task_id"], []).append(row["source_codes"][-1])
    keys = sorted(rows, key=lambda t: int(t.split("/")[1]))[: args.limit]
    box = open_sandbox(args.backend, pool_size=1)
    limits = Limits(timeout_s=10)
    totals = {"old": 0.0, "new": 0.0}
    ratios: list[float] = []
    agree = samples = 0
    try:
        for round_ in range(2):
            for i, key in enumerate(keys):
                problem = get_problem(key.replace("/", "-"))
                verdicts: dict[str, list[bool]] = {}
                seconds: dict[str, float] = {}
                for which in ("old", "new") if (i + round_) % 2 == 0 else ("new", "old"):
                    use(which == "old")
                    started = time.perf_counter()
                    scores = scoring.score_candidates(box, problem, rows[key], limits)
                    seconds[which] = time.perf_counter() - started
                    verdicts[which] = [s.passed for s in scores]
                totals["old"] += seconds["old"]
                totals["new"] += seconds["new"]
                ratios.append(seconds["new"] / seconds["old"])
                if round_ == 0:
                    samples += len(rows[key])
                    agree += sum(
                        a == b for a, b in zip(verdicts["old"], verdicts["new"], strict=True)
                    )
    finally:
        use(False)
        box.close()
    print(
        json.dumps(
            {
                "tasks": len(keys),
                "samples_per_round": samples,
                "verdicts_agree": agree,
                "old_s": round(totals["old"], 2),
                "new_s": round(totals["new"], 2),
                "total_ratio": round(totals["new"] / totals["old"], 3),
                "median_task_ratio": round(statistics.median(ratios), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
