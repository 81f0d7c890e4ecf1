"""APPS's stdin/stdout runner (``program_driver``) on both backends: every hostile program is
judged without hanging, by the driver, outside the program's process, behind the fence."""

from __future__ import annotations

import time

import pytest

from codegen.evaluation.apps import score_programs
from codegen.evaluation.apps.tasks import parse_task
from codegen.sandbox.api import Sandbox
from codegen.sandbox.protocol import kernel_fence

# APPS's row shape, written here: "a b" on stdin, their sum on stdout.
ROW = {
    "id": 9001,
    "name": "9001",
    "difficulty": "introductory",
    "description": "Read two integers a and b on one line; print a + b.",
    "sample_io": [{"input": "1 2\n", "output": ["3"]}],
    "test_list": [{"input": "1 2\n", "output": [3]}, {"input": "5 7", "output": ["12"]}],
    "starter_code": "",
}
PROGRAMS = {
    "right": "a, b = map(int, input().split())\nprint(a + b, '  ')\n\n",
    "waits_for_more": "a, b = map(int, input().split())\nc = input()\nprint(a + b)\n",
    "reads_to_eof": "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
    "prints_without_end": "while True:\n    print('x' * 1000)\n",
    "writes_megabytes": "print('y' * 5_000_000)\n",
    "exits_non_zero": "a, b = map(int, input().split())\nprint(a + b)\nraise SystemExit(3)\n",
    "sleeps": "import time\ntime.sleep(30)\n",
    "wrong": "print(42)\n",
    "writes_outside": "open('../escaped.txt', 'w').write('x')\nprint(3)\n",
}


def test_hostile_programs_are_judged_without_hanging(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("codegen.evaluation.apps.scoring.TIME_LIMIT_S", 1.5)
    problem = parse_task(ROW, "fixture")
    started = time.monotonic()
    scores = score_programs(sb, problem, [*PROGRAMS.values(), None], sb.default_limits)
    took = time.monotonic() - started
    got = dict(zip([*PROGRAMS, "none"], scores, strict=True))
    assert {k: s.category for k, s in got.items()} == {
        "right": "passed",
        "waits_for_more": "runtime_error",
        "reads_to_eof": "passed",
        "prints_without_end": "wrong_answer",
        "writes_megabytes": "wrong_answer",
        "exits_non_zero": "runtime_error",
        "sleeps": "timeout",
        "wrong": "wrong_answer",
        "writes_outside": "runtime_error" if kernel_fence().startswith("landlock") else "passed",
        "none": "crew_status",
    }
    assert "EOFError" in got["waits_for_more"].message
    assert "stdout past 1000000 bytes" in got["prints_without_end"].message
    assert "stdout past" in got["writes_megabytes"].message
    assert "exit 3" in got["exits_non_zero"].message
    assert (
        "input 1 of 2" in got["wrong"].message and "expected '3', got '42'" in got["wrong"].message
    )
    assert got["sleeps"].time_limit_s == 1.5 and got["sleeps"].duration_s < 5
    assert all(s.isolated and s.fence == kernel_fence() for s in scores[:-1])
    assert took < 60  # nothing waited for the execution's own limit
