"""Picking one of N candidates by execution, on CodeT's CodeGen-16B HumanEval data.

    .venv/bin/python benchmarks/selection.py [--data DIR] [--limit TASKS] [--draws 200]
    .venv/bin/python benchmarks/selection.py --mapcoder ../shared/replays/mapcoder
    .venv/bin/python benchmarks/selection.py --mapcoder ../shared/replays/mapcoder-mbpp \
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
import ast
import hashlib
import json
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codegen.evaluation.humaneval import Problem

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = ROOT.parent / "shared" / "replays" / "codet-codegen16b"
CODE_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl"
TEST_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl"
SIZES = (5, 10, 25, 100)
DEFAULT_CACHE = Path("/tmp/codegen-selection-exec.json")
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


def example_tests(problem: Problem) -> list[str]:
    """The prompt's worked examples as assertions, read as the crew's importer reads them
    (``codegen.replay.derived.prompt_examples``: doctest, then the prose styles)."""
    from codegen.replay.derived import prompt_examples

    pairs = prompt_examples(problem)
    tests = [ast.unparse(ast.parse(f"assert ({c}) == ({w})")) for c, w in pairs]
    return list(dict.fromkeys(tests))


def _calls_of(assertions: list[str]) -> list[str]:
    return [a.removeprefix("assert ") for a in assertions]


def shared_inputs(
    entry: str,
    examples: list[str],
    generated: list[str],
    seed: int,
    prompt: str = "",
    bare_prompt: str = "",
) -> tuple[list[list[Any]], list[int], list[int]]:
    """The union of two input sets, and the indices of each: without examples (the generated
    tests' call sites and their mutations: CodeT's setting; with no call site, seeds from the
    signature of ``bare_prompt``, CodeT's prompt with the examples removed, as the crew seeds
    from its spec's signature) and with them (the examples' calls and the other calls written
    in the HumanEval prompt too, and mutations of all)."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for

    budget = InputBudget(seed=seed)
    without = inputs_for(entry, [], generated, budget, signature=bare_prompt)
    with_ex = inputs_for(
        entry,
        _calls_of(examples),
        generated,
        budget,
        prose=[prompt],
        signature=prompt,
    )
    union: dict[str, list[Any]] = {}
    for item in [*without, *with_ex]:
        union.setdefault(item.key(), list(item.args))
    keys = list(union)
    return (
        list(union.values()),
        [keys.index(i.key()) for i in without],
        [keys.index(i.key()) for i in with_ex],
    )


