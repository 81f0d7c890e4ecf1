"""MapCoder's recorded MBPP runs scored by ``codegen eval tasks --samples-file``, against
their published ``is_solved`` counts.

From one results file (rows: ``name``/``task_id``, ``prompt``, ``entry_point``, ``test``,
``source_codes``, ``is_solved``) it writes a task file whose ``test`` is each row's own test
(the one the authors ran) and a samples file of ``source_codes[-1]`` (the code their harness
extracted), scores them in the sandbox, and prints JSON: solved against published, and each
task where our verdict differs from ``is_solved`` with our failure message.

    PYTHONPATH=$PWD python -m benchmarks.scoring.mbpp_published \
        ../shared/replays/mapcoder-mbpp/GPT4-Turbo-MapCoder-3-5-MBPP-Python3-0-1.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    args = parser.parse_args()
    from codegen.evaluation.tasks import safe_key
    from codegen.orchestration.cli import main as cli

    rows = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / f"{args.results.stem}-tasks.jsonl"
        samples = Path(tmp) / f"{args.results.stem}-samples.jsonl"
        tasks.write_text(
            "".join(
                json.dumps(
                    {
                        "task_id": r.get("task_id") or r["name"],
                        "prompt": r["prompt"],
                        "entry_point": r["entry_point"],
                        "test": r["test"],
                    }
                )
                + "\n"
                for r in rows
            )
        )
        samples.write_text(
            "".join(
                json.dumps(
                    {"task_id": r.get("task_id") or r["name"], "solution": r["source_codes"][-1]}
                )
                + "\n"
                for r in rows
            )
        )
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = cli(["eval", "tasks", str(tasks), "--samples-file", str(samples), "--json"])
        wall = time.perf_counter() - started
    if code != 0:
        sys.exit(f"codegen eval exited {code}")
    result = json.loads(out.getvalue())
    scores_dir = Path(result["results_dir"]) / "scores"
    disagreements = []
    for r in rows:
        task_id = r.get("task_id") or r["name"]
        ours = json.loads((scores_dir / f"{safe_key(task_id)}.json").read_text())["scores"][0]
        if ours["passed"] != bool(r["is_solved"]):
            disagreements.append(
                {
                    "task": task_id,
                    "ours": ours["passed"],
                    "published": bool(r["is_solved"]),
                    "our_message": ours["message"][:200],
                }
            )
    print(
        json.dumps(
            {
                "file": args.results.name,
                "tasks": len(rows),
                "published_solved": sum(bool(r["is_solved"]) for r in rows),
                "our_solved": result["solved_tasks"],
                "wall_s": round(wall, 1),
                "disagreements": disagreements,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
