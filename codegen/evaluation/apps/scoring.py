"""Score APPS programs in the sandbox as a plain run does: each hidden input on a fresh
process's stdin, its stdout against the expected lines (trailing whitespace of each line and
of the whole output ignored), ``TIME_LIMIT_S`` per input.

The entry point is :func:`score_programs` (the shape's scorer). One sandbox execution runs a
batch of a task's programs through ``program_driver`` (``sandbox/inside/``): it forks and
execs each run fenced in its sample's scratch folder, feeds the input, reads the output with a
cap (``MAX_STDOUT_BYTES``), kills at the limit and judges the run itself: the verdict is
decided outside the program's process. A sample stops at its first failing input; its
category is that input's: ``wrong_answer`` (other output, or stdout past the cap),
``runtime_error`` (a non-zero exit, a signal), ``timeout``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence

from codegen.evaluation.apps.tasks import hidden_cases
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import MAX_BATCH, Category, SampleScore, _lost, batch_lines
from codegen.json_types import JSONObject
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.programs import MAX_STDOUT_BYTES, RUN_SLACK_S
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files
from codegen.sandbox.time_limit import load_1m
from codegen.sandbox.types import ExecResult, Limits

# 1: the first program driver; 2: stdout of exactly the cap is output, not a kill. Part of
# every verdict's key: bump when the runner changes.
SCORING_VERSION = "2"
TIME_LIMIT_S = 4.0  # per input run, wall clock


def batch_files(
    cases: list[JSONObject], programs: Sequence[str], limits: Limits, token: str, own_pid: bool
) -> dict[str, str]:
    """``program_driver``'s files for one batch: the driver, its token and the batch."""
    batch = {
        "programs": list(programs),
        "cases": cases,
        "timeout_s": TIME_LIMIT_S,
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "max_output_bytes": MAX_STDOUT_BYTES,
        "own_pid_namespace": own_pid,
    }
    return {
        **driver_files("program_driver.py"),
        "token.txt": token,
        "batch.json": json.dumps(batch),
    }


def _execution_limits(limits: Limits, programs: int, cases: int) -> Limits:
    return Limits(
        timeout_s=programs * cases * (TIME_LIMIT_S + RUN_SLACK_S) + 10.0,
        memory_mb=limits.memory_mb,
        pids=limits.pids,
        cpus=limits.cpus,
        workdir_mb=limits.workdir_mb,
        max_output_bytes=max(limits.max_output_bytes, 4000 * programs),
    )


def parse_lines(result: ExecResult, token: str, count: int) -> dict[int, SampleScore]:
    """The verdicts the driver printed under ``token``; samples it never reached are absent."""
    scores: dict[int, SampleScore] = {}
    for index, data, category in batch_lines(result, token, count):
        inputs = data.get("inputs") if isinstance(data.get("inputs"), list) else []
        passed = sum(1 for c in inputs if c == Category.PASSED)
        message = str(data.get("message", ""))[:500]
        timed_out = category == Category.TIMEOUT
        scores[index] = SampleScore(
            category == Category.PASSED,
            category,
            message or f"{passed} inputs passed",
            float(data.get("duration_s", 0.0)),
            isolated=data.get("isolated") is True,
            fence=str(data.get("fence", ""))[:300],
            time_limit_s=TIME_LIMIT_S if timed_out else None,
            load_1m=load_1m() if timed_out else None,
        )
    return scores


def _run(
    sandbox: Sandbox, cases: list[JSONObject], programs: Sequence[str], limits: Limits
) -> tuple[dict[int, SampleScore], ExecResult]:
    token = secrets.token_hex(16)
    files = batch_files(cases, programs, limits, token, own_pid_namespace(sandbox))
    whole = _execution_limits(limits, len(programs), len(cases))
    result = sandbox.run(files, DRIVER_COMMAND, whole)
    return parse_lines(result, token, len(programs)), result


def score_programs(
    sandbox: Sandbox, problem: Problem, candidates: Sequence[str | None], limits: Limits
) -> list[SampleScore]:
    """Verdicts for ``candidates`` (whole programs) of ``problem``, in order, up to
    ``MAX_BATCH`` per sandbox execution; a sample a cut-short execution never reached runs
    alone (``limits`` gives the memory; the time limit is ``TIME_LIMIT_S`` per input)."""
    cases = hidden_cases(problem)
    scores: dict[int, SampleScore] = {}
    todo = [i for i, code in enumerate(candidates) if code is not None and code.strip()]
    for start in range(0, len(todo), MAX_BATCH):
        chunk = todo[start : start + MAX_BATCH]
        found, _ = _run(sandbox, cases, [candidates[i] or "" for i in chunk], limits)
        scores.update({chunk[j]: score for j, score in found.items()})
    for i in todo:
        if i not in scores:
            found, result = _run(sandbox, cases, [candidates[i] or ""], limits)
            scores[i] = found.get(0) or _lost(result)
    none = SampleScore(False, Category.CREW_STATUS, "no code to score")
    return [scores.get(i, none) for i in range(len(candidates))]