def load_tasks(data: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
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
        prompt = problems[task_key(row["task_id"])].prompt
        examples = example_tests(problems[task_key(row["task_id"])])
        generated: list[str] = []
        for sample in tests[test_prompt[row["task_id"]]]:
            generated.extend(generated_tests(sample, entry))
        generated = [t for t in dict.fromkeys(generated) if t not in examples]
        samples = [row["prompt"] + truncate(s) for s in code[row["prompt"]]]
        programs = list(dict.fromkeys(samples))
        inputs, without, with_ex = shared_inputs(
            entry, examples, generated, seed, prompt, bare_prompt=row["prompt"]
        )
        tasks.append(
            {
                "task_id": row["task_id"],
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples + generated,
                "trusted": [True] * len(examples) + [False] * len(generated),
                "hidden": row["test"],
                "inputs": inputs,
                "inputs_without_examples": without,
                "inputs_with_examples": with_ex,
            }
        )
    return tasks


def load_mapcoder(folder: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """MapCoder's HumanEval runs (``../shared/replays/mapcoder/``): per task, each run's
    extracted code (``source_codes[-1]``, after the prompt) as one candidate, files in name
    order. There are no generated tests: the rows are the docstring's worked examples, and
    the shared inputs are the prompt's calls (examples and the other literal calls it writes
    out) and their mutations."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for
    from codegen.evaluation.humaneval import load_problems

    problems = load_problems()
    files = sorted(folder.glob("*.jsonl"))
    runs = [{r["task_id"]: r for r in map(json.loads, f.open())} for f in files]
    ids = sorted(problems, key=lambda k: int(re.findall(r"\d+", k)[-1]))
    tasks = []
    for key in ids[:limit]:
        problem = problems[key]
        entry = problem.entry_point
        examples = example_tests(problem)
        codes = [((run.get(problem.task_id) or {}).get("source_codes") or [""])[-1] for run in runs]
        samples = [problem.prompt + "\n" + code for code in codes]
        programs = list(dict.fromkeys(samples))
        with_ex = inputs_for(
            entry,
            _calls_of(examples),
            [],
            InputBudget(seed=seed),
            prose=[problem.prompt],
            signature=problem.prompt,
        )
        tasks.append(
            {
                "task_id": problem.task_id,
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples,
                "trusted": [True] * len(examples),
                "hidden": problem.test,
                "inputs": [list(i.args) for i in with_ex],
                "inputs_without_examples": [],
                "inputs_with_examples": list(range(len(with_ex))),
                "files": [f.stem for f in files],
                "codes": codes,
            }
        )
    return tasks


def load_mapcoder_mbpp(
    folder: Path, tasks_file: Path, limit: int | None, seed: int
) -> list[dict[str, Any]]:
    """MapCoder's MBPP runs (``../shared/replays/mapcoder-mbpp/``): per task, each run's
    extracted code (``source_codes[-1]``, after the prompt, which carries the typing imports)
    as one candidate, files in name order. The worked examples are the task set's visible
    ``sample_io`` (``tasks_file``, the 397-task set: one public example per task, the same for
    every run); the hidden test is the rows' own ``test``, the one the authors ran (their
    counts reproduce only against it)."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for

    files = sorted(folder.glob("*.jsonl"))
    runs = [{r["task_id"]: r for r in map(json.loads, f.open())} for f in files]
    visible = {r["name"]: r.get("sample_io") or [] for r in map(json.loads, tasks_file.open())}
    tasks = []
    for key in sorted(runs[0])[:limit]:
        first = runs[0][key]
        entry, prompt = first["entry_point"], first["prompt"]
        examples: list[str] = []
        for text in visible.get(key, []):
            try:
                examples.append(ast.unparse(ast.parse(text.strip())))
            except SyntaxError:
                continue
        codes = [((run.get(key) or {}).get("source_codes") or [""])[-1] for run in runs]
        samples = [prompt + "\n" + code for code in codes]
        programs = list(dict.fromkeys(samples))
        with_ex = inputs_for(
            entry,
            _calls_of(examples),
            [],
            InputBudget(seed=seed),
            prose=[prompt],
            signature=prompt,
        )
        tasks.append(
            {
                "task_id": key,
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples,
                "trusted": [True] * len(examples),
                "hidden": first["test"],
                "inputs": [list(i.args) for i in with_ex],
                "inputs_without_examples": [],
                "inputs_with_examples": list(range(len(with_ex))),
                "files": [f.stem for f in files],
                "codes": codes,
            }
        )
    return tasks


# The shared-input run's limits: the crew's own (codegen.agents.pick.agreement), unless
# --call-limit / --max-timeouts override them for a measurement.
CALLS: dict[str, float] = {}


def call_settings() -> tuple[float, float, int]:
    from codegen.agents.pick import CALL_LIMIT_S, DRAFT_DEADLINE_S, MAX_TIMEOUTS

    return (
        CALLS.get("call_limit_s", CALL_LIMIT_S),
        CALLS.get("module_deadline_s", DRAFT_DEADLINE_S),
        int(CALLS.get("max_timeouts", MAX_TIMEOUTS)),
    )


def execute_tests(sandbox: Any, task: dict[str, Any]) -> dict[str, Any]:
    """Today's execution: every program on every assertion and on the hidden tests."""
    from codegen.sandbox.types import Limits

    payload = {k: task[k] for k in ("programs", "tests", "hidden", "entry_point")}
    limits = Limits(timeout_s=600, memory_mb=1024, max_output_bytes=16_000_000)
    started = time.perf_counter()
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
        "digest": task_digest(task),
        "passes": [rows.get(i, blank)["passes"] for i in range(len(task["programs"]))],
        "correct": [bool(rows.get(i, blank)["correct"]) for i in range(len(task["programs"]))],
        "timed_out": result.timed_out,
        "seconds": round(result.duration_s, 2),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }


