"""The function-call runner: a module's function called on a list of inputs in the sandbox,
every outcome back (value, exception, timeout), values with their Python types."""

from __future__ import annotations

from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import Digest, Opaque, call_function, is_close

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
