"""Picking one of N candidates by execution, on CodeT's CodeGen-16B HumanEval data.

    .venv/bin/python benchmarks/selection.py [--data DIR] [--limit TASKS] [--draws 200]

CodeT's data (``../shared/replays/codet-codegen16b/``): 100 code samples and 100 test-case
samples per task. Every distinct program (prompt + completion, cut with CodeT's rule at the
first top-level ``def``/``class``/``if``/``print``/``#`` line) runs once in our sandbox
against every distinct generated assertion (CodeT keeps the first 5 of each test sample),
against the worked examples of the HumanEval prompt's docstring (the crew's spec carries
them; CodeT's prompts had them removed), and against the hidden tests for ground truth. One
sandbox execution per task; the results are cached (``--cache``), and every strategy reads
the same pass/fail matrix.

For N = 5, 10, 25, 100 (``--draws`` random subsets of the 100 samples for N < 100) it prints
pass@1 of: ``random`` (the baseline), ``codet`` (dual agreement, ``codegen.agents.selection``),
``ours`` (``codegen.agents.selection.pick``: examples first, then agreement without suspect tests),
``ours_without_examples`` (the same rule given no examples, for a like-for-like comparison
with CodeT) and ``oracle`` (any candidate correct). A pick's pass@1 is the share of correct
members in the group it picks (a member is drawn at random).
"""

from __future__ import annotations

import argparse
import ast
import doctest
import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = ROOT.parent / "shared" / "replays" / "codet-codegen16b"
CODE_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl"
TEST_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl"
SIZES = (5, 10, 25, 100)
TESTS_PER_SAMPLE = 5  # CodeT's choice

# Runs inside the sandbox: each program in a forked child (a crash or an infinite loop costs
# only that child), each test under a timer; one JSON line per program as it finishes.
DRIVER = r"""
import json, os, signal, sys
task = json.load(open("task.json"))
tests = [compile(t, "<test>", "exec") for t in task["tests"]]
MAX_TIMEOUTS = 3  # a program that hangs on this many tests fails the rest unrun

class Timeout(BaseException):
    pass

def on_alarm(*_):
    raise Timeout()

signal.signal(signal.SIGALRM, on_alarm)

def timed(fn, seconds):
    # True, False, or None on a timeout.
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        fn()
        return True
    except Timeout:
        return None
    except BaseException:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

def run_program(program):
    ns = {}
    if not timed(lambda: exec(program, ns), 2.0):
        return [False] * len(tests), False
    passes, timeouts = [], 0
    for test in tests:
        if timeouts >= MAX_TIMEOUTS:
            passes.append(False)
            continue
        ok = timed(lambda: exec(test, dict(ns)), 0.5)
        timeouts += ok is None
        passes.append(bool(ok))
    def hidden():
        exec(task["hidden"], ns)
        ns["check"](ns[task["entry_point"]])
    return passes, bool(timed(hidden, 5.0))

for index, program in enumerate(task["programs"]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sys.stdout = sys.stderr = open(os.devnull, "w")
        passes, correct = run_program(program)
        os.write(write, json.dumps({"passes": passes, "correct": correct}).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    signal.setitimer(signal.ITIMER_REAL, 20.0)
    try:
        while True:
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.waitpid(pid, 0)
    except Timeout:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        chunks = []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.close(read)
    try:
        row = json.loads(b"".join(chunks))
    except ValueError:
        row = {"passes": [False] * len(tests), "correct": False}
    print(json.dumps({"index": index, **row}), flush=True)
"""


def truncate(completion: str) -> str:
    """CodeT's cut: stop at the first top-level def/class/if/print/# line."""
    lines = completion.split("\n")
    for i, line in enumerate(lines):
        if i > 0 and re.match(r"(def|class|if|print|#)", line):
            return "\n".join(lines[:i])
    return completion


