"""HumanEval+ scoring through the CLI in the real sandbox: expected outputs from the canonical
solution, base and plus verdicts per sample, tolerance, the per-input time limit.

The fixture is a small task file in HumanEvalPlus.jsonl.gz's shape, written here.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.orchestration.cli import main

pytestmark = pytest.mark.docker

TASKS = [
    {
        "task_id": "Plus/0",
        "prompt": 'def add(x: int, y: int) -> int:\n    """Add two numbers."""\n',
        "entry_point": "add",
        "canonical_solution": "    return x + y\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "contract": '    assert isinstance(x, int), "invalid inputs"\n',
        "base_input": "[[1, 2], [2, 3]]",
        "plus_input": "[[-5, 1], [0, 0], [1000000, 7]]",
        "atol": 0,
    },
    {
        "task_id": "Plus/1",
        "prompt": 'def third(x: float) -> float:\n    """A third of x."""\n',
        "entry_point": "third",
        "canonical_solution": "    return x / 3\n",
        "test": "def check(candidate):\n    assert abs(candidate(3.0) - 1.0) < 1e-6\n",
        "contract": "",
        "base_input": "[[3.0], [1.0]]",
        "plus_input": "[[1e-3], [7.5]]",
        "atol": 0,
    },
]


def plus_file(tmp_path: Path) -> Path:
    path = tmp_path / "HumanEvalPlus-mini.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(t) + "\n" for t in TASKS).encode()))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["eval", "humaneval", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_canonical_passes_base_and_plus_and_a_base_only_solution_fails_plus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = plus_file(tmp_path)
    code, canon, err = run(capsys, "--plus", str(tasks), "--canonical")
    assert code == 0, err
    assert canon["pass_at_k"] == {"pass@1": 1.0}
    assert canon["plus"]["pass_at_k"] == {"pass@1": 1.0} and canon["plus"]["solved_tasks"] == 2
    samples = tmp_path / "samples.jsonl"
    rows = [
        # Right on the base inputs (all positive), wrong on a plus one (negative).
        {"task_id": "Plus/0", "completion": "    return abs(x) + y\n"},
        # Right within the float tolerance EvalPlus applies (1e-6 for float outputs).
        {"task_id": "Plus/1", "completion": "    return x / 3 + 1e-9\n"},
        # Too slow: far past the canonical time x 4 (at least 1 s) per input.
        {
            "task_id": "Plus/1",
            "completion": "    import time\n    time.sleep(2)\n    return x / 3\n",
        },
        # Wrong by more than the tolerance.
        {"task_id": "Plus/1", "completion": "    return x / 3 + 1e-3\n"},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, result, err = run(capsys, "--plus", str(tasks), "--samples-file", str(samples))
    assert code == 0, err
    scores = {
        key: json.loads((Path(result["results_dir"]) / "scores" / f"{key}.json").read_text())
        for key in ("Plus-0", "Plus-1")
    }
    add = scores["Plus-0"]["scores"]
    assert [(s["passed"], s["plus"]) for s in add] == [(True, False)]
    assert "wrong output on input [-5, 1]" in add[0]["message"]
    third = scores["Plus-1"]["scores"]
    assert [(s["passed"], s["plus"]) for s in third] == [
        (True, True),
        (False, False),
        (False, False),
    ]
    assert [s["category"] for s in third] == ["passed", "timeout", "wrong_answer"]
    assert result["passed_samples"] == 2 and result["plus"]["passed_samples"] == 1


def test_outputs_of_ten_thousand_digits_are_expected_and_compared_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    """HumanEval/83 and /139 return ints past Python's 4,300-digit text limit: the canonical
    solution passes (it ended as an outage, exit 5), and one unit off fails."""
    task = {
        "task_id": "Plus/2",
        "prompt": 'def power(n: int) -> int:\n    """10 to the n, plus 7."""\n',
        "entry_point": "power",
        "canonical_solution": "    return 10 ** n + 7\n",
        "test": "def check(candidate):\n    assert candidate(1) == 17\n",
        "contract": "",
        "base_input": "[[9999], [1]]",
        "plus_input": "[[12000]]",
        "atol": 0,
    }
    tasks = tmp_path / "big.jsonl.gz"
    tasks.write_bytes(gzip.compress((json.dumps(task) + "\n").encode()))
    code, canon, err = run(capsys, "--plus", str(tasks), "--canonical")
    assert code == 0, err
    assert canon["pass_at_k"] == {"pass@1": 1.0} and canon["plus"]["solved_tasks"] == 1
    samples = tmp_path / "samples.jsonl"
    rows = [
        {"task_id": "Plus/2", "completion": "    return 5**n * 2**n + 7\n"},
        {"task_id": "Plus/2", "completion": "    return 10 ** n + 7 + (n > 9000)\n"},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, result, err = run(capsys, "--plus", str(tasks), "--samples-file", str(samples))
    assert code == 0, err
    scores = json.loads((Path(result["results_dir"]) / "scores" / "Plus-2.json").read_text())
    assert [(s["passed"], s["plus"]) for s in scores["scores"]] == [(True, True), (False, False)]
