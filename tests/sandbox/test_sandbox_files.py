"""Path and link validation: nothing copied in may resolve outside the work dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codegen.sandbox import Symlink, UnsafePathError
from codegen.sandbox.files import encode_files, read_dir

MB = 1024 * 1024


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../x.py", "a/../../x.py", "a/..", "", ".", "a\x00b", "a\\b"],
)
def test_unsafe_paths_are_refused(path: str) -> None:
    with pytest.raises(UnsafePathError):
        encode_files({path: "x"}, MB)


OUTSIDE_TARGETS = ["/etc/passwd", "/", "../../outside", "../x", "a/../../x"]


@pytest.mark.parametrize("target", OUTSIDE_TARGETS)
def test_links_pointing_outside_are_carried_verbatim(target: str) -> None:
    # They resolve in the sandbox's own file system (the hostile tests show to nothing).
    assert encode_files({"link": Symlink(target)}, MB) == [{"path": "link", "link": target}]


@pytest.mark.parametrize("target", OUTSIDE_TARGETS)
def test_links_pointing_outside_are_refused_where_the_work_dir_is_on_the_host(
    target: str,
) -> None:
    with pytest.raises(UnsafePathError, match=r"absolute|outside"):
        encode_files({"link": Symlink(target)}, MB, confine_links=True)


@pytest.mark.parametrize("target", ["", "a\x00b", "x" * 5000])
def test_malformed_link_targets_are_refused(target: str) -> None:
    with pytest.raises(UnsafePathError, match="target"):
        encode_files({"link": Symlink(target)}, MB)


def test_a_link_is_never_a_directory_to_write_through() -> None:
    with pytest.raises(UnsafePathError, match="both a file and a directory"):
        encode_files({"d": Symlink("/etc"), "d/evil": "x"}, MB)


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
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        read_dir(tmp_path, MB)


def test_read_dir_caps_total_size(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"\0" * 600_000)
    (tmp_path / "b.bin").write_bytes(b"\0" * 600_000)
    with pytest.raises(UnsafePathError, match="more than"):
        read_dir(tmp_path, MB)


def test_read_dir_never_reads_through_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.txt").write_text("HOST-SECRET\n")
    (outside / "deep" / "more.txt").write_text("HOST-SECRET\n")
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "data.txt").write_text("inside\n")
    (root / "secret").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside)  # a directory link is not descended into
    (root / "rel_out").symlink_to("../outside/secret.txt")
    (root / "slash").symlink_to("/")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "inside").symlink_to("pkg/data.txt")
    files = read_dir(root, MB)
    assert files == {
        "pkg/data.txt": b"inside\n",
        "secret": Symlink(str(outside / "secret.txt")),
        "dir_link": Symlink(str(outside)),
        "rel_out": Symlink("../outside/secret.txt"),
        "slash": Symlink("/"),
        "loop_a": Symlink("loop_b"),
        "loop_b": Symlink("loop_a"),
        "inside": Symlink("pkg/data.txt"),
    }
    encode_files(files, MB)  # every one of them is accepted for the sandbox