def generated_tests(sample: str, entry_point: str) -> list[str]:
    """The first assertions of one test sample (it continues a prompt ending in ``assert ``)."""
    out: list[str] = []
    for part in re.split(r"\nassert\b", "assert " + sample):
        body = part.removeprefix("assert").strip()
        lines: list[str] = []
        for line in body.split("\n"):
            if lines and (not line.strip() or not line.startswith((" ", "\t"))):
                break
            lines.append(line.strip())
        statement = "assert " + " ".join(lines)
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            continue
        single = len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert)
        if single and entry_point in statement:
            out.append(ast.unparse(tree))
        if len(out) == TESTS_PER_SAMPLE:
            break
    return out


_ARROW = re.compile(r"^\s*(?P<call>[A-Za-z_]\w*\(.*\))\s*(?:==|➞|=>|->|→)\s*(?P<want>.+?)\s*$")


def example_tests(prompt: str, entry_point: str) -> list[str]:
    """Worked examples of a HumanEval docstring as assertions (doctest and arrow styles)."""
    tests: list[str] = []
    try:
        examples = doctest.DocTestParser().get_examples(prompt)
    except ValueError:
        examples = []
    for ex in examples:
        # The last example's expected output runs on to the docstring's closing quotes.
        want = ex.want.split('"""')[0].split("'''")[0].strip()
        if entry_point in ex.source and want:
            tests.append(f"assert ({ex.source.strip()}) == ({want})")
    if not tests:
        for line in prompt.splitlines():
            match = _ARROW.match(line)
            if match and match.group("call").startswith(entry_point + "("):
                tests.append(f"assert ({match.group('call')}) == ({match.group('want')})")
    valid = []
    for test in tests:
        try:
            valid.append(ast.unparse(ast.parse(test)))
        except SyntaxError:
            continue
    return list(dict.fromkeys(valid))


def load_tasks(data: Path, limit: int | None) -> list[dict[str, Any]]:
    from codegen.evaluation.humaneval import load_problems, task_key

    problems = load_problems()
    gen = [json.loads(line) for line in (data / "HumanEval_for_code_generation.jsonl").open()]
    tgen = [json.loads(line) for line in (data / "HumanEval_for_test_case_generation.jsonl").open()]
    code = {r["prompt"]: r["samples"] for r in map(json.loads, (data / CODE_FILE).open())}
    tests = {r["prompt"]: r["samples"] for r in map(json.loads, (data / TEST_FILE).open())}
    test_prompt = {r["task_id"]: r["prompt"] for r in tgen}
    tasks = []
    for row in gen[:limit]:
        entry = row["entry_point"]
        examples = example_tests(problems[task_key(row["task_id"])].prompt, entry)
        generated: list[str] = []
        for sample in tests[test_prompt[row["task_id"]]]:
            generated.extend(generated_tests(sample, entry))
        generated = [t for t in dict.fromkeys(generated) if t not in examples]
        samples = [row["prompt"] + truncate(s) for s in code[row["prompt"]]]
        programs = list(dict.fromkeys(samples))
        tasks.append(
            {
                "task_id": row["task_id"],
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples + generated,
                "trusted": [True] * len(examples) + [False] * len(generated),
                "hidden": row["test"],
            }
        )
    return tasks


