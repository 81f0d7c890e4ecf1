"""Hostile recordings and files to import fail in one line: JSON nested past the recursion
limit, a file past the size cap. ``codegen replay serve`` and ``replay import`` never show a
traceback and never write a half recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.orchestration.cli import main
from codegen.replay import recording
from codegen.replay.recording import FORMAT_VERSION

NESTED = "[" * 200_000 + "]" * 200_000
HEADER = json.dumps({"codegen_recording": FORMAT_VERSION, "source": "test"})


def one_error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 2  # refused: exits.py
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:") and "Traceback" not in err
    return lines[0]


def test_a_nested_recording_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, body in (("first.jsonl", NESTED), ("second.jsonl", f"{HEADER}\n{NESTED}")):
        path = tmp_path / name
        path.write_text(body + "\n")
        line = one_error_line(capsys, "replay", "serve", str(path), "--port", "0")
        assert "not valid JSON (nested too deeply)" in line and str(path) in line


def test_a_recording_past_the_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(recording, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.jsonl"
    path.write_text(HEADER + "\n" + " " * 2000 + "\n")
    line = one_error_line(capsys, "replay", "serve", str(path), "--port", "0")
    assert "larger than 1000 bytes" in line


@pytest.mark.parametrize("fmt", ["mapcoder", "ldb"])
def test_a_nested_file_to_import_is_refused_in_one_line(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(NESTED + "\n")
    line = one_error_line(capsys, "replay", "import", "--format", fmt, str(source), str(out))
    assert f"{source}:1: not valid JSON (nested too deeply)" in line
    assert not out.exists()
