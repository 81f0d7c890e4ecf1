"""Hostile task and samples files fail in one line: JSON nested past the recursion limit, code
nested past the parser's limits, a gzip bomb (stopped at the cap while inflating, never
inflated whole), a file past its size cap. Nothing is scored or stored."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from codegen.evaluation import samples_file, tasks
from codegen.evaluation.tasks import TaskFileError, read_task_file
from codegen.orchestration.cli import main

NESTED_JSON = "[" * 200_000 + "]" * 200_000
TASK = {
    "task_id": "T/1",
    "prompt": "def f():\n    pass\n",
    "entry_point": "f",
    "test": "def check(candidate):\n    assert candidate() is None\n",
}


def error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:"), err
    return lines[0]


def stored(home: Path) -> list[Path]:
    return (
        [p for p in (home / "eval").rglob("*") if p.is_file()] if (home / "eval").exists() else []
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (NESTED_JSON, ":1: not valid JSON (nested too deeply"),
        (json.dumps({**TASK, "test": "-" * 100_000 + "1\n"}), ":1: the test of T/1 does not parse"),
        (json.dumps({**TASK, "test": "a" + ".b" * 100_000}), ":1: the test of T/1 does not parse"),
    ],
    ids=["nested-json", "parser-overflow", "deep-ast"],
)
def test_a_nested_task_file_is_one_line(
    line: str,
    message: str,
    tmp_path: Path,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(line + "\n")
    assert message in error_line(capsys, "eval", "tasks", str(path))
    assert not stored(isolated_home)


def test_a_gzip_bomb_stops_at_the_cap_without_inflating_whole(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cap = 2 * 1024 * 1024
    monkeypatch.setattr(tasks, "MAX_FILE_BYTES", cap)
    bomb = tmp_path / "tasks.jsonl.gz"
    bomb.write_bytes(gzip.compress(b" " * (64 * cap), compresslevel=9))  # 128 MB, ~130 kB
    tracemalloc.start()
    try:
        with pytest.raises(TaskFileError) as caught:
            read_task_file(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"decompresses to more than {cap} bytes" in str(caught.value)
    assert peak < 4 * cap, peak  # the cap and a chunk of output, not 128 MB
    assert "decompresses to more than" in error_line(capsys, "eval", "tasks", str(bomb))
    assert not stored(isolated_home)
    # Several members (what gzip.decompress reads) still read, under the cap.
    good = json.dumps(TASK).encode() + b"\n"
    two = tmp_path / "two.jsonl.gz"
    two.write_bytes(gzip.compress(good) + gzip.compress(good.replace(b"T/1", b"T/2")))
    assert read_task_file(two).keys() == ["T-1", "T-2"]


def test_a_task_file_past_the_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tasks, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "tasks.jsonl"
    path.write_text((json.dumps(TASK) + "\n") * 20)
    assert "larger than 1000 bytes" in error_line(capsys, "eval", "tasks", str(path))


def test_hostile_samples_files_are_one_line(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"task_id": "HumanEval/0", "completion": ' + NESTED_JSON[:400_000] + "}\n")
    line = error_line(capsys, "eval", "humaneval", "--samples-file", str(nested))
    assert f"{nested}:1: not valid JSON (nested too deeply" in line
    monkeypatch.setattr(samples_file, "MAX_FILE_BYTES", 100)
    big = tmp_path / "big.jsonl"
    big.write_text('{"task_id": "HumanEval/0", "completion": "' + "x" * 200 + '"}\n')
    line = error_line(capsys, "eval", "humaneval", "--samples-file", str(big))
    assert "larger than 100 bytes" in line
    assert not stored(isolated_home)