def execute_inputs(sandbox: Any, task: dict[str, Any]) -> dict[str, Any]:
    """Every program on the shared inputs, in one execution (``call_functions``)."""
    from codegen.agents.pick import BehaviourTable
    from codegen.sandbox.calls import call_functions
    from codegen.sandbox.types import Limits

    call_limit, deadline, max_timeouts = call_settings()
    started = time.perf_counter()
    outcomes = call_functions(
        sandbox,
        task["programs"],
        task["entry_point"],
        task["inputs"],
        call_limit,
        Limits(memory_mb=1024),
        module_deadline_s=deadline,
        max_timeouts=max_timeouts,
        max_value_chars=2000,
    )
    call_seconds = time.perf_counter() - started
    return {
        "inputs_digest": inputs_digest(task),
        "classes": BehaviourTable.of(outcomes).classes,
        "call_seconds": round(call_seconds, 2),
    }


def task_digest(task: dict[str, Any]) -> str:
    blob = json.dumps([task["programs"], task["tests"], task["hidden"], DRIVER])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def inputs_digest(task: dict[str, Any]) -> str:
    blob = json.dumps([task["programs"], task["inputs"], *call_settings()])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Draw:
    """One subset of a task's samples, as every rule sees it."""

    rows: list[tuple[bool, ...]]
    trusted: list[bool]
    correct: list[bool]
    members: list[int]  # the samples' programs (rows of ``table``)
    table: Any  # codegen.agents.pick.behaviour.BehaviourTable
    without_examples: tuple[int, ...]  # input columns of each setting
    with_examples: tuple[int, ...]
    sources: tuple[str, ...] = ()  # each sample's model (MapCoder: its run), when known
    typical: tuple[float, ...] = ()  # each sample's typicality among the draw's code, when known


@dataclass(frozen=True)
class Picked:
    """A rule's pick: the share of correct members in its group, and whether the rule calls
    it passing (every test it counts green), with and without the suspect tests."""

    share: float
    passing: bool | None = None
    passing_with_suspect: bool | None = None


Strategy = Callable[[Draw], Picked]

# How a rule takes one member of its winning group (MapCoder): at random (the group's share
# of correct samples), the crew's choice before typicality (the most reliable, then the
# earliest) and the crew's now (``codegen.agents.pick.typical.most_typical``).
MEMBERS = ("random", "earliest", "typical")


def _share(members: Sequence[int], positions: dict[int, list[int]], correct: list[bool]) -> float:
    """Share of correct samples among the samples whose rows are in ``members``."""
    picked = [i for m in members for i in positions[m]]
    return sum(correct[i] for i in picked) / len(picked)


def _member(how: str, samples: list[int], draw: Draw, priors: Sequence[float] | None) -> float:
    """Whether the member of ``samples`` taken ``how`` (``MEMBERS``) is correct; for
    ``random``, the share of correct ones."""
    from codegen.agents.pick import most_typical

    if how == "random":
        return sum(draw.correct[i] for i in samples) / len(samples)
    typical = draw.typical if how == "typical" else [0.0] * len(draw.correct)
    return float(draw.correct[most_typical(samples, typical, priors)])


