"""HumanEval+ scoring as EvalPlus does it, every solution run in the sandbox.

For each task the canonical solution (with the task's ``contract`` assertions on its inputs)
runs once on every base and plus input: its outputs are the expected ones and its time per
input sets the candidate's limit, ``max(MIN_TIME_LIMIT_S, TIME_LIMIT_FACTOR * t)`` (EvalPlus's
defaults, ``evalplus.config``). These expected outputs are cached in the store by the task's
content. A candidate then runs on the same inputs through the same runner
(``codegen.sandbox.calls``) and each output is compared as ``evalplus.eval.unsafe_execute``
compares it: exact equality, or where ``atol`` applies (given, or 1e-6 for float outputs)
``numpy.allclose`` with rtol 1e-7, same type and length; ``find_zero`` (HumanEval/32) is
judged by its own oracle, ``|poly(xs, x)| <= atol``. Base passes when every base input does;
plus when base and every plus input do. A candidate's inputs run base first in one execution
that stops at the first exception or timeout (nothing after it can change a verdict), as
EvalPlus stops at a first failure; the comparison stays on the host.

An input on which the canonical solution itself fails its contract (or raises) has no expected
output: it is left out, and counted (``invalid_inputs``).

Taken from EvalPlus (Apache-2.0), re-implemented here because its evaluator executes
candidates in the host process: the dataset fields, the comparison rule, the time-limit rule,
the find_zero oracle and stopping at a first failure. ``benchmarks/humanevalplus_speed.py``
runs EvalPlus's own evaluator (in a virtualenv of its own) beside this one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import HARNESS_VERSION, Category, SampleScore
from codegen.evaluation.store import EvalStore, digest
from codegen.json_types import JSONValue
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import (
    CallOutcome,
    Digest,
    Opaque,
    call_function,
    encode_int,
    is_close,
)
from codegen.sandbox.time_limit import load_1m
from codegen.sandbox.types import Limits

TIME_LIMIT_FACTOR = 4.0  # evalplus.config.DEFAULT_GT_TIME_LIMIT_FACTOR
MIN_TIME_LIMIT_S = 1.0  # evalplus.config.DEFAULT_MIN_TIME_LIMIT
# A candidate's whole run: min(TASK_TIMEOUT_S, the per-input limits summed) + 2 s, as
# EvalPlus's untrusted_check bounds it (EVALPLUS_TIMEOUT_PER_TASK, default 60).
TASK_TIMEOUT_S = 60.0
CANONICAL_TIME_LIMIT_S = 20.0  # per input, for the reference solution itself
EXPECTED_VERSION = "2"  # bump when the expected-output computation changes
# Bump when a candidate's run or comparison changes (verdict keys); 5: drafts fenced and apart.
SCORING_VERSION = "5"


# One input's arguments, as the task file gives them (JSON).
Args: TypeAlias = list[JSONValue]
# (args, the canonical solution's output, its seconds). The output is whatever the function
# returned, decoded from the sandbox (tuples, sets, dicts with any keys, opaque values):
# any Python value, hence ``object``.
ExpectedRow: TypeAlias = tuple[Args, object, float]


@dataclass(frozen=True)
class Expected:
    """The canonical solution's outputs and times on a task's valid inputs."""

    base: list[ExpectedRow]
    plus: list[ExpectedRow]
    invalid_inputs: int


def canonical_with_contract(problem: Problem) -> str:
    """prompt + contract (the assertions on the arguments) + canonical body."""
    contract = problem.plus.contract if problem.plus else ""
    return problem.prompt + contract + problem.canonical_solution


@lru_cache(maxsize=512)
def _inputs(text: str) -> list[Args]:
    inputs: list[Args] = json.loads(text)
    return inputs


def encode(value: object) -> JSONValue:
    """The inverse of ``codegen.sandbox.calls.decode``, for storing expected outputs."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return encode_int(value)  # exact at any size: JSON cannot write 4,301 digits
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"d": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, set | frozenset):
        return {"s": [encode(v) for v in value], "frozen": isinstance(value, frozenset)}
    if isinstance(value, Opaque):
        return {"o": value.type_name, "r": value.text}
    if isinstance(value, Digest):
        return {"digest": value.sha256}
    raise TypeError(f"cannot store a {type(value).__name__}")


def _decode(data: JSONValue) -> object:
    from codegen.sandbox.calls import decode

    if isinstance(data, dict) and "digest" in data:
        return Digest(str(data["digest"]))
    if isinstance(data, list):
        return [_decode(v) for v in data]
    return decode(data)


