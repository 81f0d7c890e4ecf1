"""Picking one of N candidates by execution, on CodeT's CodeGen-16B HumanEval data.

    .venv/bin/python -m benchmarks.pick.selection [--data DIR] [--limit TASKS] [--draws 200]
    .venv/bin/python -m benchmarks.pick.selection --mapcoder ../shared/replays/mapcoder
    .venv/bin/python -m benchmarks.pick.selection --mapcoder ../shared/replays/mapcoder-mbpp \
        --mbpp-set ../shared/datasets/mbpp/mbpp-multiple-397.jsonl

CodeT's data (``../shared/replays/codet-codegen16b/``): 100 code samples and 100 test-case
samples per task. Every distinct program (prompt + completion, cut with CodeT's rule at the
first top-level ``def``/``class``/``if``/``print``/``#`` line) runs once in our sandbox
against every distinct generated assertion (CodeT keeps the first 5 of each test sample),
against the worked examples of the HumanEval prompt's docstring (the crew's spec carries
them; CodeT's prompts had them removed), and against the hidden tests for ground truth: one
sandbox execution per task. Then, in one more execution per task
(``codegen.sandbox.calls.call_functions``), every distinct program is called on the shared
inputs of ``codegen.agents.pick.inputs``: the generated tests' call sites and their type-aware
mutations (CodeT's setting), plus the examples' calls, the other calls the prompt writes out
and their mutations (with examples).
The results are cached (``--cache``), and every strategy reads the same matrices.

For N = 5, 10, 25, 100 (``--draws`` random subsets of the 100 samples for N < 100) it prints
pass@1 of: ``random`` (the baseline), ``codet`` (dual agreement, ``codegen.agents.pick.matrix``,
over the generated tests; over the examples on a task with no generated test) and
``codet_without_examples`` (never the examples: one group on such a task),
``ours`` (``codegen.agents.pick.matrix.pick``: examples first, then agreement without suspect
tests), ``agreement`` (``codegen.agents.pick.agreement.agreement_pick``: examples first, then
agreement on outputs with the suite's verdicts), each also ``_without_examples`` (given no
examples, and for ``agreement`` no inputs derived from them: CodeT's setting), and ``oracle``
(any candidate correct). A pick's pass@1 is the share of correct members in the group it
picks (a member is drawn at random). ``precision_of_passed``: of the picks the rule calls
passing (every test it counts green), the share that pass the hidden tests, with the suspect
tests left out (as the crew does) and kept in. ``sandbox_seconds_per_task_at_100``: today's
execution (tests) and the shared-inputs execution, per task.

``--mapcoder DIR``: MapCoder's five HumanEval runs as five candidates per task (each run's
extracted code); no generated tests, so the rows are the worked examples, CodeT's rule runs
over them, and the inputs are the prompt's calls (examples and any other literal call of the
entry point it writes out; else seeds from the signature's types) and their mutations. Each
run is a source: ``codegen.agents.pick.reliability.estimate`` gives each an accuracy from example
verdicts and agreement over the tasks (no hidden test), and five more rules use it:
``weighted`` (MBR-exec's expected agreement over the shared inputs, each draft counting its
source's accuracy; the pick is the winning group's most reliable member, scored as that one
sample), ``weighted_groups`` (exact groups by summed log-odds), ``similarity`` (expected
agreement, equal votes), ``weighted_checks`` (the crew's pick with a history: ``weighted``
after leaving out the checks ``codegen.agents.pick.posterior.suspect_checks`` shows more likely
wrong than right) and ``posterior`` (``posterior_pick``: that posterior's own pick, exact
groups, no hard filter; an ablation). Prints tasks solved per rule beside each run's own count
(``best_single``), the oracle and the estimate (``reliability``). ``group_member_solved``:
for ``agreement`` and each of those five rules but ``posterior``, tasks solved when the
winning group's member is taken at random (its share of correct members), the crew's way
before typicality (the most reliable, then the earliest) and the crew's now
(``codegen.agents.pick.typical.most_typical`` over the runs' extracted code, the rule's
priors first, as ``codegen.agents.pick.decision.decide``).

``--mapcoder DIR --mbpp-set FILE``: MapCoder's three MBPP runs the same way, the set's
visible ``sample_io`` as the examples and the rows' own tests as ground truth.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.pick.selection.execution import (
    CALLS,
    call_settings,
    execute_inputs,
    execute_tests,
    inputs_digest,
    task_digest,
)
from benchmarks.pick.selection.rules import MEMBERS, Strategy, draw_all, strategies, votes_of
from benchmarks.pick.selection.tasks import (
    CODE_FILE,
    DEFAULT_DATA,
    load_mapcoder,
    load_mapcoder_mbpp,
    load_tasks,
)

SIZES = (5, 10, 25, 100)
DEFAULT_CACHE = Path("/tmp/codegen-selection-exec.json")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--mapcoder",
        type=Path,
        default=None,
        help="instead: MapCoder's HumanEval runs in this folder, one candidate per run",
    )
    parser.add_argument(
        "--mbpp-set",
        type=Path,
        default=None,
        help="with --mapcoder: the runs are MBPP's; the task set with the visible sample_io",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    parser.add_argument(
        "--call-limit", type=float, default=None, help="seconds per call (the crew's default)"
    )
    parser.add_argument(
        "--module-deadline",
        type=float,
        default=None,
        help="seconds per program, all its calls (the crew's default)",
    )
    parser.add_argument(
        "--max-timeouts",
        type=int,
        default=None,
        help="calls at the limit before a program's run stops (the crew's default)",
    )
    parser.add_argument("--draws", type=int, default=200, help="random subsets for N < 100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="execution results per task (reused when the task's inputs are unchanged)",
    )
    return parser


def _parse_args() -> argparse.Namespace:
    """The arguments, checked; the call limits they set go into ``CALLS``."""
    args = _parser().parse_args()
    if args.call_limit is not None:
        CALLS["call_limit_s"] = args.call_limit
    if args.module_deadline is not None:
        CALLS["module_deadline_s"] = args.module_deadline
    if args.max_timeouts is not None:
        CALLS["max_timeouts"] = args.max_timeouts
    if args.mapcoder is not None:
        if not any(args.mapcoder.glob("*.jsonl")):
            sys.exit(f"selection: error: no MapCoder runs (*.jsonl) in {args.mapcoder}")
        if args.mbpp_set is not None and not args.mbpp_set.is_file():
            sys.exit(f"selection: error: no MBPP task set at {args.mbpp_set}")
    elif not (args.data / CODE_FILE).exists():
        sys.exit(f"selection: error: no CodeT data in {args.data}")
    if args.mapcoder is not None and args.cache == DEFAULT_CACHE:
        args.cache = DEFAULT_CACHE.with_name("codegen-selection-mapcoder-exec.json")
    return args


def _load(args: argparse.Namespace) -> tuple[list[dict[str, Any]], tuple[int, ...]]:
    """The tasks and the candidate counts N to score them at."""
    if args.mapcoder is not None:
        tasks = (
            load_mapcoder_mbpp(args.mapcoder, args.mbpp_set, args.limit, args.seed)
            if args.mbpp_set is not None
            else load_mapcoder(args.mapcoder, args.limit, args.seed)
        )
        return tasks, (len(tasks[0]["sample_program"]),)
    return load_tasks(args.data, args.limit, args.seed), SIZES


def _execute(
    tasks: list[dict[str, Any]], cache: dict[str, Any], workers: int, cache_path: Path
) -> tuple[int, str]:
    """Runs in the sandbox every task whose cached results are stale, saving ``cache`` to
    ``cache_path`` as it goes; the number executed and the sandbox backend."""
    from codegen.sandbox import open_sandbox

    def stale(task: dict[str, Any]) -> bool:
        entry = cache.get(task["task_id"], {})
        return entry.get("digest") != task_digest(task) or (
            entry.get("inputs_digest") != inputs_digest(task)
        )

    todo = [t for t in tasks if stale(t)]
    lock = threading.Lock()
    with open_sandbox("auto", pool_size=workers) as box:

        def run(task: dict[str, Any]) -> None:
            entry = dict(cache.get(task["task_id"], {}))
            if entry.get("digest") != task_digest(task):
                entry.update(execute_tests(box, task))
            if entry.get("inputs_digest") != inputs_digest(task):
                entry.update(execute_inputs(box, task))
            with lock:
                cache[task["task_id"]] = entry
            print(f"executed {task['task_id']}", file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done, _ in enumerate(pool.map(run, todo), 1):
                if done % 10 == 0:
                    with lock:
                        cache_path.write_text(json.dumps(cache))
        backend = box.backend
    cache_path.write_text(json.dumps(cache))
    return len(todo), backend


def _score(
    tasks: list[dict[str, Any]],
    cache: dict[str, Any],
    rules: dict[str, Strategy],
    sizes: tuple[int, ...],
    draws_below_all: int,
    rng: random.Random,
) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, list[float]]]]:
    """Every rule over every draw: summed pass@1 per N and rule, and per N and rule the tallies
    for the precision of ``passed`` (tasks called passing, correct share summed; without and
    with the suspect tests)."""
    totals = {n: dict.fromkeys(rules, 0.0) for n in sizes}
    called = {n: {k: [0.0, 0.0, 0.0, 0.0] for k in rules} for n in sizes}
    for task in tasks:
        ran = cache[task["task_id"]]
        samples = len(task["sample_program"])
        for n in sizes:
            draws = 1 if n >= samples else draws_below_all
            for _ in range(draws):
                chosen = range(samples) if n >= samples else rng.sample(range(samples), n)
                draw = draw_all(task, ran, list(chosen))
                for name, rule in rules.items():
                    got = rule(draw)
                    totals[n][name] += got.share / draws
                    tally = called[n][name]
                    if got.passing:
                        tally[0] += 1 / draws
                        tally[1] += got.share / draws
                    if got.passing_with_suspect:
                        tally[2] += 1 / draws
                        tally[3] += got.share / draws
    return totals, called


def _precision(tally: list[float]) -> dict[str, float | None]:
    passed, right, passed_all, right_all = tally
    return {
        "passed": round(passed, 1),
        "precision": round(right / passed, 4) if passed else None,
        "passed_with_suspect_tests": round(passed_all, 1),
        "precision_with_suspect_tests": round(right_all / passed_all, 4) if passed_all else None,
    }


def _result(
    args: argparse.Namespace,
    tasks: list[dict[str, Any]],
    cache: dict[str, Any],
    run: tuple[int, str, float],
    sizes: tuple[int, ...],
    totals: dict[int, dict[str, float]],
    called: dict[int, dict[str, list[float]]],
) -> dict[str, Any]:
    """The JSON printed, the fields every data set has; ``run``: the tasks executed, the
    sandbox backend and the execution's seconds."""
    executed, backend, exec_seconds = run
    walls = [cache[t["task_id"]].get("wall_seconds", 0.0) for t in tasks]
    seconds = [cache[t["task_id"]]["seconds"] for t in tasks]
    call_seconds = [cache[t["task_id"]]["call_seconds"] for t in tasks]
    return {
        "benchmark": "selection",
        "model": "CodeGen-16B (CodeT's samples, temperature 0.8)",
        "tasks": len(tasks),
        "draws_below_100": args.draws,
        "sandbox_backend": backend,
        "executed_tasks": executed,
        "execution_seconds": round(exec_seconds, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "mean_generated_tests": round(
            sum(len(t["tests"]) - sum(t["trusted"]) for t in tasks) / len(tasks), 1
        ),
        "mean_shared_inputs": {
            "without_examples": round(
                sum(len(t["inputs_without_examples"]) for t in tasks) / len(tasks), 1
            ),
            "with_examples": round(
                sum(len(t["inputs_with_examples"]) for t in tasks) / len(tasks), 1
            ),
            "executed": round(sum(len(t["inputs"]) for t in tasks) / len(tasks), 1),
        },
        "mean_distinct_programs": round(sum(len(t["programs"]) for t in tasks) / len(tasks), 1),
        "tasks_with_examples": sum(any(t["trusted"]) for t in tasks),
        "sandbox_seconds_per_task_at_100": {
            "tests": round(sum(seconds) / len(tasks), 2),
            "shared_inputs": round(sum(call_seconds) / len(tasks), 2),
            "ratio": round((sum(seconds) + sum(call_seconds)) / max(sum(seconds), 1e-9), 2),
            # both measured the same way: wall time around each sandbox execution
            "tests_wall": round(sum(walls) / len(tasks), 2),
            "ratio_wall": round((sum(walls) + sum(call_seconds)) / max(sum(walls), 1e-9), 2),
            "call_limit_s_and_module_deadline_s_and_max_timeouts": list(call_settings()),
        },
        "pass_at_1_percent": {
            str(n): {k: round(100 * v / len(tasks), 2) for k, v in totals[n].items()} for n in sizes
        },
        "precision_of_passed": {
            str(n): {
                k: _precision(called[n][k]) for k in totals[n] if k not in ("random", "oracle")
            }
            for n in sizes
        },
    }


def _add_mapcoder_fields(
    result: dict[str, Any],
    mbpp: bool,
    tasks: list[dict[str, Any]],
    cache: dict[str, Any],
    totals: dict[str, float],
    reliability: Any,
) -> None:
    """MapCoder's fields: tasks solved per run and per rule (``totals``, at the one N), the
    differences to the best run, the group member taken each way, the estimated reliability."""
    files = tasks[0]["files"]
    per_file = [
        sum(cache[t["task_id"]]["correct"][t["sample_program"][f]] for t in tasks)
        for f in range(len(files))
    ]
    benchmark = "MBPP" if mbpp else "HumanEval"
    result["model"] = f"MapCoder's {benchmark} runs, one candidate per run"
    result["solved_per_run"] = dict(zip(files, per_file, strict=True))
    result["solved"] = {k: round(v, 2) for k, v in totals.items()}
    result["solved"]["best_single"] = max(per_file)
    result["agreement_minus_best_single"] = round(totals["agreement"] - max(per_file), 2)
    result["weighted_minus_best_single"] = round(totals["weighted"] - max(per_file), 2)
    result["weighted_checks_minus_best_single"] = round(
        totals["weighted_checks"] - max(per_file), 2
    )
    result["group_member_solved"] = {
        name: {how: round(totals[f"{name}_{how}_member"], 2) for how in MEMBERS}
        for name in totals
        if f"{name}_{MEMBERS[0]}_member" in totals
    }
    result["reliability"] = {
        "accuracy": dict(reliability.accuracy),
        "weight": {f: round(reliability.weight(f), 3) for f in files},
        "iterations": reliability.iterations,
    }


def _agreement_minus_codet(
    pass_at_1: dict[str, dict[str, float]], sizes: tuple[int, ...]
) -> dict[str, dict[str, float]]:
    """CodeT's data: ``agreement`` against ``codet``, in points of pass@1, per N."""
    return {
        str(n): {
            "without_examples": round(
                pass_at_1[str(n)]["agreement_without_examples"] - pass_at_1[str(n)]["codet"], 2
            ),
            "with_examples": round(pass_at_1[str(n)]["agreement"] - pass_at_1[str(n)]["codet"], 2),
            # both rules blind to the examples (CodeT's setting for the baseline too)
            "without_examples_both": round(
                pass_at_1[str(n)]["agreement_without_examples"]
                - pass_at_1[str(n)]["codet_without_examples"],
                2,
            ),
        }
        for n in sizes
    }


def main() -> None:
    args = _parse_args()
    tasks, sizes = _load(args)
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    started = time.perf_counter()
    executed, backend = _execute(tasks, cache, args.workers, args.cache)
    exec_seconds = time.perf_counter() - started

    rng = random.Random(args.seed)
    reliability = None
    if args.mapcoder is not None:
        # Each run is one source; its reliability is estimated over this run's tasks from
        # example verdicts and agreement only (no hidden test), then every pick uses it.
        from codegen.agents.pick import estimate

        reliability = estimate([votes_of(draw_all(task, cache[task["task_id"]])) for task in tasks])
    rules = strategies(reliability)
    totals, called = _score(tasks, cache, rules, sizes, args.draws, rng)
    result = _result(args, tasks, cache, (executed, backend, exec_seconds), sizes, totals, called)
    if args.mapcoder is not None:
        assert reliability is not None
        mbpp = args.mbpp_set is not None
        _add_mapcoder_fields(result, mbpp, tasks, cache, totals[sizes[0]], reliability)
    else:
        result["agreement_minus_codet_points"] = _agreement_minus_codet(
            result["pass_at_1_percent"], sizes
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
