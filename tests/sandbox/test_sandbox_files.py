"""Path and link validation: nothing copied in may resolve outside the work dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import Symlink, UnsafePathError
from sandbox.files import encode_files, read_dir

MB = 1024 * 1024


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../x.py", "a/../../x.py", "a/..", "", ".", "a\x00b", "a\\b"],
)
def test_unsafe_paths_are_refused(path: str) -> None:
    with pytest.raises(UnsafePathError):
        encode_files({path: "x"}, MB)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside", "../x", "a/../../x", ""])
def test_links_pointing_outside_are_refused(target: str) -> None:
    with pytest.raises(UnsafePathError):
        encode_files({"link": Symlink(target)}, MB)


def test_links_inside_are_kept_as_links() -> None:
    entries = encode_files({"pkg/a.py": "x = 1\n", "pkg/b.py": Symlink("a.py")}, MB)
    assert {"path": "pkg/b.py", "link": "a.py"} in entries


def test_size_cap_and_conflicts() -> None:
    with pytest.raises(UnsafePathError, match="exceed"):
        encode_files({"big.bin": b"\0" * (MB + 1)}, MB)
    with pytest.raises(UnsafePathError, match="both a file and a directory"):
        encode_files({"a": "x", "a/b": "y"}, MB)
    with pytest.raises(UnsafePathError, match="content"):
        encode_files({"a": 3}, MB)  # type: ignore[dict-item]


def test_read_dir_copies_links_as_links_and_refuses_fifos(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text("print(1)\n")
    (tmp_path / "alias.py").symlink_to("sub/m.py")
    (tmp_path / "leak").symlink_to("/etc/hostname")
    files = read_dir(tmp_path, MB)
    assert files["sub/m.py"] == b"print(1)\n"
    assert files["alias.py"] == Symlink("sub/m.py")
    assert files["leak"] == Symlink("/etc/hostname")  # read as a link, never followed
    with pytest.raises(UnsafePathError, match="absolute"):
        encode_files(files, MB)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        read_dir(tmp_path, MB)


def test_read_dir_caps_total_size(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"\0" * 600_000)
    (tmp_path / "b.bin").write_bytes(b"\0" * 600_000)
    with pytest.raises(UnsafePathError, match="more than"):
        read_dir(tmp_path, MB)
