"""The tests' ``program`` fixture (``inside/program_run.py``, registered by ``pytest_driver``)
on both backends: each run a fresh fenced ``python3 solution.py ARGS`` that the test side
judges without hanging; every run reaches the host as ``TestCaseResult.program_runs``; the
spec's worked runs become trusted tests; the in-box comparison answers as the spec's."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import codegen
from codegen.agents.spec import Spec, same_output
from codegen.agents.suite import spec_example_tests
from codegen.evaluation.apps import scoring as apps_scoring
from codegen.sandbox import junit
from codegen.sandbox.api import Sandbox
from codegen.sandbox.protocol import kernel_fence
from codegen.sandbox.types import PROGRAM_RUN_CHARS, ExecResult, ProgramRun

sys.path.insert(0, str(Path(codegen.__file__).parent / "sandbox" / "inside"))
import program_run

# One program, its behaviour chosen by its first argument; the default is the median of n
# numbers read from stdin.
SOLUTION = """\
import glob
import sys
import time


def median(numbers):
    numbers = sorted(numbers)
    return numbers[len(numbers) // 2]


def main(argv):
    mode = argv[0] if argv else "median"
    if mode == "median":
        words = sys.stdin.read().split()
        print(median([int(w) for w in words[1 : 1 + int(words[0])]]))
    elif mode == "wait":  # one line per count announced: more than it is given
        for _ in range(int(input())):
            print(input())
    elif mode == "forever":
        while True:
            print("x" * 1000)
    elif mode == "megabytes":
        sys.stdout.write("y" * 5_000_000)
    elif mode == "under_the_cap":
        sys.stdout.write("z\\n" * 400_000)
    elif mode == "fail":
        print("partial")
        raise ValueError("bad input line 2")
    elif mode == "escape":
        with open("../escaped.txt", "w") as fh:
            fh.write("out")
        print("escaped")
    elif mode == "sleep":
        time.sleep(30)
    elif mode == "peek":  # the tests (their expected outputs) sit beside its folder
        for path in glob.glob("../tests-*/test_solution.py"):
            print(open(path).read())


if __name__ == "__main__":
    main(sys.argv[1:])
"""
TESTS = """\
import os


def test_median(program):
    program.check(stdin="3\\n5 1 3\\n", stdout="3\\n")


def test_waits_for_more_than_given(program):
    run = program.run(stdin="3\\na\\n", arguments=["wait"])
    assert run.exit_code == 1 and "EOFError" in run.stderr and not run.timed_out
    assert run.stdout == "a\\n" and run.duration_s < 3


def test_prints_without_end(program):
    program.check(arguments=["forever"])


def test_writes_megabytes(program):
    run = program.run(arguments=["megabytes"])
    assert run.output_capped and run.exit_code is None and len(run.stdout) == 1_000_000
    program.check(arguments=["megabytes"], stdout="y" * 5_000_000)


def test_under_the_cap(program):
    program.check(arguments=["under_the_cap"], stdout="z\\n" * 400_000, comparison="exact")


def test_exits_non_zero(program):
    program.check(arguments=["fail"], stdout="partial\\n")


def test_sleeps(program):
    program.check(arguments=["sleep"], timeout_s=1)


def test_writes_outside(program):
    run = program.run(arguments=["escape"])
    assert run.exit_code == 1 and "PermissionError" in run.stderr
    assert not os.path.exists("../escaped.txt")
    assert "program.check" not in program.run(arguments=["peek"]).stdout


def test_long_input_is_cut_in_the_record(program):
    program.check(stdin="9\\n" + "1 " * 3000, stdout="1\\n")
"""
EXPECTED = {
    "test_median": "passed",
    "test_waits_for_more_than_given": "passed",
    "test_prints_without_end": "failed",
    "test_writes_megabytes": "failed",
    "test_under_the_cap": "passed",
    "test_exits_non_zero": "failed",
    "test_sleeps": "failed",
    "test_long_input_is_cut_in_the_record": "passed",
}


def test_hostile_programs_are_judged_without_hanging(sb: Sandbox) -> None:
    started = time.monotonic()
    report = sb.run_pytest(SOLUTION, TESTS)
    took = time.monotonic() - started
    assert not report.collection_errors and report.fence == kernel_fence()
    tests = {t.name.rsplit("::", 1)[-1]: t for t in report.tests}
    fenced = kernel_fence().startswith("landlock")
    # Behind the fence the write fails (PermissionError, exit 1) and the tests cannot be read;
    # without one the write lands.
    outside = "passed" if fenced else "failed"
    assert {k: t.outcome for k, t in tests.items()} == {**EXPECTED, "test_writes_outside": outside}
    assert "killed: stdout past 1000000 bytes" in tests["test_prints_without_end"].message
    assert "killed: stdout past 1000000 bytes" in tests["test_writes_megabytes"].message
    failed = tests["test_exits_non_zero"].message
    assert "python3 solution.py fail: exit code 1, expected 0" in failed
    assert "stderr (last line): ValueError: bad input line 2" in failed
    assert "killed at the time limit (1 s per run)" in tests["test_sleeps"].message
    assert took < 30  # nothing waited for the job's own limit

    # Each run, as the host reads it from the JUnit report.
    assert tests["test_median"].program_runs == (
        ProgramRun("3\n5 1 3\n", (), "3\n", "3\n", 0, 0, False, False, "trailing_whitespace"),
    )
    (waited,) = tests["test_waits_for_more_than_given"].program_runs
    assert (waited.arguments, waited.exit_code, waited.expected_stdout) == (("wait",), 1, None)
    assert waited.comparison is None and waited.expected_exit_code is None
    (forever,) = tests["test_prints_without_end"].program_runs
    assert forever.output_capped and forever.exit_code is None and len(forever.stdout) == 2000
    (slept,) = tests["test_sleeps"].program_runs
    assert slept.timed_out and slept.exit_code is None
    assert len(tests["test_writes_megabytes"].program_runs) == 2
    (long_input,) = tests["test_long_input_is_cut_in_the_record"].program_runs
    assert len(long_input.stdin) == 2000 and long_input.stdin.startswith("9\n1 1 ")
    shown = tests["test_median"].to_dict()["program_runs"]
    assert shown[0]["stdin"] == "3\n5 1 3\n" and shown[0]["arguments"] == []


def test_a_program_alone_is_never_loaded_as_a_module(sb: Sandbox) -> None:
    """Top-level code that reads stdin: importing it would fail (stdin is empty there); tests
    that only run it pass."""
    report = sb.run_pytest(
        "n = int(input())\nprint(n * 2)\n",
        'def test_double(program):\n    program.check(stdin="4\\n", stdout="8")\n',
    )
    assert report.ok, (report.collection_errors, report.tests)
    assert report.fence == kernel_fence()


PROGRAM_SPEC = {
    "purpose": "Print the median of n numbers read from standard input.",
    "program": {
        "name": "median",
        "usage": "median < numbers.txt",
        "reads": ["stdin"],
        "writes": ["stdout"],
        "input_format": "n, then n integers",
        "output_format": "the median",
        "comparison": "trailing_whitespace",
        "examples": [
            {"stdin": "3\n5 1 3\n", "stdout": "3\n"},
            {"stdin": "1\n7\n", "stdout": "7   \n\n"},
        ],
    },
    "behaviours": [],
    "edge_cases": [],
    "examples": [],
    "constraints": [],
}


def test_the_specs_worked_runs_judge_a_program(sb: Sandbox) -> None:
    tests = spec_example_tests(Spec.model_validate(PROGRAM_SPEC))
    right = sb.run_pytest(SOLUTION, tests)
    assert right.ok and [t.name for t in right.tests] == [
        "test_solution.py::test_spec_example_program_0",
        "test_solution.py::test_spec_example_program_1",
    ]
    wrong = sb.run_pytest("print(3)\n", tests)
    assert [t.outcome for t in wrong.tests] == ["passed", "failed"]
    assert "stdout differs (compared trailing whitespace)" in wrong.tests[1].message


def test_a_program_example_test_compares_what_the_program_writes() -> None:
    spec = Spec.model_validate(PROGRAM_SPEC)
    assert spec.program is not None
    spec.program.writes = ["exit_code"]
    spec.program.examples[0].arguments = ["--strict"]
    tests = spec_example_tests(spec)
    assert "stdout=None" in tests and "arguments=['--strict']" in tests
    namespace: dict[str, object] = {}
    exec(tests, namespace)  # compiles: one function per worked run
    assert {"test_spec_example_program_0", "test_spec_example_program_1"} <= set(namespace)


COMPARISON_CASES = [
    ("3\n", "3\n"),
    ("3\n", "3"),
    ("3", "3  \n\n"),
    ("a b\nc", "a b  \nc\n"),
    ("a b\nc", "a  b\nc"),
    ("1 2\n", "1\n2\n"),
    ("", ""),
    ("", "\n \n"),
    ("\n3", "3"),
    ("0.3333333", "0.33333331"),
    ("0.5", "0.6"),
    ("1e-7", "0"),
    ("100000000", "100000001"),
    ("nan", "nan"),
    ("inf", "inf"),
    ("1.0 x", "1 x"),
    ("1.0 x", "1 y"),
    ("1 2", "1 2 3"),
    ("YES", "yes"),
    ("a\r\nb", "a\nb"),
]


@pytest.mark.parametrize("comparison", ["exact", "trailing_whitespace", "float"])
def test_the_in_box_comparison_is_the_specs(comparison: str) -> None:
    for expected, actual in COMPARISON_CASES:
        for a, b in ((expected, actual), (actual, expected)):
            assert program_run.same_output(a, b, comparison) == same_output(
                a,
                b,
                comparison,  # type: ignore[arg-type]
            ), (comparison, a, b)
    assert program_run.normalised("a \nb\t\n\n") == "a\nb"


def test_the_in_box_figures_are_the_hosts() -> None:
    """The box cannot import the host: what both sides state must agree."""
    assert program_run.TIME_LIMIT_S == apps_scoring.TIME_LIMIT_S
    assert program_run.MAX_STDOUT_BYTES == apps_scoring.MAX_STDOUT_BYTES
    assert program_run.PROPERTY == junit.PROGRAM_RUN_PROPERTY
    assert program_run.RECORD_CHARS == PROGRAM_RUN_CHARS


def _xml(values: list[str]) -> bytes:
    from xml.sax.saxutils import quoteattr

    props = "".join(
        f"<property name={quoteattr(junit.PROGRAM_RUN_PROPERTY)} value={quoteattr(v)}/>"
        for v in values
    )
    return (
        '<testsuites><testsuite><testcase classname="test_solution" name="test_x">'
        f"<properties>{props}<property name='other' value='1'/></properties>"
        "</testcase></testsuite></testsuites>"
    ).encode()


def test_the_hosts_reading_of_a_run_is_bounded_and_takes_nothing_on_trust() -> None:
    good = {
        "stdin": "1\n",
        "arguments": ["-n", "2"],
        "expected_stdout": None,
        "stdout": "s" * 10_000,  # the box cuts it; the host cuts it again
        "expected_exit_code": 0,
        "exit_code": -9,
        "timed_out": True,
        "output_capped": False,
        "comparison": "float",
    }
    values = [
        json.dumps(good),
        "not json",
        "[" * 50_000,  # nested past the decoder's stack
        json.dumps({**good, "stdout": "x" * (junit.MAX_PROGRAM_RUN_CHARS + 1)}),
        json.dumps({**good, "exit_code": True}),
        json.dumps({**good, "arguments": "-n 2"}),
        json.dumps({**good, "timed_out": "yes"}),
        json.dumps([good]),
    ]
    empty = ExecResult(0, False, False, "", "", False, 0.0)
    (case,) = junit.parse_junit(_xml(values), empty).tests
    (run,) = case.program_runs
    assert run.arguments == ("-n", "2") and run.exit_code == -9 and run.timed_out
    assert run.stdout == "s" * 2000 and run.expected_stdout is None
    assert ProgramRun.from_dict(run.to_dict()) == run
    many = junit.parse_junit(_xml([json.dumps(good)] * 300), empty).tests[0]
    assert len(many.program_runs) == junit.MAX_PROGRAM_RUNS
