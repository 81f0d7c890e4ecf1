"""``codegen eval humaneval`` as users run it: the console script, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.orchestration.cli import main

CODEGEN = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEGEN, *args], capture_output=True, text=True, env=dict(os.environ), timeout=300
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--limit", "0"),
        ("--limit", "many"),
        ("--task", "HumanEval/999"),
        ("--task", "not-a-task"),
        ("--canonical", "--samples", "3"),
        ("--samples", "0"),
    ],
)
def test_bad_input_is_one_line(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    # In-process (the same main() the console script calls): an interpreter start per case
    # would cost more than the cases themselves.
    code = main(["eval", "humaneval", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("codegen: error:"), err
    assert "Traceback" not in err


@pytest.mark.docker
def test_canonical_cli_scores_and_prints_timing(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli("eval", "humaneval", "--canonical", "--limit", "5")
    assert result.returncode == 0, result.stderr
    assert "pass@1 = 1.0000" in result.stdout
    assert "passed 5/5 samples" in result.stdout
    assert "time " in result.stdout and "s/task" in result.stdout
    assert "HumanEval (canonical): 5 tasks" in result.stderr  # progress goes to stderr
    # Again, as JSON: every task is now a cache hit, and the history holds both runs.
    capsys.readouterr()
    assert main(["eval", "humaneval", "--canonical", "--limit", "5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pass_at_k"] == {"pass@1": 1.0} and data["cached_tasks"] == 5
    history = (isolated_home / "eval" / "history.jsonl").read_text().splitlines()
    assert len(history) == 2
    assert Path(data["plot"]).read_bytes().startswith(b"\x89PNG")
