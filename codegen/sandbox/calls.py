"""Call a module's function on a list of inputs in the sandbox; every outcome comes back.

One sandbox execution loads ``module`` and calls ``entry_point(*args)`` for each input in
order, each call under its own time limit; the result is one :class:`CallOutcome` per input:
the returned value, or the exception, or a timeout (an input the run never reached, because
the module failed to load or the run hit its deadline, is an outcome too). Values cross the
sandbox boundary as tagged JSON (``call_driver._encode``), decoded here into plain Python
values (tuple, set, dict, non-finite floats kept); nothing is unpickled and nothing the
module returns is executed on the host. HumanEval+ scoring (``codegen.evaluation.plus``) uses
it for the canonical and the candidate solutions alike.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files, isolation_files
from codegen.sandbox.types import ExecResult, Limits

Status = Literal["ok", "error", "timeout"]


def codec_decode(data: JSONValue) -> object:
    """A value in ``isolation``'s tags (big ints, bytes, complex, Decimal, Fraction)."""
    import base64
    from decimal import Decimal
    from fractions import Fraction

    assert isinstance(data, dict)
    if "i" in data:
        return int(str(data["i"]), 16)
    if "b" in data:
        raw = base64.b64decode(str(data["b"]), validate=True)
        return bytearray(raw) if data.get("mutable") else raw
    if "c" in data:
        real, imag = (decode(v) for v in cast(list[JSONValue], data["c"]))
        return complex(cast(float, real), cast(float, imag))
    if "dec" in data:
        return Decimal(str(data["dec"]))
    num, den = (decode(v) for v in cast(list[JSONValue], data["fr"]))
    return Fraction(cast(int, num), cast(int, den))


@dataclass(frozen=True)
class Opaque:
    """A returned value of a type the transport does not carry: its type name and repr."""

    type_name: str
    text: str


@dataclass(frozen=True)
class Digest:
    """A returned value too large to carry: the digest of an encoding under which values
    Python's ``==`` calls equal (2.0 and 2, True and 1, sets and dicts in any order) are
    equal."""

    sha256: str


LOAD_FAILED = "not reached: the module failed to load"


@dataclass(frozen=True)
class CallOutcome:
    status: Status
    value: object = None  # the returned value (any Python value) when status is "ok"
    error: str = ""  # "TypeError: ...", "time limit", "not reached: ..."
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def never_ran(self) -> bool:
        """The call was never made: the module's run stopped before this input (after its
        timeouts: the driver's "not run: ..."; at its deadline, after an earlier failure, or
        when the sandbox ended: "not reached: ..."). A module that failed to load did run,
        and failed: its inputs are errors."""
        return (
            self.status != "ok"
            and self.error.startswith(("not run", "not reached"))
            and not self.error.startswith(LOAD_FAILED)
        )


