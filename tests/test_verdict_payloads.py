"""benchmarks.verdicts.payloads: each payload runs in its own subprocess against the tree it
is given (that tree's ``codegen``, this checkout's payloads), and what it cannot mount is an
error, never a blocked attack. Only payloads that open no sandbox run here (about a second)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.verdicts import payload_side
from benchmarks.verdicts.payloads import SANDBOX_FREE, run_payload

ROOT = Path(__file__).resolve().parents[1]


def test_every_payload_is_registered_under_its_number() -> None:
    assert set(payload_side.PAYLOADS) >= SANDBOX_FREE
    assert {"1a", "1b", "1c", "2a", "2b", "2c", "3", "5a", "5b", "6", "7", "8a"} <= set(
        payload_side.PAYLOADS
    )


def test_a_payload_runs_the_given_trees_codegen_and_says_what_happened() -> None:
    results = run_payload(ROOT, "8d", "none", timeout_s=60)
    assert [r["id"] for r in results] == ["8d_server_negative_content_length"]
    assert results[0]["attack"] in ("succeeded", "blocked"), results[0]["detail"]


def test_a_payload_that_cannot_be_mounted_is_an_error_not_blocked(tmp_path: Path) -> None:
    # A tree whose codegen lacks what the payload imports: found elsewhere (the editable
    # install), or not at all, the payload says nothing of this tree: "error".
    (tmp_path / "codegen").mkdir()
    (tmp_path / "codegen" / "__init__.py").write_text("")
    results = run_payload(tmp_path, "8c", "none", timeout_s=60)
    assert [r["attack"] for r in results] == ["error"]
    assert "came from outside" in results[0]["detail"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tree", ".", "--only", "9z"], "unknown payload '9z'"),
        (["--tree", "/nonexistent"], "is not a checkout"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.verdicts.payloads", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_json_counts_each_outcome() -> None:
    command = [sys.executable, "-m", "benchmarks.verdicts.payloads", "--tree", "."]
    done = subprocess.run(
        [*command, "--only", "8d", "--json"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    run = json.loads(done.stdout)["runs"][0]
    assert run["tree"] == str(ROOT)
    assert sum(run["counts"].values()) == len(run["results"]) == 1
