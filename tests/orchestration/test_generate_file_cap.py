"""``codegen generate @FILE`` reads at most a little past the longest request, whatever the
file's size, and refuses a larger one in one line before anything is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.agents.roles import (
    MAX_REQUEST_CHARS,
    MAX_REQUEST_FILE_BYTES,
    read_request_file,
    validate_request,
)
from codegen.orchestration.cli import main


def test_a_huge_request_file_is_refused_unread(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as fh:  # sparse: 256 MB to read, no bytes on disk
        fh.truncate(1 << 28)
    assert main(["generate", f"@{huge}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"larger than {MAX_REQUEST_FILE_BYTES} bytes" in lines[0], lines
    assert not (isolated_home / "requests").exists()
    # The longest request padded with blank lines still reads: the cap is on bytes, not text.
    padded = tmp_path / "padded.txt"
    padded.write_text("\n" * 1000 + "é" * MAX_REQUEST_CHARS + "\n" * 1000)
    text = read_request_file(padded).decode("utf-8")
    assert validate_request(text) == "é" * MAX_REQUEST_CHARS
