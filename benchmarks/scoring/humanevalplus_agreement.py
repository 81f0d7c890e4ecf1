"""Per-task HumanEval+ verdicts of ``codegen eval humaneval --plus`` against EvalPlus's own.

Scores an EvalPlus samples file (``task_id, solution``) with ``--plus DATASET --samples-file``
(every solution in the sandbox), then compares each task's base and plus verdict with the
``eval_results.json`` EvalPlus wrote for the same file. Prints JSON: counts, agreements, and
each disagreement with our message.

    PYTHONPATH=$PWD python -m benchmarks.scoring.humanevalplus_agreement \
        ../shared/datasets/humanevalplus/HumanEvalPlus.jsonl.gz \
        ../shared/replays/mapcoder-humanevalplus/GPT4-Turbo-MapCoder-5-5-Human-Python3-0-1.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("samples", type=Path)
    parser.add_argument("--eval-results", type=Path, help="default: <samples>_eval_results.json")
    args = parser.parse_args()
    from codegen.orchestration.cli import main as cli

    results_path = args.eval_results or args.samples.with_name(
        args.samples.stem + "_eval_results.json"
    )
    theirs = json.loads(results_path.read_text())["eval"]
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        plus = ["--plus", str(args.dataset)]
        code = cli(["eval", "humaneval", *plus, "--samples-file", str(args.samples), "--json"])
    wall = time.perf_counter() - started
    if code != 0:
        sys.exit(f"codegen eval exited {code}")
    result = json.loads(out.getvalue())
    scores_dir = Path(result["results_dir"]) / "scores"
    agree_base = agree_plus = both = 0
    disagreements = []
    for task_id, verdict in theirs.items():
        key = task_id.replace("/", "-")
        doc = json.loads((scores_dir / f"{key}.json").read_text())
        ours = doc["scores"][0]
        their_base = verdict["base"][0][0] == "success"
        their_plus = their_base and verdict["plus"][0][0] == "success"
        base_ok = ours["passed"] == their_base
        plus_ok = bool(ours["plus"]) == their_plus
        agree_base += base_ok
        agree_plus += plus_ok
        both += base_ok and plus_ok
        if not (base_ok and plus_ok):
            disagreements.append(
                {
                    "task": task_id,
                    "ours": {"base": ours["passed"], "plus": ours["plus"]},
                    "evalplus": {"base": their_base, "plus": their_plus},
                    "our_message": ours["message"],
                }
            )
    print(
        json.dumps(
            {
                "samples": str(args.samples),
                "tasks": len(theirs),
                "agree_base": agree_base,
                "agree_plus": agree_plus,
                "agree_both": both,
                "ours": {
                    "base_solved": result["solved_tasks"],
                    "plus_solved": result["plus"]["solved_tasks"],
                },
                "evalplus": {
                    "base_solved": sum(v["base"][0][0] == "success" for v in theirs.values()),
                    "plus_solved": sum(
                        v["base"][0][0] == "success" and v["plus"][0][0] == "success"
                        for v in theirs.values()
                    ),
                },
                "wall_s": round(wall, 1),
                "disagreements": disagreements,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