def strategies(reliability: Any = None) -> dict[str, Strategy]:
    """The rules; with ``reliability`` (``codegen.agents.pick.reliability.Reliability``, estimated
    over the run's tasks) also ``weighted``: agreement with each sample weighing its source's
    log-odds."""
    from codegen.agents.pick import (
        CHECK_ERRORS,
        agreement_pick,
        dual_agreement,
        pick,
        posterior_pick,
    )

    def generated_only(trusted: list[bool]) -> list[int]:
        return [t for t, tr in enumerate(trusted) if not tr]

    def only(rows: list[tuple[bool, ...]], columns: list[int]) -> list[tuple[bool, ...]]:
        return [tuple(r[t] for t in columns) for r in rows]

    def verdict(row: tuple[bool, ...], suspect: Sequence[int]) -> tuple[bool, bool]:
        kept = [ok for t, ok in enumerate(row) if t not in set(suspect)]
        return all(kept), all(row)

    def codet(d: Draw, examples: bool = True) -> Picked:
        # With no generated tests at all (MapCoder's runs; 6 of CodeT's 164 tasks), CodeT's
        # rule over the examples; without examples (CodeT's own setting, as the rules it is
        # compared with there) it has nothing to go on: every sample in one group.
        generated = generated_only(d.trusted)
        rows = only(d.rows, generated) if generated or not examples else d.rows
        chosen = dual_agreement(rows)
        row = rows[chosen.chosen]
        return Picked(_share(chosen.group.members, _self(rows), d.correct), all(row), all(row))

    def ours(d: Draw, examples: bool) -> Picked:
        rows = d.rows if examples else only(d.rows, generated_only(d.trusted))
        chosen = pick(rows, d.trusted if examples else None)
        ok, ok_all = verdict(rows[chosen.chosen], chosen.suspect_tests)
        return Picked(_share(chosen.group.members, _self(rows), d.correct), ok, ok_all)

    def agreement(
        d: Draw,
        examples: bool,
        weighted: str = "",
        support: str = "group",
        checks: bool = False,
        member: str = "",
    ) -> Picked:
        rows = d.rows if examples else only(d.rows, generated_only(d.trusted))
        priors = (
            reliability.probabilities(d.sources)
            if weighted == "probability"
            else reliability.weights(d.sources)
            if weighted == "log_odds"
            else [1.0] * len(d.rows)
        )
        chosen = agreement_pick(
            d.table,
            rows,
            d.trusted if examples else None,
            members=d.members,
            inputs=d.with_examples if examples else d.without_examples,
            priors=priors if weighted else None,
            support="similarity" if support == "similarity" else "group",
            errors=CHECK_ERRORS if checks else None,
        )
        # group members are programs; map back to the draw's samples
        samples = [i for i, m in enumerate(d.members) if m in set(chosen.group.members)]
        first = samples[0]
        ok, ok_all = verdict(rows[first], chosen.suspect_tests)
        if member:
            return Picked(_member(member, samples, d, priors if weighted else None), ok, ok_all)
        if weighted:
            # The pick is the group's most reliable member (its source's weight): that
            # sample's verdict, not the group's share.
            best = max(samples, key=lambda i: (priors[i], -i))
            return Picked(float(d.correct[best]), ok, ok_all)
        # the group shares outputs and suite verdicts: its samples' share of correct ones
        return Picked(sum(d.correct[i] for i in samples) / len(samples), ok, ok_all)

    def posterior(d: Draw) -> Picked:
        # posterior_agreement: no hard example filter; the pick is one sample (the most
        # reliable member of the most probable behaviour), scored as that sample.
        priors = reliability.probabilities(d.sources)
        chosen = posterior_pick(
            d.table, d.rows, d.trusted, priors, members=d.members, inputs=d.with_examples
        )
        samples = [i for i, m in enumerate(d.members) if m in set(chosen.group.members)]
        best = max(samples, key=lambda i: (priors[i], -i))
        ok, ok_all = verdict(d.rows[best], chosen.suspect_tests)
        return Picked(float(d.correct[best]), ok, ok_all)

    rules: dict[str, Strategy] = {
        "random": lambda d: Picked(sum(d.correct) / len(d.correct)),
        # CodeT's own setting: its generated tests only (no docstring examples), so the
        # examples neither score nor split its groups.
        "codet": codet,
        "codet_without_examples": lambda d: codet(d, False),
        "ours": lambda d: ours(d, True),
        "ours_without_examples": lambda d: ours(d, False),
        "agreement": lambda d: agreement(d, True),
        "agreement_without_examples": lambda d: agreement(d, False),
        "oracle": lambda d: Picked(float(any(d.correct))),
    }

    def agreement_rule(shape: tuple[str, str, bool], member: str = "") -> Strategy:
        return lambda d: agreement(d, True, *shape, member)

    if reliability is not None:
        # agreement()'s weighting, support and checks per rule. weighted: each sample's
        # source's estimated accuracy as its prior, MBR-exec's expected agreement (similarity)
        # over the shared inputs; the two ablations beside it. weighted_checks: the crew's
        # pick with a history now (weighted, after leaving out the checks the posterior shows
        # more likely wrong than right).
        shapes = {
            "weighted": ("probability", "similarity", False),
            "weighted_groups": ("log_odds", "group", False),
            "similarity": ("", "similarity", False),
            "weighted_checks": ("probability", "similarity", True),
        }
        rules.update({name: agreement_rule(shape) for name, shape in shapes.items()})
        # posterior: that posterior's own pick (exact groups, no hard filter), an ablation
        rules["posterior"] = posterior
        # each agreement rule with its group's member taken each way of MEMBERS
        for name, shape in {"agreement": ("", "group", False), **shapes}.items():
            for how in MEMBERS:
                rules[f"{name}_{how}_member"] = agreement_rule(shape, how)
    return rules


