"""The function-call runner: a module's function called on a list of inputs in the sandbox,
every outcome back (value, exception, timeout), values with their Python types."""

from __future__ import annotations

import json
import tracemalloc

from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import (
    MAX_DECODED_CHARS,
    MAX_VALUE_CHARS,
    Digest,
    Opaque,
    call_function,
    call_functions,
    is_close,
    parse_many,
    parse_outcomes,
)
from codegen.sandbox.protocol import kernel_fence
from codegen.sandbox.types import ExecResult

MODULE = """
import time

class Point:
    def __repr__(self):
        return "Point()"

def f(x, y=0):
    print("noise on stdout")  # never mistaken for an outcome
    if x == 3:
        raise ValueError("three")
    if x == 4:
        while True:
            pass
    if x == 5:
        return (1.5, {2: [3]}, {"a"}, float("inf"), None, True)
    if x == 6:
        return Point()
    if x == 7:
        return list(range(100_000))
    if x == 9:
        return [float(i) for i in range(100_000)]  # == the ints, as Python compares
    return x + y
"""


def test_each_input_has_its_outcome(sb: Sandbox) -> None:
    inputs = [[1], [2, 3], [3], [4], [5], [6], [7], [8]]
    got = call_function(sb, MODULE, "f", inputs, 0.5)
    assert [o.status for o in got] == ["ok", "ok", "error", "timeout", "ok", "ok", "ok", "ok"]
    assert got[0].value == 1 and got[1].value == 5 and got[7].value == 8
    assert got[2].error == "ValueError: three"
    assert 0.4 < got[3].duration_s < 2.0  # its own limit, then the next input ran
    value = got[4].value
    assert value == (1.5, {2: [3]}, {"a"}, float("inf"), None, True)
    assert isinstance(value, tuple) and isinstance(value[5], bool)
    assert got[5].value == Opaque("Point", "Point()")
    assert isinstance(got[6].value, Digest)  # too large to carry: compared by digest
    again = call_function(sb, MODULE, "f", [[7], [9]], 0.5)
    assert again[0].value == got[6].value == again[1].value


def test_a_module_that_cannot_load_or_exits_still_answers_every_input(sb: Sandbox) -> None:
    broken = call_function(sb, "def f(:\n", "f", [[1], [2]], 0.5)
    assert [o.status for o in broken] == ["error", "error"]
    assert "failed to load: SyntaxError" in broken[0].error
    gone = call_function(sb, "import os\ndef f(x):\n    os._exit(0)\n", "f", [[1], [2]], 0.5)
    assert [o.status for o in gone] == ["error", "error"]
    missing = call_function(sb, "def g(x):\n    return x\n", "f", [[1]], 0.5)
    assert "KeyError" in missing[0].error


def test_stop_after_failure_ends_the_run_at_the_first_exception_or_timeout(sb: Sandbox) -> None:
    raised = call_function(sb, MODULE, "f", [[1], [3], [2], [8]], 0.5, stop_after_failure=True)
    assert [o.status for o in raised] == ["ok", "error", "error", "error"]
    assert raised[1].error == "ValueError: three"
    assert raised[2].error == raised[3].error == "not reached: stopped after input 1 failed"
    timed = call_function(sb, MODULE, "f", [[4], [1]], 0.5, stop_after_failure=True)
    assert [o.status for o in timed] == ["timeout", "error"]
    assert timed[0].duration_s < 2.0  # one limit, not one per input
    # A value is not a failure here (the caller compares it): every input runs.
    values = call_function(sb, MODULE, "f", [[1], [2], [8]], 0.5, stop_after_failure=True)
    assert [o.value for o in values] == [1, 2, 8]


def test_is_close_is_numpy_allclose_with_types() -> None:
    assert is_close(1.0000001, 1.0, 1e-6) and not is_close(1.1, 1.0, 1e-6)
    assert is_close([1.0, 2.0], [1.0, 2.0000001], 1e-6)
    assert not is_close((1.0,), [1.0], 1e-6)  # type differs
    assert not is_close([1.0], [1.0, 2.0], 1e-6)
    assert not is_close(float("nan"), float("nan"), 1e-6)
    assert is_close(float("inf"), float("inf"), 1e-6)


LEAVES_A_MESS = """
import os, time
for where in ("left-behind.txt", "../left-behind.txt", "/tmp/left-behind.txt"):
    try:  # the file fence refuses all but the first; without Landlock the wipe removes them
        open(where, "w").write("from an earlier module")
    except OSError:
        pass
if os.fork() == 0:  # a process that outlives its module's run
    os.setsid()
    time.sleep(60)
    os._exit(0)

def f(x):
    return x
"""
LOOKS_AROUND = """
import os

def f(x):
    # What a later module can see of an earlier one: files where it runs, live processes.
    mine = {os.getpid()}
    others = 0
    try:
        pids = os.listdir("/proc")
    except OSError:  # outside the file fence
        pids = []
    for name in pids:
        if name.isdigit() and int(name) not in mine:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    others += b"driver.py" in fh.read()
            except OSError:
                pass
    left = []
    for d in (".", "..", "/tmp"):
        try:
            left.append("left-behind.txt" in os.listdir(d))
        except OSError:  # outside the file fence
            left.append(False)
    return [left, others, x]
"""
KILLS_ITS_PARENT = """
import os, signal

def f(x):
    # Its parent (the zygote) and the driver above it: the file fence's signal scope refuses
    # both; without Landlock they die, and the modules after it run in a fresh execution.
    parent = os.getppid()
    with open(f"/proc/{parent}/stat") as fh:
        driver = int(fh.read().rsplit(")", 1)[1].split()[1])
    for pid in (parent, driver):
        os.kill(pid, signal.SIGKILL)
"""


