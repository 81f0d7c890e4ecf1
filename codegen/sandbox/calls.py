"""Call a module's function on a list of inputs in the sandbox; every outcome comes back.

One sandbox execution loads ``module`` and calls ``entry_point(*args)`` for each input in
order, each call under its own time limit; the result is one :class:`CallOutcome` per input:
the returned value, or the exception, or a timeout (an input the run never reached, because
the module failed to load or the run hit its deadline, is an outcome too). Values cross the
sandbox boundary as tagged JSON (``call_driver._encode``), decoded here into plain Python
values (tuple, set, dict, non-finite floats kept); nothing is unpickled and nothing the
module returns is executed on the host. HumanEval+ scoring (``codegen.evaluation.plus``) uses
it for the canonical and the candidate solutions alike.

What the box prints is the candidate's to forge (its child writes the lines the driver relays),
so the host decodes it within bounds, each checked on the text before any value is built: a
run's output is at most ``OUTPUT_BYTES``; a line longer than ``max_line_chars`` of its run, a
value longer than its run's ``max_value_chars`` or nested deeper than ``MAX_VALUE_DEPTH``
levels of JSON, and every value after the run has decoded ``MAX_DECODED_CHARS`` of value text
become that call's one-line error (``undecodable output: ...``), never an exception out of
the run. Lines are read one at a time and values built by ``json``'s own parser (tags turned
into values bottom-up, no recursion of ours), so the host's memory for one run is the run's
result (``protocol.max_result_bytes`` of ``OUTPUT_BYTES``) plus the values it decoded: at
most ``MAX_DECODED_CHARS`` of text, which builds at most about 30 bytes of objects per
character (a list of empty sets), under 0.5 GiB in all (measured: docs/architecture.md).
"""

from __future__ import annotations

import base64
import json
import math
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from typing import Literal, cast

from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files, isolation_files
from codegen.sandbox.types import ExecResult, Limits

Status = Literal["ok", "error", "timeout"]

MAX_VALUE_CHARS = 200_000  # a longer value travels as its digest (sent with every job)
# Levels of JSON in one value: far more than any benchmark's value (a tuple is two, a dict
# three), few enough that building and comparing it never nears Python's recursion limit.
MAX_VALUE_DEPTH = 100
MAX_DECODED_CHARS = 8 << 20  # value text one run decodes, every module together
# A run's output: every value it may decode, escaped once more on its line, and room for the
# other lines (HumanEval+'s largest canonical run prints about 9 MB).
OUTPUT_BYTES = 2 * MAX_DECODED_CHARS + (4 << 20)
# A 4,001-bit int and larger are written as hex: Python stops converting ints of more than
# 4,300 digits to text, and so ``json`` cannot write them (the box's codec does the same).
DECIMAL_INT_BITS = 4000


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


def encode_int(value: int) -> JSONValue:
    """``value`` as the box's codec writes it: decimal while JSON can carry it, else hex."""
    return value if value.bit_length() <= DECIMAL_INT_BITS else {"i": format(value, "x")}


def decode(data: JSONValue) -> object:
    """The Python value of the driver's tagged JSON, already parsed (a stored value, whose depth
    was checked when it was first decoded from the box's text)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        return _tagged({key: decode(v) for key, v in data.items()})
    return data


def decode_text(text: str) -> object:
    """The Python value of one value's tagged JSON text, its depth checked first; ValueError
    (one line) when it is too deep or not the codec's."""
    if _nests_deeper(text, MAX_VALUE_DEPTH):
        raise ValueError(f"a value nested more than {MAX_VALUE_DEPTH} levels deep")
    try:
        return json.loads(text, object_hook=_tagged)
    except RecursionError:  # only on an already deep stack: the text itself is shallow
        raise ValueError("a value nested too deep for this stack") from None
    except (KeyError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}"[:200]) from None


# A JSON string (to its closing quote or the end of the text: never re-scanned) or a bracket.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"?|[\[\]{}]', re.DOTALL)