def expected_outputs(
    store: EvalStore, sandbox: Sandbox, problem: Problem, limits: Limits
) -> Expected:
    """The canonical outputs for ``problem``'s inputs: from the store, else run in the
    sandbox and stored."""
    assert problem.plus is not None
    key = digest(["plus-expected", problem.fingerprint, EXPECTED_VERSION, HARNESS_VERSION])
    stored = store.load_verdict(key)
    if stored is None:
        base, extra = _inputs(problem.plus.base_json), _inputs(problem.plus.plus_json)
        # One execution for both parts: a round trip saved per task.
        outcomes = call_function(
            sandbox,
            canonical_with_contract(problem),
            problem.entry_point,
            base + extra,
            CANONICAL_TIME_LIMIT_S,
            limits,
        )
        rows = [
            [i, encode(o.value), o.duration_s] if o.ok else [i, None, None]
            for i, o in enumerate(outcomes)
        ]
        stored = {
            "base": rows[: len(base)],
            "plus": [[i - len(base), v, t] for i, v, t in rows[len(base) :]],
        }
        store.save_verdict(key, stored)
    invalid = 0
    parts: dict[str, list[ExpectedRow]] = {}
    for part, text in (("base", problem.plus.base_json), ("plus", problem.plus.plus_json)):
        inputs = _inputs(text)
        rows = []
        for index, value, seconds in stored[part]:
            if seconds is None:
                invalid += 1
                continue
            rows.append((inputs[index], _decode(value), float(seconds)))
        parts[part] = rows
    return Expected(base=parts["base"], plus=parts["plus"], invalid_inputs=invalid)


def _is_floats(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list | tuple) and value:
        return all(isinstance(v, float) for v in value)
    return False


def _poly(xs: list[float], x: float) -> float:
    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def output_matches(
    problem: Problem, args: Args, outcome: CallOutcome, expected: object, atol: float
) -> bool:
    """EvalPlus's comparison of one output with the canonical one."""
    if not outcome.ok:
        return False
    out = outcome.value
    if problem.entry_point == "find_zero":  # HumanEval/32's own oracle
        if not isinstance(out, int | float) or isinstance(out, bool):
            return False
        try:
            return abs(_poly(*args, out)) <= atol
        except (OverflowError, TypeError, ValueError):
            return False
    try:
        exact = bool(out == expected)
    except Exception:
        exact = False
    if atol == 0 and _is_floats(expected):
        atol = 1e-6
    if not exact and atol != 0:
        return is_close(out, expected, atol)
    return exact


def _failure(outcome: CallOutcome, args: Args) -> tuple[str, str]:
    shown = json.dumps(args, default=str)[:120]
    if outcome.status == "timeout":
        return Category.TIMEOUT, f"time limit on input {shown}"
    if outcome.ok:
        return Category.WRONG_ANSWER, f"wrong output on input {shown}"
    if "SyntaxError" in outcome.error and "failed to load" in outcome.error:
        return Category.SYNTAX_ERROR, outcome.error
    return Category.RUNTIME_ERROR, f"{outcome.error} on input {shown}"


def score_plus(
    sandbox: Sandbox,
    problem: Problem,
    code: str | None,
    expected: Expected,
    limits: Limits,
) -> SampleScore:
    """Base and plus verdicts for one candidate module (``passed`` is base, ``plus`` plus)."""
    if code is None or not code.strip():
        return SampleScore(False, Category.CREW_STATUS, "no code to score", plus=False)
    assert problem.plus is not None
    rows = expected.base + expected.plus
    # The prompt runs first (its imports and helpers), then the candidate on top of it.
    module = problem.prompt + "\n" + code
    time_limits = [max(MIN_TIME_LIMIT_S, TIME_LIMIT_FACTOR * t) for _, _, t in rows]
    outcomes = call_function(
        sandbox,
        module,
        problem.entry_point,
        [a for a, _, _ in rows],
        time_limits,
        limits,
        deadline_s=min(TASK_TIMEOUT_S, sum(time_limits)) + 2.0,
        # An exception or a timeout fails plus, and base too when it is a base input (they
        # run first): nothing after it can change either verdict.
        stop_after_failure=True,
    )
    base_ok, plus_ok, first, limit = True, True, None, None
    for index, ((args, want, _), got) in enumerate(zip(rows, outcomes, strict=True)):
        if output_matches(problem, args, got, want, problem.plus.atol):
            continue
        if index < len(expected.base):
            base_ok = False
        plus_ok = False
        if first is None:
            first = _failure(got, args)
            limit = time_limits[index] if got.status == "timeout" else None
    duration = sum(o.duration_s for o in outcomes)
    # The first failure decides both verdicts: when it is a timeout, so did the time limit.
    load = load_1m() if limit is not None else None
    if base_ok:
        message = "" if plus_ok else f"plus: {first[1] if first else ''}"
        return SampleScore(
            True, Category.PASSED, message[:500], duration, plus=plus_ok,
            time_limit_s=limit, load_1m=load,
        )  # fmt: skip
    category, message = first or (Category.RUNTIME_ERROR, "")
    return SampleScore(
        False, category, message[:500], duration, plus=False, time_limit_s=limit, load_1m=load
    )
