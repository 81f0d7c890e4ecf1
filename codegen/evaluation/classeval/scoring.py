"""Score ClassEval candidates in the sandbox: each unittest class of a task on its own.

The entry point is :func:`score_classes`: a task's candidate modules (whole modules, the
task's imports in front: ``classeval.candidate_module``) in, one :class:`SampleScore` per
candidate out, ``passed`` meaning class success and ``test_classes`` holding one result per
unittest class (its outcome, counts, reason, ``isolated`` and the candidate's ``fence``).

Each (candidate, test class) pair is one sample of the hidden-test driver
(``score_driver``): the candidate loads in its own process, the test side runs the task's
import lines, the whole unittest module and then only that class, reaching the candidate's
class and module names across the process boundary (``isolation``), and writes the verdict
where the candidate cannot reach; both work in the pair's own scratch folder (tests write
files the class reads). There is no other way: a test class whose values cannot cross ends
``cannot_isolate`` (its outcome ``error``, the reason saying what could not cross). A pair has
``TEST_CLASS_TIMEOUT_S`` (the authors' 5 s), which also covers loading the module, as the
authors' limit covered the first class's import of it.

The outcomes are the authors' (``classeval_evaluation/test_pipeline.py``): ``success`` (every
test ran and passed), ``partial_success`` (some passed), ``fail`` (none passed, not all
errored), ``error`` (none ran: no module, a timeout; or every test errored). A class is a
class success when every test class succeeds, a partial success when none fails or errors.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeAlias

from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import (
    MAX_BATCH,
    Category,
    SampleScore,
    _batch_limits,
    _lost,
    cross_names,
    driver_batch_files,
    parse_batch,
    prepare_test,
)
from codegen.json_types import JSONObject
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.protocol import DRIVER_COMMAND
from codegen.sandbox.types import Limits

# 2: a fixed hash seed (sandbox.protocol.DRIVER_COMMAND): ClassEval_22's list(set(...))
# passed or failed by the test process's random seed; 3: no test class runs the old way;
# 4: values cross (Inventory's live dict), the fence reads /etc/mime.types, one temp folder.
SCORING_VERSION = "4"  # bump when the runner or the outcomes change (part of verdict keys)
TEST_CLASS_TIMEOUT_S = 5.0
SUCCESS, PARTIAL, FAIL, ERROR = "success", "partial_success", "fail", "error"
_MARK = "CLASSEVAL"
# (candidate module, test class)
Pair: TypeAlias = tuple[str, str]
_COUNTS = re.compile(rf"^AssertionError: {_MARK} (\d+) (\d+) (\d+) \| ?(.*)$", re.S)

# Appended to the unittest module for one test class; the test side runs it. A value of the
# test that cannot cross (or a candidate that is gone) is re-raised past unittest, which
# would otherwise count it as one test's error: the pair then ends cannot_isolate (or
# runtime_error), whatever the other tests did.
_RUNNER = """

def _classeval_run(name):
    import sys
    import unittest

    gone = sys.modules.get("isolation")
    fatal = tuple(getattr(gone, n) for n in ("CannotCross", "ChildGone") if hasattr(gone, n))

    class Result(unittest.TestResult):
        first_fatal = None

        def addError(self, test, err):
            if fatal and issubclass(err[0], fatal) and self.first_fatal is None:
                self.first_fatal = err[1]
            super().addError(test, err)

    result = Result()
    unittest.defaultTestLoader.loadTestsFromTestCase(globals()[name]).run(result)
    if result.first_fatal is not None:
        raise result.first_fatal
    bad = result.failures + result.errors
    if bad or not result.testsRun:
        test, trace = bad[0] if bad else (name, "no tests ran")
        lines = [line for line in str(trace).strip().splitlines() if line.strip()]
        why = f"{getattr(test, 'id', lambda: test)()}: {lines[-1] if lines else ''}"
        counts = f"{result.testsRun} {len(result.failures)} {len(result.errors)}"
        raise AssertionError(f"MARK {counts} | {why}")


_classeval_run(NAME)
"""


# Before the unittest module: the authors ran it as a file, and some tests read ``__file__``.
_HEADER = "__file__ = __import__('os').path.join(__import__('os').getcwd(), 'test_module.py')\n"


def runner_test(problem: Problem, test_class: str) -> str:
    """The unittest module with the runner of ``test_class`` appended."""
    code = _RUNNER.replace("MARK", _MARK).replace("NAME", repr(test_class))
    return _HEADER + problem.test.rstrip() + "\n" + code


def outcome(category: str, message: str) -> JSONObject:
    """One test class's result from its pair's verdict: the authors' outcome and counts."""
    if category == Category.PASSED:
        return {"result": SUCCESS, "reason": ""}
    found = _COUNTS.match(message) if category == Category.WRONG_ANSWER else None
    if found is None:  # no module, a timeout, a crash: nothing ran (the authors' testsRun 0)
        return {"result": ERROR, "tests_run": 0, "reason": f"{category}: {message}"[:500]}
    run, failures, errors = (int(found.group(i)) for i in (1, 2, 3))
    if run == 0 or errors == run:
        result = ERROR
    elif failures + errors < run:
        result = PARTIAL
    else:
        result = FAIL
    reason = f"{failures + errors} of {run} tests fail ({errors} errors): {found.group(4)}"
    return {"result": result, "tests_run": run, "failures": failures, "errors": errors,
            "reason": reason[:500]}  # fmt: skip


