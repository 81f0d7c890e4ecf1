"""Staged task files: what a task-set backfill's runs read instead of the user's path."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from codegen.evaluation.samples_file import read_samples
from codegen.evaluation.staged import (
    StagedFileError,
    StagedFiles,
    partition_key,
    split_partition_key,
)
from codegen.evaluation.tasks import read_task_file

TASK = {
    "task_id": "Demo/one",
    "prompt": "def one():\n",
    "entry_point": "one",
    "test": "def check(candidate):\n    assert candidate() == 1\n",
    "canonical_solution": "    return 1\n",
}


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_staged_set_is_the_file_as_read_and_outlives_it(tmp_path: Path) -> None:
    source = write(tmp_path / "mine.jsonl", [TASK, dict(TASK, task_id="Demo/two")])
    read = read_task_file(source, name="Mine")
    staged = StagedFiles(tmp_path / "eval")
    keys = staged.stage_task_set(read)
    assert keys == [f"{read.digest}:Demo-one", f"{read.digest}:Demo-two"]
    assert staged.stage_task_set(read) == keys  # again: the same partitions, nothing rewritten
    source.unlink()
    found, key = staged.locate(keys[1])
    assert key == "Demo-two" and found.problems == read.problems
    assert found.name == "Mine" and found.digest == read.digest
    assert staged.task_set_digests() == [read.digest]
    with pytest.raises(ValueError, match="unknown task 'Demo-three'"):
        staged.locate(f"{read.digest}:Demo-three")
    with pytest.raises(StagedFileError, match="is not staged"):
        staged.locate(f"{'0' * 16}:Demo-one")


def test_gzip_sets_stay_gzip_and_other_bytes_are_other_partitions(tmp_path: Path) -> None:
    plain = write(tmp_path / "a.jsonl", [TASK])
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    staged = StagedFiles(tmp_path / "eval")
    a, b = read_task_file(plain), read_task_file(packed)
    [key_a], [key_b] = staged.stage_task_set(a), staged.stage_task_set(b)
    assert key_a != key_b and key_a.endswith(":Demo-one") and key_b.endswith(":Demo-one")
    assert staged.locate(key_b)[0].problems == a.problems
    assert (staged.root / "task_sets" / f"{b.digest}.jsonl.gz").exists()


def test_a_file_changed_after_validation_is_not_staged(tmp_path: Path) -> None:
    source = write(tmp_path / "mine.jsonl", [TASK])
    read = read_task_file(source)
    write(source, [dict(TASK, test="def check(candidate):\n    pass\n")])
    staged = StagedFiles(tmp_path / "eval")
    with pytest.raises(StagedFileError, match="changed while it was read"):
        staged.stage_task_set(read)
    assert not (staged.root / "task_sets").exists()


def test_ids_dagster_cannot_take_and_malformed_keys(tmp_path: Path) -> None:
    read = read_task_file(write(tmp_path / "dots.jsonl", [dict(TASK, task_id="a...b")]))
    with pytest.raises(StagedFileError, match="cannot name a Dagster partition"):
        StagedFiles(tmp_path / "eval").stage_task_set(read)
    assert partition_key(read, "x") == f"{read.digest}:x"
    assert split_partition_key("0123456789abcdef:MBPP-1") == ("0123456789abcdef", "MBPP-1")
    for bad in ("HumanEval-0", "0123:MBPP-1", "0123456789abcdef:", "0123456789ABCDEF:x"):
        with pytest.raises(ValueError, match="not a task-set partition key"):
            split_partition_key(bad)


def test_staged_samples_files(tmp_path: Path) -> None:
    tasks = read_task_file(write(tmp_path / "mine.jsonl", [TASK]))
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"task_id": "Demo/one", "completion": "    return 1\n"}) + "\n")
    samples = read_samples(path, tasks)
    staged = StagedFiles(tmp_path / "eval")
    digest = staged.stage_samples(samples)
    path.unlink()
    again = staged.samples(digest, tasks)
    assert again.modules == samples.modules and again.digest == samples.digest
    with pytest.raises(StagedFileError, match="not staged"):
        staged.samples("0" * 16, tasks)


def test_a_task_key_is_the_problem_key_whatever_the_id(tmp_path: Path) -> None:
    """Partitions, the store and the summary name a task by one key, even for an id with
    characters a partition key or file name cannot hold."""
    read = read_task_file(write(tmp_path / "odd.jsonl", [dict(TASK, task_id="my task/#1")]))
    [(key, problem)] = read.problems.items()
    assert key == problem.key == "my-task--1"
    staged = StagedFiles(tmp_path / "eval")
    [partition] = staged.stage_task_set(read)
    found, in_set = staged.locate(partition)
    assert in_set == "my-task--1" and found.problems == read.problems