def _nests_deeper(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` opens more than ``limit`` arrays and objects inside each
    other, found in one pass over it without building anything."""
    if text.count("[") + text.count("{") <= limit:  # the usual case: no scan at all
        return False
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _tagged(data: dict[str, object]) -> object:
    """One tagged JSON object as its value, its members already values (``json``'s
    object_hook: the parser builds inner values first)."""
    if "t" in data:
        return tuple(cast(list[object], data["t"]))
    if "f" in data:
        return float(cast(str, data["f"]))
    if "d" in data:
        return {_hashable(k): v for k, v in cast(list[list[object]], data["d"])}
    if "s" in data:
        items = {_hashable(v) for v in cast(list[object], data["s"])}
        return frozenset(items) if data.get("frozen") else items
    if "o" in data:
        return Opaque(str(data["o"])[:200], str(data.get("r", ""))[:1000])
    # The tags only ``isolation``'s codec writes (big ints, bytes, complex, Decimal, Fraction).
    if "i" in data:
        return int(cast(str, data["i"]), 16)
    if "b" in data:
        raw = base64.b64decode(cast(str, data["b"]), validate=True)
        return bytearray(raw) if data.get("mutable") else raw
    if "c" in data:
        real, imag = cast(list[float], data["c"])
        return complex(real, imag)
    if "dec" in data:
        return Decimal(cast(str, data["dec"]))
    if "fr" in data:
        num, den = cast(list[int], data["fr"])
        return Fraction(num, den)
    raise ValueError(f"unknown value tag in {sorted(data)[:5]}")


def _hashable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


@dataclass
class _Budget:
    """What one run's outcomes may still decode; every module of the run draws on it."""

    chars: int = MAX_DECODED_CHARS
    max_value_chars: int = MAX_VALUE_CHARS


def _outcome(item: JSONObject, budget: _Budget) -> CallOutcome:
    status = item.get("status")
    duration = float(cast(float, item.get("duration_s", 0.0)))
    if status == "ok":
        if "digest" in item:
            return CallOutcome("ok", Digest(str(item["digest"])[:64]), duration_s=duration)
        text = item["value"]
        if not isinstance(text, str):
            raise TypeError("a value that is not JSON text")
        if len(text) > budget.max_value_chars:
            raise ValueError(
                f"a value of {len(text)} characters, over the {budget.max_value_chars} "
                "the driver sends (a longer one travels as its digest)"
            )
        if len(text) > budget.chars:
            raise ValueError(f"the run's values passed {MAX_DECODED_CHARS} characters")
        budget.chars -= len(text)
        return CallOutcome("ok", decode_text(text), duration_s=duration)
    error = str(item.get("error", ""))[:300]
    if status == "timeout":
        return CallOutcome("timeout", error=error, duration_s=duration)
    return CallOutcome("error", error=error, duration_s=duration)


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
    run_limits = replace(base, timeout_s=deadline + 10.0, max_output_bytes=OUTPUT_BYTES)
    token = secrets.token_hex(16)
    job = {
        "module": module,
        "entry_point": entry_point,
        "inputs": [list(args) for args in inputs],
        "time_limits": per_input,
        "deadline_s": deadline,
        "stop_after_failure": stop_after_failure,
        "max_value_chars": MAX_VALUE_CHARS,
    }
    files = {
        **driver_files("call_driver.py"),
        **isolation_files(test_side=False),
        "token.txt": token,
        "job.json": json.dumps(job),
    }
    result = sandbox.run(files, DRIVER_COMMAND, run_limits)
    return parse_outcomes(result, token, count)


# The module's index, which ``call_driver._many`` writes last on each of its lines.
_MODULE_INDEX = re.compile(r'"c": (\d+)\}$')
# Levels of JSON a line of the driver has (its value travels as text inside it).
LINE_DEPTH = 4


def _find(text: str, mark: str, start: int) -> int | None:
    at = text.find(mark, start)
    return None if at < 0 else at


def _items(result: ExecResult, token: str, max_value_chars: int) -> Iterator[JSONObject]:
    """Each line under ``token`` as a JSON object, one at a time (the output is never split
    whole). A line too long for a value of ``max_value_chars`` (escaped once more on its line)
    is not parsed: it is an error outcome, of the module its end names."""
    text, mark = result.stdout, "\n" + token + " "
    max_chars = 2 * max_value_chars + 8192
    # ``at``: where the newline before a line under the token is (-1: the text's start).
    at = -1 if text.startswith(mark[1:]) else _find(text, mark, 0)
    while at is not None:
        begin = at + len(mark)
        end = text.find("\n", begin)
        end = len(text) if end < 0 else end
        at = _find(text, mark, end)
        if end - begin > max_chars:
            item: JSONObject = {
                "status": "error",
                "error": f"undecodable output: a line of {end - begin} characters",
            }
            index = _MODULE_INDEX.search(text[max(begin, end - 32) : end])
            if index is not None:
                item["c"] = int(index.group(1))
            yield item
            continue
        line = text[begin:end]
        if _nests_deeper(line, LINE_DEPTH):
            continue  # no line of the driver's: parsing it could only recurse
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            yield parsed


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
        max_output_bytes=OUTPUT_BYTES,
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
        "max_value_chars": max_value_chars or MAX_VALUE_CHARS,
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
    runs = _read_many(result, token, len(modules), len(inputs), max_value_chars)
    ran = [run.outcomes(result) for run in runs.modules]
    if result.timed_out or result.oom_killed or runs.all_ended:
        return ran, len(modules) - 1
    return ran, min(runs.last_ended + 1, len(modules) - 1)


@dataclass
class _Module:
    """One module's outcomes as its lines arrive: at most one per input is kept."""

    count: int
    budget: _Budget
    kept: list[CallOutcome] = field(default_factory=list)
    why: str = "not reached: the run ended first"

    def add(self, item: JSONObject) -> None:
        if "load_error" in item:
            self.why = f"{LOAD_FAILED}: {str(item['load_error'])[:300]}"
        elif "stopped_after" in item:
            self.why = f"not reached: stopped after input {str(item['stopped_after'])[:20]} failed"
        elif item.get("end") == "deadline":
            self.why = "not reached: the run hit its deadline"
        elif "status" in item and len(self.kept) < self.count:
            try:
                self.kept.append(_outcome(item, self.budget))
            except (ValueError, KeyError, TypeError, ArithmeticError) as exc:
                error = f"undecodable output: {exc}"[:300]
                self.kept.append(CallOutcome("error", error=error))

    def outcomes(self, result: ExecResult) -> list[CallOutcome]:
        why = self.why
        if result.timed_out or result.oom_killed:
            why = "not reached: the sandbox " + (
                "ran out of memory" if result.oom_killed else "timed out"
            )
        status: Status = "timeout" if "deadline" in why or "timed out" in why else "error"
        return self.kept + [CallOutcome(status, error=why)] * (self.count - len(self.kept))


@dataclass
class _ManyRun:
    modules: list[_Module]
    all_ended: bool = False  # the driver's last line: every module ran
    last_ended: int = -1  # the last module whose run the driver saw end


def _read_many(
    result: ExecResult, token: str, modules: int, count: int, max_value_chars: int | None
) -> _ManyRun:
    budget = _Budget(max_value_chars=max_value_chars or MAX_VALUE_CHARS)
    run = _ManyRun([_Module(count, budget) for _ in range(modules)])
    for item in _items(result, token, budget.max_value_chars):
        index = item.get("c")
        if item.get("end") == "all":
            run.all_ended = True
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < modules:
            continue
        if "end" in item:
            run.last_ended = max(run.last_ended, index)
            if item.get("end") == "done":
                continue
        run.modules[index].add(item)
    return run


def parse_many(
    result: ExecResult,
    token: str,
    modules: int,
    count: int,
    max_value_chars: int | None = None,
) -> list[list[CallOutcome]]:
    """Per module, its outcomes under ``token``; a module the run never finished gets "not
    reached" for the rest (timeouts when its own deadline cut it)."""
    runs = _read_many(result, token, modules, count, max_value_chars)
    return [run.outcomes(result) for run in runs.modules]


def parse_outcomes(result: ExecResult, token: str, count: int) -> list[CallOutcome]:
    """The outcomes under ``token`` in order; inputs without one are "not reached"."""
    module = _Module(count, _Budget())
    for item in _items(result, token, MAX_VALUE_CHARS):
        module.add(item)
    return module.outcomes(result)


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