def votes_of(draw: Draw) -> Any:
    """What ``codegen.agents.pick.reliability.estimate`` sees of one task: each sample's source,
    eligibility and behaviour group under today's (unweighted) agreement pick."""
    from codegen.agents.pick import TaskVotes, agreement_pick

    chosen = agreement_pick(
        draw.table, draw.rows, draw.trusted, members=draw.members, inputs=draw.with_examples
    )
    return TaskVotes(
        sources=draw.sources,
        eligible=tuple(v.group >= 0 for v in chosen.candidates),
        behaviours=tuple(v.group for v in chosen.candidates),
    )


def draw_all(
    task: dict[str, Any], ran: dict[str, Any], chosen: Sequence[int] | None = None
) -> Draw:
    """The samples ``chosen`` (default all) of ``task`` as every rule sees them."""
    from codegen.agents.pick import BehaviourTable, typicality

    picked = list(range(len(task["sample_program"]))) if chosen is None else list(chosen)
    codes = task.get("codes")
    programs = [task["sample_program"][i] for i in picked]
    files = task.get("files") or []
    return Draw(
        rows=[tuple(ran["passes"][p]) for p in programs],
        trusted=task["trusted"],
        correct=[ran["correct"][p] for p in programs],
        members=programs,
        table=BehaviourTable(ran["classes"], [{} for _ in task["inputs"]]),
        without_examples=tuple(task["inputs_without_examples"]),
        with_examples=tuple(task["inputs_with_examples"]),
        sources=tuple(files[i] if i < len(files) else "" for i in picked),
        typical=tuple(typicality([codes[i] for i in picked])) if codes else (),
    )


def _self(rows: list[tuple[bool, ...]]) -> dict[int, list[int]]:
    return {i: [i] for i in range(len(rows))}