def decode(data: JSONValue) -> object:
    """The Python value of the driver's tagged JSON."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "t" in data:
        return tuple(decode(v) for v in data["t"])
    if "f" in data:
        return float(data["f"])
    if "d" in data:
        return {_hashable(decode(k)): decode(v) for k, v in data["d"]}
    if "s" in data:
        items = {_hashable(decode(v)) for v in data["s"]}
        return frozenset(items) if data.get("frozen") else items
    if "o" in data:
        return Opaque(str(data["o"]), str(data.get("r", "")))
    if any(tag in data for tag in ("i", "b", "c", "dec", "fr")):
        return codec_decode(data)  # the tags only ``isolation``'s codec writes
    raise ValueError(f"unknown value tag in {sorted(data)}")


def _hashable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _outcome(item: JSONObject) -> CallOutcome:
    status = item.get("status")
    duration = float(item.get("duration_s", 0.0))
    if status == "ok":
        if "digest" in item:
            return CallOutcome("ok", Digest(str(item["digest"])), duration_s=duration)
        return CallOutcome("ok", decode(json.loads(item["value"])), duration_s=duration)
    if status == "timeout":
        return CallOutcome("timeout", error=str(item.get("error", "")), duration_s=duration)
    return CallOutcome("error", error=str(item.get("error", "")), duration_s=duration)


def call_function(
    sandbox: Sandbox,
    module: str,
    entry_point: str,
    inputs: Sequence[Sequence[JSONValue]],
    time_limits: Sequence[float] | float,
    limits: Limits | None = None,
    deadline_s: float | None = None,
    stop_after_failure: bool = False,
) -> list[CallOutcome]:
    """``entry_point(*args)`` for each of ``inputs`` (JSON-able argument lists), each call
    under its time limit (one for all, or one per input), in one sandbox execution. The whole
    run stops at ``deadline_s`` (default: every limit summed, plus 2 s); inputs it did not
    reach come back as timeouts. With ``stop_after_failure`` the run ends after the first
    call that raises or times out; the inputs after it come back as errors, not reached (for
    callers to whom one failure decides, as a HumanEval+ verdict)."""
    count = len(inputs)
    per_input = (
        [float(time_limits)] * count
        if isinstance(time_limits, int | float)
        else [float(t) for t in time_limits]
    )
    if len(per_input) != count:
        raise ValueError(f"{count} inputs but {len(per_input)} time limits")
    # The whole run: every call at its limit, plus room to load the module.
    deadline = sum(per_input) + 2.0 if deadline_s is None else deadline_s
    base = limits or Limits()
    run_limits = replace(
        base,
        timeout_s=deadline + 10.0,
        max_output_bytes=max(base.max_output_bytes, 64 * 1024 * 1024),
    )
    token = secrets.token_hex(16)
    job = {
        "module": module,
        "entry_point": entry_point,
        "inputs": [list(args) for args in inputs],
        "time_limits": per_input,
        "deadline_s": deadline,
        "stop_after_failure": stop_after_failure,
    }
    files = {
        **driver_files("call_driver.py"),
        **isolation_files(test_side=False),
        "token.txt": token,
        "job.json": json.dumps(job),
    }
    result = sandbox.run(files, DRIVER_COMMAND, run_limits)
    return parse_outcomes(result, token, count)


def _items(result: ExecResult, token: str) -> list[JSONObject]:
    items: list[JSONObject] = []
    for line in result.stdout.splitlines():
        if not line.startswith(token + " "):
            continue
        try:
            item = json.loads(line[len(token) + 1 :])
        except ValueError:
            continue
        if isinstance(item, dict):
            items.append(item)
    return items


def call_functions(
    sandbox: Sandbox,
    modules: Sequence[str],
    entry_point: str,
    inputs: Sequence[Sequence[JSONValue]],
    time_limits: Sequence[float] | float,
    limits: Limits | None = None,
    *,
    module_deadline_s: float | None = None,
    max_timeouts: int | None = 3,
    max_value_chars: int | None = None,
) -> list[list[CallOutcome]]:
    """Every module's ``entry_point`` on the same ``inputs``, in ONE sandbox execution: one
    forked child per module in turn (``call_driver._many``), with the per-module isolation of
    the scoring driver (leftover processes killed, its directory wiped, its own memory limit).
    Returns one outcome list per module, in order. Each module's run stops at
    ``module_deadline_s`` (default: its limits summed, plus 2 s) and after ``max_timeouts``
    calls that hit their limit (the rest come back as timeouts, unrun); values longer than
    ``max_value_chars`` of JSON travel as digests (enough to compare them)."""
    count = len(inputs)
    per_input = (
        [float(time_limits)] * count
        if isinstance(time_limits, int | float)
        else [float(t) for t in time_limits]
    )
    if len(per_input) != count:
        raise ValueError(f"{count} inputs but {len(per_input)} time limits")
    if not modules:
        return []
    per_module = sum(per_input) + 2.0 if module_deadline_s is None else module_deadline_s
    base = limits or Limits()
    run_limits = replace(
        base,
        # every module at its deadline, plus a fork, a sweep and a wipe each
        timeout_s=len(modules) * (per_module + 0.5) + 10.0,
        max_output_bytes=max(base.max_output_bytes, 64 * 1024 * 1024),
    )
    outcomes: list[list[CallOutcome]] = []
    todo = list(modules)
    while todo:
        ran, finished = _run_many(
            sandbox,
            todo,
            entry_point,
            inputs,
            per_input,
            per_module,
            run_limits,
            max_timeouts,
            max_value_chars,
        )
        outcomes += ran[: finished + 1] if finished < len(todo) else ran
        if finished >= len(todo) - 1:
            break
        # The driver itself died while module ``finished`` ran (a module may kill its
        # parent): that module's run is what it is, and the ones after it run again, apart.
        todo = todo[finished + 1 :]
    return outcomes


def _run_many(
    sandbox: Sandbox,
    modules: list[str],
    entry_point: str,
    inputs: Sequence[Sequence[JSONValue]],
    per_input: list[float],
    per_module: float,
    run_limits: Limits,
    max_timeouts: int | None,
    max_value_chars: int | None,
) -> tuple[list[list[CallOutcome]], int]:
    """One execution; the outcomes, and the index of the module the run ended in (the last
    one when the driver finished or the sandbox's own limit stopped it)."""
    token = secrets.token_hex(16)
    job = {
        "modules": list(modules),
        "entry_point": entry_point,
        "inputs": [list(args) for args in inputs],
        "time_limits": per_input,
        "deadline_s": per_module,
        "max_timeouts": max_timeouts,
        "max_value_chars": max_value_chars,
        "memory_bytes": run_limits.memory_mb * 1024 * 1024,
        "own_pid_namespace": own_pid_namespace(sandbox),
    }
    files = {
        **driver_files("call_driver.py"),
        **isolation_files(test_side=False),
        "token.txt": token,
        "job.json": json.dumps(job),
    }
    result = sandbox.run(files, DRIVER_COMMAND, run_limits)
    ran = parse_many(result, token, len(modules), len(inputs))
    items = _items(result, token)
    if result.timed_out or result.oom_killed or any(i.get("end") == "all" for i in items):
        return ran, len(modules) - 1
    ended = [i.get("c") for i in items if "end" in i and isinstance(i.get("c"), int)]
    in_progress = max([c for c in ended if isinstance(c, int)], default=-1) + 1
    return ran, min(in_progress, len(modules) - 1)


def parse_many(result: ExecResult, token: str, modules: int, count: int) -> list[list[CallOutcome]]:
    """Per module, its outcomes under ``token``; a module the run never finished gets "not
    reached" for the rest (timeouts when its own deadline cut it)."""
    by_module: list[list[JSONObject]] = [[] for _ in range(modules)]
    for item in _items(result, token):
        index = item.get("c")
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < modules:
            if item.get("end") == "done":
                continue
            by_module[index].append(item)
    return [_outcomes_of(items, result, count) for items in by_module]


def parse_outcomes(result: ExecResult, token: str, count: int) -> list[CallOutcome]:
    """The outcomes under ``token`` in order; inputs without one are "not reached"."""
    return _outcomes_of(_items(result, token), result, count)


def _outcomes_of(items: list[JSONObject], result: ExecResult, count: int) -> list[CallOutcome]:
    outcomes: list[CallOutcome] = []
    why = "not reached: the run ended first"
    for item in items:
        if "load_error" in item:
            why = f"{LOAD_FAILED}: {item['load_error']}"
        elif "stopped_after" in item:
            why = f"not reached: stopped after input {item['stopped_after']} failed"
        elif item.get("end") == "deadline":
            why = "not reached: the run hit its deadline"
        elif "status" in item and len(outcomes) < count:
            try:
                outcomes.append(_outcome(item))
            except (ValueError, KeyError, TypeError) as exc:
                outcomes.append(CallOutcome("error", error=f"undecodable output: {exc}"))
    if result.timed_out or result.oom_killed:
        why = "not reached: the sandbox " + (
            "ran out of memory" if result.oom_killed else "timed out"
        )
    status: Status = "timeout" if "deadline" in why or "timed out" in why else "error"
    outcomes += [CallOutcome(status, error=why)] * (count - len(outcomes))
    return outcomes


def is_close(out: object, expected: object, atol: float, rtol: float = 1e-07) -> bool:
    """``numpy.allclose(out, expected, rtol, atol)`` for a float or a flat sequence of them
    (the comparison EvalPlus makes when ``atol`` applies), same types and lengths required."""
    if type(out) is not type(expected):
        return False
    pairs: list[tuple[object, object]]
    if isinstance(expected, list | tuple):
        assert isinstance(out, list | tuple)  # the same type as expected
        if len(out) != len(expected):
            return False
        pairs = list(zip(out, expected, strict=True))
    else:
        pairs = [(out, expected)]
    for a, b in pairs:
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return False
        if math.isinf(a) or math.isinf(b):
            if a != b:
                return False
            continue
        if math.isnan(a) or math.isnan(b) or abs(a - b) > atol + rtol * abs(b):
            return False
    return True
