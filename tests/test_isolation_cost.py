"""benchmarks.scoring.isolation_cost: bad input is one line and exit 2, before any tree runs
(the paired runs themselves execute in the sandbox for minutes: not part of the test run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give one of --baseline-tree DIR and --old-rev REV"),
        (["--baseline-tree", ".", "--old-rev", "HEAD"], "give one of"),
        (["--baseline-tree", "/nonexistent", "--sets", "humaneval"], "is not a checkout"),
        (["--baseline-tree", ".", "--sets", "mbpp"], "unknown set"),
        (["--baseline-tree", ".", "--classeval-tasks", "/nonexistent.json"], "no ClassEval task"),
        (["--baseline-tree", ".", "--sets", "humaneval", "--rounds", "0"], "at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scoring.isolation_cost", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
