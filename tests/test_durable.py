"""Files replaced whole are flushed before the rename, and a failed write leaves the old file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codegen.durable import atomic_text_writer, atomic_write_bytes, atomic_write_text
from codegen.retrieval.ann import FaissSidecar


def test_the_data_is_synced_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "sub" / "store.json"
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        # The temporary file already holds every byte when it is renamed.
        events.append(f"replace:{Path(src).read_bytes().decode()}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_text(target, '{"a": 1}')
    assert target.read_text() == '{"a": 1}'
    # The file's data, then the rename, then the folder's entry.
    assert events == ["fsync", 'replace:{"a": 1}', "fsync"]
    assert [p.name for p in target.parent.iterdir()] == ["store.json"]


def test_a_failed_write_keeps_the_old_content_and_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    target = atomic_write_bytes(tmp_path / "store" / "r.jsonl", b"old\n")
    with pytest.raises(RuntimeError), atomic_text_writer(target) as fh:
        fh.write("half a new file")
        raise RuntimeError("killed half-way")
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in target.parent.iterdir()] == ["r.jsonl"]


def test_a_replaced_file_gets_a_plain_files_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "meta.json", "{}")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("meta", ["", '{"format": 4, "rows": 1', "\xff", "[1, 2]", '{"format"'])
def test_a_truncated_or_foreign_ann_meta_file_reads_as_no_index(tmp_path: Path, meta: str) -> None:
    FaissSidecar.paths(tmp_path, "chunks")[-1].write_text(meta, encoding="latin-1")
    assert FaissSidecar.read_meta(tmp_path, "chunks") is None
    assert FaissSidecar.load(tmp_path, "chunks") is None


def test_an_ann_meta_file_with_wrong_field_types_reads_as_no_index(tmp_path: Path) -> None:
    from codegen.retrieval import ann

    meta = {"format": ann.FORMAT_VERSION, "rows": "many", "nprobe": None, "list_radius": []}
    atomic_write_text(FaissSidecar.paths(tmp_path, "chunks")[-1], json.dumps(meta))
    assert FaissSidecar.read_meta(tmp_path, "chunks") == meta
    assert FaissSidecar.load(tmp_path, "chunks") is None
