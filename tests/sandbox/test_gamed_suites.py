"""The crew's own verification (``run_pytest``) cannot be passed by gaming the suite: the
solution runs in a process of its own, so patching pytest, forging the JUnit report, an
always-equal return value or an early exit all end not ok, on both backends (issue 38, item 1).
Four of them (reports, JUnit, always-equal, interrupt) made the old ``run_pytest`` (solution
imported into pytest) pass; the last passes a driver that reads the tests from disk with
conftest files allowed."""

from __future__ import annotations

from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

LIMITS = Limits(timeout_s=60.0)
TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_negative():\n    assert add(-5, 2) == -3\n"
)
HONEST = "def add(a, b):\n    return a + b\n"

GAMED = {
    "patches pytest's reports": (
        "import _pytest.reports as reports\n"
        "_init = reports.TestReport.__init__\n"
        "def _passed(self, *args, **kwargs):\n"
        "    _init(self, *args, **kwargs)\n"
        "    self.outcome, self.longrepr = 'passed', None\n"
        "reports.TestReport.__init__ = _passed\n"
        "def add(a, b):\n    return a - b\n"
    ),
    "writes the JUnit report from sys.argv and exits": (
        "import os, sys\n"
        'XML = (\'<testsuites><testsuite name="pytest" tests="2">\'\n'
        '       \'<testcase classname="test_solution" name="test_small"/>\'\n'
        '       \'<testcase classname="test_solution" name="test_negative"/>\'\n'
        "       '</testsuite></testsuites>')\n"
        "for arg in sys.argv:\n"
        "    if arg.startswith('--junitxml='):\n"
        "        path = arg.split('=', 1)[1]\n"
        "        os.makedirs(os.path.dirname(path), exist_ok=True)\n"
        "        with open(path, 'w') as fh:\n"
        "            fh.write(XML)\n"
        "        os._exit(0)\n"
        "def add(a, b):\n    return 0\n"
    ),
    "returns an always-equal object": (
        "class Equal:\n"
        "    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Equal()\n"
    ),
    "exits in the call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "interrupts pytest after a pass": (
        "def add(a, b):\n    if a < 0:\n        raise KeyboardInterrupt\n    return a + b\n"
    ),
    "exits at import": "import sys\nsys.exit(0)\n",
    # It loads before pytest collects: a tests file or conftest written now would count.
    "rewrites the tests and writes a conftest": (
        "PASS = 'def test_small():\\n    pass\\n\\ndef test_negative():\\n    pass\\n'\n"
        "HOOK = ('import pytest\\n@pytest.hookimpl(hookwrapper=True)\\n'\n"
        "        'def pytest_runtest_makereport(item, call):\\n'\n"
        "        '    out = yield\\n    out.get_result().outcome = \"passed\"\\n')\n"
        "for name, text in [('test_solution.py', PASS), ('conftest.py', HOOK)]:\n"
        "    with open(name, 'w') as fh:\n"
        "        fh.write(text)\n"
        "def add(a, b):\n    return 0\n"
    ),
}


def test_an_honest_solution_passes_isolated(sb: Sandbox) -> None:
    report = sb.run_pytest(HONEST, TESTS, LIMITS)
    assert report.ok and report.passed == 2, report
    assert report.isolated is True


def test_a_gamed_suite_never_passes(sb: Sandbox) -> None:
    for what, solution in GAMED.items():
        report = sb.run_pytest(solution, TESTS, LIMITS)
        assert not report.ok, (what, report)
        assert report.isolated is True, what


def test_handles_and_exceptions_cross(sb: Sandbox) -> None:
    solution = (
        "class Stack:\n"
        "    def __init__(self):\n        self.items = []\n"
        "    def push(self, x):\n        self.items.append(x)\n"
        "    def __len__(self):\n        return len(self.items)\n"
        "class Empty(ValueError):\n    pass\n"
        "def pop(stack):\n"
        "    if not stack.items:\n        raise Empty('empty')\n"
        "    return stack.items.pop()\n"
    )
    tests = (
        "import pytest\nimport solution\nfrom solution import Empty, Stack, pop\n\n"
        "def test_stack():\n"
        "    s = Stack()\n    s.push(3)\n    s.push((1, 2))\n"
        "    assert len(s) == 2 and isinstance(s, Stack) and s.items == [3, (1, 2)]\n"
        "    assert pop(s) == (1, 2) and pop(s) == 3\n"
        "    with pytest.raises(Empty, match='empty'):\n        pop(s)\n"
        "    with pytest.raises(ValueError):\n        solution.pop(s)\n"
    )
    report = sb.run_pytest(solution, tests, LIMITS)
    assert report.ok, report


def test_a_test_side_builtin_and_lambda_cross(sb: Sandbox) -> None:
    tests = (
        "from solution import apply\n\n"
        "def test_apply():\n"
        "    assert apply(len, 'ab') == 2\n"
        "    assert apply(lambda s: s * 2, 'ab') == 'abab'\n"
    )
    report = sb.run_pytest("def apply(f, x):\n    return f(x)\n", tests, LIMITS)
    assert report.ok and report.isolated is True, report


def test_tests_whose_values_cannot_cross_fail_cannot_isolate(sb: Sandbox) -> None:
    tests = (
        "from solution import apply\n\n"
        "class Box:\n    pass\n\n"
        "def test_apply():\n    assert apply(lambda b: b, Box()) is not None\n"
    )
    report = sb.run_pytest("def apply(f, x):\n    return f(x)\n", tests, LIMITS)
    assert not report.ok and report.isolated is True, report
    [test] = report.tests
    assert test.outcome == "failed" and "cannot_isolate" in test.message, test
