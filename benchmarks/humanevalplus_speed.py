"""Wall time of HumanEval+ scoring of one samples file, every solution in the sandbox.

Runs ``codegen eval humaneval --plus DATASET --samples-file SAMPLES`` in a fresh
``$CODEGEN_HOME`` twice: cold (the canonical outputs computed, then the samples scored) and
warm (the canonical outputs cached; each solution gets a trailing comment so no verdict is
cached). Prints JSON with both wall times, the worker count and the load average.

EvalPlus's own evaluator, the comparison the issue asks for, is not run here: the ``evalplus``
package is not installed (it needs numpy, psutil and more on the host, and executes the
candidates in the host process).

    PYTHONPATH=$PWD python benchmarks/humanevalplus_speed.py \
        ../shared/datasets/humanevalplus/HumanEvalPlus.jsonl.gz \
        ../shared/replays/mapcoder-humanevalplus/ChatGPT-CoT-Python3-0-1.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def _score(dataset: Path, samples: Path) -> tuple[float, dict]:
    from codegen.orchestration.cli import main as cli

    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli(
            ["eval", "humaneval", "--plus", str(dataset), "--samples-file", str(samples), "--json"]
        )
    wall = time.perf_counter() - started
    if code != 0:
        sys.exit(f"codegen eval exited {code}")
    return wall, json.loads(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("samples", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["CODEGEN_HOME"] = home
        from codegen.settings import get_settings

        get_settings.cache_clear()
        load_before = os.getloadavg()
        cold, first = _score(args.dataset, args.samples)
        changed = Path(home) / "samples-warm.jsonl"
        rows = [json.loads(line) for line in args.samples.read_text().splitlines() if line]
        changed.write_text(
            "".join(
                json.dumps({**r, "solution": r["solution"] + "\n# warm run\n"}) + "\n" for r in rows
            )
        )
        warm, second = _score(args.dataset, changed)
        workers = get_settings().eval.workers
    print(
        json.dumps(
            {
                "samples": str(args.samples),
                "tasks": first["tasks_scored"],
                "workers": workers,
                "cold_wall_s": round(cold, 1),
                "warm_wall_s": round(warm, 1),
                "base_solved": [first["solved_tasks"], second["solved_tasks"]],
                "plus_solved": [first["plus"]["solved_tasks"], second["plus"]["solved_tasks"]],
                "load_before": [round(x, 1) for x in load_before],
                "load_after": [round(x, 1) for x in os.getloadavg()],
                "evalplus": "not run (package not installed)",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