def _batch_files(
    problem: Problem,
    pairs: Sequence[Pair],
    limits: Limits,
    token: str,
    own_pid_namespace: bool,
) -> dict[str, str]:
    """The driver's files for (candidate module, test class) pairs of one task."""
    assert problem.classeval is not None
    imports = "\n".join(problem.classeval.imports) + "\n"
    first = runner_test(problem, problem.classeval.test_classes[0])
    # Every runner adds the same names: one analysis serves all the task's test classes.
    remote, stdlib = cross_names(replace(problem, prompt=imports), prepare_test(first))
    task = {
        "entry_point": problem.entry_point,
        "prompt": imports,
        "test": first,
        "call_check": False,
        "check_name": "",
        "remote_names": remote,
        "stdlib_names": stdlib,
    }
    tests = {name: runner_test(problem, name) for name in {pair[1] for pair in pairs}}
    samples = [{"candidate": code, "test": tests[name]} for code, name in pairs]
    batch = {"task": task, "candidates": samples}
    return driver_batch_files(batch, limits, token, own_pid_namespace)


def _run_pairs(
    sandbox: Sandbox, problem: Problem, pairs: Sequence[Pair], limits: Limits
) -> list[SampleScore]:
    """Verdicts of ``pairs``, in order; a pair a cut-short execution never reached runs alone."""
    found: dict[int, SampleScore] = {}
    for start in range(0, len(pairs), MAX_BATCH):
        chunk = pairs[start : start + MAX_BATCH]
        token = secrets.token_hex(16)
        files = _batch_files(problem, chunk, limits, token, own_pid_namespace(sandbox))
        result = sandbox.run(files, DRIVER_COMMAND, _batch_limits(limits, len(chunk)))
        for j, score in parse_batch(result, token, len(chunk), limits.timeout_s).items():
            found[start + j] = score
    for i, pair in enumerate(pairs):
        if i not in found:
            token = secrets.token_hex(16)
            files = _batch_files(problem, [pair], limits, token, own_pid_namespace(sandbox))
            result = sandbox.run(files, DRIVER_COMMAND, _batch_limits(limits, 1))
            found[i] = parse_batch(result, token, 1, limits.timeout_s).get(0) or _lost(result)
    return [found[i] for i in range(len(pairs))]


def _class_score(names: Sequence[str], verdicts: Sequence[SampleScore]) -> SampleScore:
    """One candidate's score from its test classes' verdicts (``names`` order)."""
    results: list[JSONObject] = []
    for name, verdict in zip(names, verdicts, strict=True):
        entry: JSONObject = {"test_class": name, **outcome(verdict.category, verdict.message)}
        entry["isolated"], entry["fence"] = verdict.isolated, verdict.fence
        if verdict.category == Category.TIMEOUT:  # a verdict the machine's load can change
            entry["time_limit_s"], entry["load_1m"] = verdict.time_limit_s, verdict.load_1m
        results.append(entry)
    failing = [(r, v) for r, v in zip(results, verdicts, strict=True) if r["result"] != SUCCESS]
    passed = not failing
    message = "" if passed else f"{len(failing)} of {len(names)} test classes fail; "
    if failing:
        message += f"{failing[0][0]['test_class']}: {failing[0][0]['reason']}"
    # The weakest fence any of its test classes ran behind stands for the sample.
    fences = [v.fence or "none: not said" for v in verdicts]
    weaker = [f for f in fences if not f.startswith("landlock")]
    return SampleScore(
        passed,
        Category.PASSED if passed else failing[0][1].category,
        message[:500],
        round(sum(v.duration_s for v in verdicts), 4),
        isolated=all(v.isolated for v in verdicts),
        fence=(weaker or fences or ["none: no test class ran"])[0],
        test_classes=results,
    )


def score_classes(
    sandbox: Sandbox, problem: Problem, candidates: Sequence[str | None], limits: Limits
) -> list[SampleScore]:
    """ClassEval verdicts for ``candidates`` (whole modules) of ``problem``, in order: each
    test class of each candidate in its own pair of processes, ``TEST_CLASS_TIMEOUT_S`` each
    (``limits`` gives the memory), as few sandbox executions as ``MAX_BATCH`` allows."""
    if problem.classeval is None:
        raise ValueError(f"{problem.task_id} is not a ClassEval task")
    names = problem.classeval.test_classes
    limits = replace(limits, timeout_s=TEST_CLASS_TIMEOUT_S)
    todo = [i for i, code in enumerate(candidates) if code is not None and code.strip()]
    pairs = [(candidates[i] or "", name) for i in todo for name in names]
    verdicts = _run_pairs(sandbox, problem, pairs, limits) if pairs else []
    scores: list[SampleScore] = []
    for i in range(len(candidates)):
        if i not in todo:
            scores.append(SampleScore(False, Category.CREW_STATUS, "no code to score"))
            continue
        start = todo.index(i) * len(names)
        scores.append(_class_score(names, verdicts[start : start + len(names)]))
    return scores