def execute(sandbox: Any, task: dict[str, Any]) -> dict[str, Any]:
    from codegen.sandbox.types import Limits

    payload = {k: task[k] for k in ("programs", "tests", "hidden", "entry_point")}
    limits = Limits(timeout_s=600, memory_mb=1024, max_output_bytes=16_000_000)
    result = sandbox.run(
        {"driver.py": DRIVER, "task.json": json.dumps(payload)},
        ["python3", "-I", "-B", "driver.py"],
        limits,
    )
    rows: dict[int, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "index" in data:
            rows[int(data["index"])] = data
    blank = {"passes": [False] * len(task["tests"]), "correct": False}
    return {
        "passes": [rows.get(i, blank)["passes"] for i in range(len(task["programs"]))],
        "correct": [bool(rows.get(i, blank)["correct"]) for i in range(len(task["programs"]))],
        "timed_out": result.timed_out,
        "seconds": round(result.duration_s, 2),
    }


def task_digest(task: dict[str, Any]) -> str:
    blob = json.dumps([task["programs"], task["tests"], task["hidden"], DRIVER])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


Strategy = Callable[[list[tuple[bool, ...]], list[bool], list[bool]], float]


def _group_share(members: tuple[int, ...], correct: list[bool]) -> float:
    return sum(correct[m] for m in members) / len(members)


def strategies() -> dict[str, Strategy]:
    from codegen.agents.selection import dual_agreement, pick

    def generated_only(trusted: list[bool]) -> list[int]:
        return [t for t, tr in enumerate(trusted) if not tr]

    def only(rows: list[tuple[bool, ...]], columns: list[int]) -> list[tuple[bool, ...]]:
        return [tuple(r[t] for t in columns) for r in rows]

    return {
        "random": lambda rows, trusted, correct: sum(correct) / len(correct),
        # CodeT's own setting: its generated tests only (no docstring examples), so the
        # examples neither score nor split its groups.
        "codet": lambda rows, trusted, correct: _group_share(
            dual_agreement(only(rows, generated_only(trusted))).group.members, correct
        ),
        "ours": lambda rows, trusted, correct: _group_share(
            pick(rows, trusted).group.members, correct
        ),
        "ours_without_examples": lambda rows, trusted, correct: _group_share(
            pick(only(rows, generated_only(trusted))).group.members, correct
        ),
        "oracle": lambda rows, trusted, correct: float(any(correct)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    parser.add_argument("--draws", type=int, default=200, help="random subsets for N < 100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("/tmp/codegen-selection-exec.json"),
        help="execution results per task (reused when the task's inputs are unchanged)",
    )
    args = parser.parse_args()
    if not (args.data / CODE_FILE).exists():
        sys.exit(f"selection: error: no CodeT data in {args.data}")

    from codegen.sandbox import open_sandbox

    tasks = load_tasks(args.data, args.limit)
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    started = time.perf_counter()
    todo = [t for t in tasks if cache.get(t["task_id"], {}).get("digest") != task_digest(t)]
    with open_sandbox("auto", pool_size=args.workers) as box:

        def run(task: dict[str, Any]) -> None:
            cache[task["task_id"]] = {"digest": task_digest(task), **execute(box, task)}
            print(f"executed {task['task_id']}", file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            for done, _ in enumerate(pool.map(run, todo), 1):
                if done % 10 == 0:
                    args.cache.write_text(json.dumps(cache))
        backend = box.backend
    args.cache.write_text(json.dumps(cache))
    exec_seconds = time.perf_counter() - started

    rng = random.Random(args.seed)
    rules = strategies()
    totals = {n: dict.fromkeys(rules, 0.0) for n in SIZES}
    for task in tasks:
        ran = cache[task["task_id"]]
        rows = [tuple(ran["passes"][p]) for p in task["sample_program"]]
        correct = [ran["correct"][p] for p in task["sample_program"]]
        for n in SIZES:
            draws = 1 if n >= len(rows) else args.draws
            for _ in range(draws):
                chosen = range(len(rows)) if n >= len(rows) else rng.sample(range(len(rows)), n)
                sub_rows = [rows[i] for i in chosen]
                sub_correct = [correct[i] for i in chosen]
                for name, rule in rules.items():
                    totals[n][name] += rule(sub_rows, task["trusted"], sub_correct) / draws
    result = {
        "benchmark": "selection",
        "model": "CodeGen-16B (CodeT's samples, temperature 0.8)",
        "tasks": len(tasks),
        "draws_below_100": args.draws,
        "sandbox_backend": backend,
        "executed_tasks": len(todo),
        "execution_seconds": round(exec_seconds, 1),
        "mean_generated_tests": round(
            sum(len(t["tests"]) - sum(t["trusted"]) for t in tasks) / len(tasks), 1
        ),
        "tasks_with_examples": sum(any(t["trusted"]) for t in tasks),
        "pass_at_1_percent": {
            str(n): {k: round(100 * v / len(tasks), 2) for k, v in totals[n].items()} for n in SIZES
        },
    }
    result["ours_minus_codet_points"] = {
        str(n): round(
            result["pass_at_1_percent"][str(n)]["ours"]
            - result["pass_at_1_percent"][str(n)]["codet"],
            2,
        )
        for n in SIZES
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
