"""Task files and samples files as a backfill's runs read them: validated copies under
``$CODEGEN_HOME/eval/staged/``, named by the digest of their bytes.

A backfill over a task set runs in other processes (and, with ``--submit-only``, whenever a
daemon gets to it), so its runs must not depend on the user's path still existing or still
holding the same bytes. ``codegen eval ... --backfill`` validates the file, then stages it
here once; a run finds the set again from its partition key alone:

    staged/task_sets/<digest>.jsonl[.gz]   the task file's bytes, unchanged
    staged/task_sets/<digest>.json         what reports call it ({"name", "source"})
    staged/samples/<digest>.jsonl          a samples file's bytes ({"name", "source"} beside)

A task-set partition key is ``<task set digest>:<task key>`` (``3f9c0a1b2c3d4e5f:MBPP-1``):
two files with different bytes never share a partition (nor, since the digest is part of the
evaluation configuration, a cache entry), and the same file staged again is the same
partitions and the same cache.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from codegen.durable import atomic_write_bytes
from codegen.evaluation.samples_file import SamplesFile, read_samples
from codegen.evaluation.store import read_object, write_json_atomic
from codegen.evaluation.tasks import TaskSet, read_task_file

SEPARATOR = ":"
_DIGEST = re.compile(r"[0-9a-f]{16}")
# Dagster refuses partition keys holding these (a range is written "a...b").
_NOT_IN_KEYS = ("...", "\a", "\b", "\f", "\n", "\r", "\t", "\v", "\0")


class StagedFileError(ValueError):
    """A staged file that is absent or no longer holds the bytes its name says."""


def partition_key(task_set: TaskSet, key: str) -> str:
    """The partition of ``task_set``'s task ``key``."""
    return f"{task_set.digest}{SEPARATOR}{key}"


def split_partition_key(partition: str) -> tuple[str, str]:
    """(task set digest, task key) of a task-set partition key."""
    digest, sep, key = partition.partition(SEPARATOR)
    if not sep or not key or not _DIGEST.fullmatch(digest):
        raise ValueError(
            f"not a task-set partition key: {partition!r} (expected <16 hex digits>:<task>)"
        )
    return digest, key


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)


def _source_bytes(source: Path, digest: str, what: str) -> bytes:
    """The bytes of ``source``, checked to be the ones validated (digest ``digest``)."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise StagedFileError(f"{source}: cannot read: {exc.strerror or exc}") from None
    if not hashlib.sha256(data).hexdigest().startswith(digest):
        raise StagedFileError(f"{source}: the {what} changed while it was read; run again")
    return data


@lru_cache(maxsize=8)
def _load_task_set(path: str, digest: str, name: str) -> TaskSet:
    # Staged files never change (their name is their digest): one parse per process.
    found = read_task_file(path, name=name)
    if found.digest != digest:
        raise StagedFileError(f"{path}: holds task set {found.digest}, not {digest}")
    return found


class StagedFiles:
    def __init__(self, eval_dir: Path) -> None:
        self.root = Path(eval_dir) / "staged"

    # Task sets ---------------------------------------------------------------------------

    def _task_set_path(self, digest: str) -> Path | None:
        for suffix in (".jsonl", ".jsonl.gz"):
            path = self.root / "task_sets" / f"{digest}{suffix}"
            if path.exists():
                return path
        return None

    def stage_task_set(self, task_set: TaskSet) -> list[str]:
        """Store ``task_set``'s file (once) and return the partition keys of all its tasks,
        in file order; raises StagedFileError when a task id cannot be a partition key."""
        if task_set.builtin:
            raise ValueError("HumanEval ships in a package: it is not staged")
        keys = [partition_key(task_set, k) for k in task_set.problems]
        bad = next((k for k in keys if any(s in k for s in _NOT_IN_KEYS)), None)
        if bad is not None:
            raise StagedFileError(
                f"{task_set.source}: task {bad.partition(SEPARATOR)[2]!r} cannot name a "
                "Dagster partition (it holds '...' or a control character)"
            )
        if self._task_set_path(task_set.digest) is None:
            source = Path(task_set.source)
            data = _source_bytes(source, task_set.digest, "task file")
            suffix = ".jsonl.gz" if data[:2] == b"\x1f\x8b" else ".jsonl"
            meta = {"name": task_set.name, "source": str(source.resolve())}
            write_json_atomic(self.root / "task_sets" / f"{task_set.digest}.json", meta)
            _write_bytes_atomic(self.root / "task_sets" / f"{task_set.digest}{suffix}", data)
        return keys

    def task_set(self, digest: str) -> TaskSet:
        """The staged task set ``digest``, as the CLI read it (same name, same tasks)."""
        path = self._task_set_path(digest)
        if path is None:
            raise StagedFileError(
                f"task set {digest} is not staged under {self.root / 'task_sets'}; run "
                "`codegen eval tasks FILE --backfill` (or mbpp --tasks FILE) to stage it"
            )
        meta = read_object(self.root / "task_sets" / f"{digest}.json") or {}
        return _load_task_set(str(path), digest, str(meta.get("name") or path.name))

    def task_set_digests(self) -> list[str]:
        """Every staged task set, oldest first."""
        folder = self.root / "task_sets"
        if not folder.exists():
            return []
        found = [p for p in folder.iterdir() if _DIGEST.fullmatch(p.name.split(".")[0])]
        found = [p for p in found if not p.name.endswith(".json")]
        return [p.name.split(".")[0] for p in sorted(found, key=lambda p: p.stat().st_mtime)]

    def locate(self, partition: str) -> tuple[TaskSet, str]:
        """The task set and task key a task-set partition key names (checked to exist)."""
        digest, key = split_partition_key(partition)
        task_set = self.task_set(digest)
        task_set.get(key)
        return task_set, key

    # Samples files ------------------------------------------------------------------------

    def stage_samples(self, samples: SamplesFile) -> str:
        """Store a validated samples file (once); returns the digest that names it."""
        digest = samples.digest[:16]
        path = self.root / "samples" / f"{digest}.jsonl"
        if not path.exists():
            data = _source_bytes(samples.path, digest, "samples file")
            meta = {"name": samples.path.name, "source": str(samples.path.resolve())}
            write_json_atomic(self.root / "samples" / f"{digest}.json", meta)
            _write_bytes_atomic(path, data)
        return digest

    def samples_name(self, digest: str) -> str:
        """The staged samples file's own name, as the user gave it."""
        meta = read_object(self.root / "samples" / f"{digest}.json") or {}
        return str(meta.get("name") or f"{digest}.jsonl")

    def samples(self, digest: str, tasks: TaskSet | None = None) -> SamplesFile:
        """The staged samples file ``digest``, read for ``tasks`` (default HumanEval)."""
        if not _DIGEST.fullmatch(digest):
            raise StagedFileError(f"not a samples file digest: {digest!r}")
        path = self.root / "samples" / f"{digest}.jsonl"
        if not path.exists():
            raise StagedFileError(f"samples file {digest} is not staged under {path.parent}")
        found = read_samples(path, tasks)
        if not found.digest.startswith(digest):
            raise StagedFileError(f"{path}: holds samples file {found.digest[:16]}, not {digest}")
        return found