def main() -> None:
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
    args = parser.parse_args()
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

    from codegen.sandbox import open_sandbox

    if args.mapcoder is not None:
        tasks = (
            load_mapcoder_mbpp(args.mapcoder, args.mbpp_set, args.limit, args.seed)
            if args.mbpp_set is not None
            else load_mapcoder(args.mapcoder, args.limit, args.seed)
        )
        sizes: tuple[int, ...] = (len(tasks[0]["sample_program"]),)
    else:
        tasks = load_tasks(args.data, args.limit, args.seed)
        sizes = SIZES
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    started = time.perf_counter()

    def stale(task: dict[str, Any]) -> bool:
        entry = cache.get(task["task_id"], {})
        return entry.get("digest") != task_digest(task) or (
            entry.get("inputs_digest") != inputs_digest(task)
        )

    todo = [t for t in tasks if stale(t)]
    lock = threading.Lock()
    with open_sandbox("auto", pool_size=args.workers) as box:

        def run(task: dict[str, Any]) -> None:
            entry = dict(cache.get(task["task_id"], {}))
            if entry.get("digest") != task_digest(task):
                entry.update(execute_tests(box, task))
            if entry.get("inputs_digest") != inputs_digest(task):
                entry.update(execute_inputs(box, task))
            with lock:
                cache[task["task_id"]] = entry
            print(f"executed {task['task_id']}", file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            for done, _ in enumerate(pool.map(run, todo), 1):
                if done % 10 == 0:
                    with lock:
                        args.cache.write_text(json.dumps(cache))
        backend = box.backend
    args.cache.write_text(json.dumps(cache))
    exec_seconds = time.perf_counter() - started

    rng = random.Random(args.seed)
    reliability = None
    if args.mapcoder is not None:
        # Each run is one source; its reliability is estimated over this run's tasks from
        # example verdicts and agreement only (no hidden test), then every pick uses it.
        from codegen.agents.pick import estimate

        reliability = estimate([votes_of(draw_all(task, cache[task["task_id"]])) for task in tasks])
    rules = strategies(reliability)
    totals = {n: dict.fromkeys(rules, 0.0) for n in sizes}
    # precision of `passed`: (tasks called passing, correct share summed), per rule and N
    called = {n: {k: [0.0, 0.0, 0.0, 0.0] for k in rules} for n in sizes}
    for task in tasks:
        ran = cache[task["task_id"]]
        samples = len(task["sample_program"])
        for n in sizes:
            draws = 1 if n >= samples else args.draws
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

    def precision(n: int, name: str) -> dict[str, float | None]:
        passed, right, passed_all, right_all = called[n][name]
        return {
            "passed": round(passed, 1),
            "precision": round(right / passed, 4) if passed else None,
            "passed_with_suspect_tests": round(passed_all, 1),
            "precision_with_suspect_tests": round(right_all / passed_all, 4)
            if passed_all
            else None,
        }

    walls = [cache[t["task_id"]].get("wall_seconds", 0.0) for t in tasks]
    seconds = [cache[t["task_id"]]["seconds"] for t in tasks]
    call_seconds = [cache[t["task_id"]]["call_seconds"] for t in tasks]
    result = {
        "benchmark": "selection",
        "model": "CodeGen-16B (CodeT's samples, temperature 0.8)",
        "tasks": len(tasks),
        "draws_below_100": args.draws,
        "sandbox_backend": backend,
        "executed_tasks": len(todo),
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
            str(n): {k: precision(n, k) for k in rules if k not in ("random", "oracle")}
            for n in sizes
        },
    }
    if args.mapcoder is not None:
        files = tasks[0]["files"]
        per_file = [
            sum(cache[t["task_id"]]["correct"][t["sample_program"][f]] for t in tasks)
            for f in range(len(files))
        ]
        benchmark = "MBPP" if args.mbpp_set is not None else "HumanEval"
        result["model"] = f"MapCoder's {benchmark} runs, one candidate per run"
        result["solved_per_run"] = dict(zip(files, per_file, strict=True))
        n = sizes[0]
        result["solved"] = {k: round(v, 2) for k, v in totals[n].items()}
        result["solved"]["best_single"] = max(per_file)
        result["agreement_minus_best_single"] = round(totals[n]["agreement"] - max(per_file), 2)
        result["weighted_minus_best_single"] = round(totals[n]["weighted"] - max(per_file), 2)
        result["weighted_checks_minus_best_single"] = round(
            totals[n]["weighted_checks"] - max(per_file), 2
        )
        result["group_member_solved"] = {
            name: {how: round(totals[n][f"{name}_{how}_member"], 2) for how in MEMBERS}
            for name in rules
            if f"{name}_{MEMBERS[0]}_member" in rules
        }
        assert reliability is not None
        result["reliability"] = {
            "accuracy": dict(reliability.accuracy),
            "weight": {f: round(reliability.weight(f), 3) for f in files},
            "iterations": reliability.iterations,
        }
        print(json.dumps(result, indent=2))
        return
    pass_at_1 = result["pass_at_1_percent"]
    result["agreement_minus_codet_points"] = {
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
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