def test_every_module_runs_on_the_same_inputs_in_one_execution(sb: Sandbox) -> None:
    modules = [MODULE, "def f(x, y=0):\n    return -x\n", "def f(:\n"]
    got = call_functions(sb, modules, "f", [[1], [3], [4]], 0.5, max_timeouts=1)
    assert [[o.status for o in row] for row in got] == [
        ["ok", "error", "timeout"],
        ["ok", "ok", "ok"],
        ["error", "error", "error"],
    ]
    assert got[0][0].value == 1 and got[1][1].value == -3
    assert "failed to load: SyntaxError" in got[2][0].error


def test_a_module_cannot_see_or_disturb_the_next_one(sb: Sandbox) -> None:
    got = call_functions(sb, [LEAVES_A_MESS, LOOKS_AROUND], "f", [[1]], 1.0)
    assert got[0][0].value == 1
    left, drivers, _ = got[1][0].value  # type: ignore[misc]
    assert left == [False, False, False]  # the earlier module's files were wiped
    # The earlier module's process was killed: only the driver and its zygote are left, and
    # under the file fence no other process can be seen at all.
    assert drivers == (0 if kernel_fence().startswith("landlock") else 2)
    # A module that kills the driver (or tries to: the fence refuses) fails its own run; the
    # modules after it still run.
    again = call_functions(
        sb, ["def f(x):\n    return x\n", KILLS_ITS_PARENT, MODULE], "f", [[1], [2]], 1.0
    )
    assert [o.value for o in again[0]] == [1, 2]
    assert again[1][0].status == "error"
    assert [o.value for o in again[2]] == [1, 2]


# The module's child writes lines of its own into the driver's result pipe, as any module can.
FORGES_ITS_LINES = """
import json, os, stat

def f(x):
    lines = [
        {"status": "ok", "duration_s": 0, "value": "[" * 700 + "]" * 700},
        {"status": "ok", "duration_s": 0, "value": json.dumps(["x" * 98] * 3000)},
        {"status": "ok", "duration_s": 0, "value": json.dumps({"t": [1, 2]})},
    ]
    data = ("[" * 5000 + "\\n" + "".join(json.dumps(line) + "\\n" for line in lines)).encode()
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                while data:
                    data = data[os.write(fd, data):]
        except OSError:
            pass
    os._exit(0)
"""


def test_a_forged_value_too_deep_or_too_long_is_one_failed_call(sb: Sandbox) -> None:
    got = call_function(sb, FORGES_ITS_LINES, "f", [[0], [1], [2], [3]], 5.0)
    assert [o.status for o in got] == ["error", "error", "ok", "error"]
    assert got[0].error == "undecodable output: a value nested more than 100 levels deep"
    assert got[1].error.startswith("undecodable output: a value of 306000 characters, over")
    assert got[2].value == (1, 2)  # a forged line is the module's own outcome, nothing more
    assert got[3].error == "not reached: the run ended first"


TOKEN = "f" * 32


def printed(*lines: str) -> ExecResult:
    """What a run printed: ``lines`` under the token, as the driver writes them."""
    return ExecResult(0, False, False, "".join(f"{TOKEN} {line}\n" for line in lines), "", False, 1)


def test_a_run_decodes_at_most_its_budget_of_value_text() -> None:
    value = json.dumps("a" * (MAX_VALUE_CHARS - 10))
    line = json.dumps({"status": "ok", "duration_s": 0, "value": value})
    fits = MAX_DECODED_CHARS // len(value)
    output = printed(*[line] * (fits + 3))
    tracemalloc.start()
    got = parse_outcomes(output, TOKEN, fits + 3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert all(o.ok for o in got[:fits])
    assert {o.error for o in got[fits:]} == {
        f"undecodable output: the run's values passed {MAX_DECODED_CHARS} characters"
    }
    # The values kept, and one line at a time beside them (the output is never split whole).
    assert peak < MAX_DECODED_CHARS + 4 * MAX_VALUE_CHARS


def test_a_line_too_long_for_its_values_fails_the_call_of_its_module_unparsed() -> None:
    long_value = json.dumps("a" * 20_000)
    lines = [
        json.dumps({"status": "ok", "duration_s": 0, "value": "5", "c": 0}),
        json.dumps({"status": "ok", "duration_s": 0, "value": json.dumps(long_value), "c": 1}),
        json.dumps({"status": "ok", "duration_s": 0, "value": long_value[:5000], "c": 1}),
        "[" * 5000,  # no line of the driver's: skipped, never parsed
    ]
    got = parse_many(printed(*lines), TOKEN, 2, 2, max_value_chars=2000)
    assert [o.value for o in got[0]] == [5, None]
    assert got[1][0].error == "undecodable output: a line of 20066 characters"
    assert got[1][1].error.startswith("undecodable output: a value of 5000 characters, over")
