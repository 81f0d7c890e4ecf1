"""Benchmarks with an asset family of their own: a loader plus a registration.

A registered benchmark's tasks are static partitions (one per task) of its own assets,
``<name>_samples``, ``<name>_scores``, ``<name>_canonical``, ``<name>_summary``,
``<name>_file_scores`` and ``<name>_file_summary`` (codegen/assets/evaluation.py builds them
from the registration), with jobs and, when every reference solution passes its own test,
the ``canonical_verified`` check on the summary. HumanEval is registered here. Another
benchmark is a module, named in ``[eval] benchmarks``, that calls :func:`register` with a
loader returning its :class:`TaskSet` (``read_task_file`` of its data, or tasks built in
code). A task file run without a registration (``codegen eval tasks FILE``, MBPP,
HumanEval+) is a dynamic partition of the shared ``task_set_*`` family instead.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from codegen.evaluation.humaneval import FUNCTION
from codegen.evaluation.tasks import TaskSet, humaneval_tasks

HUMANEVAL = "humaneval"
# The family of task files run without a registration (dynamic partitions).
TASK_FILES = "task_set"


class BenchmarkError(ValueError):
    """A registration that cannot be used; the message names it."""


@dataclass(frozen=True)
class Benchmark:
    name: str  # the asset names' prefix: lower case, a Python name
    load: Callable[[], TaskSet]  # the tasks; called once per process
    title: str = ""  # what the UI's descriptions call it (default: the task set's name)
    # Every reference solution passes its own test: the summary gets the canonical_verified
    # check and `--canonical` fails when one does not (the harness would be broken).
    references_pass: bool = False

    def tasks(self) -> TaskSet:
        found = _loaded.get(self.name)
        if found is None:
            found = _loaded[self.name] = _as_registered(self, self.load())
        return found


_registry: dict[str, Benchmark] = {}
_loaded: dict[str, TaskSet] = {}


def _problems_digest(task_set: TaskSet) -> str:
    # A function-shaped problem's shape is left out: digests stay as before shapes were named.
    problems = {
        k: {f: v for f, v in asdict(p).items() if (f, v) != ("shape", FUNCTION)}
        for k, p in task_set.problems.items()
    }
    text = json.dumps(problems, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _as_registered(benchmark: Benchmark, found: TaskSet) -> TaskSet:
    if not isinstance(found, TaskSet) or not found.problems:
        raise BenchmarkError(f"benchmark {benchmark.name}: its loader returned no tasks")
    digest = found.digest
    if not digest and benchmark.name != HUMANEVAL:
        # Its identity must not be HumanEval's (no digest): the cache would mix them.
        digest = _problems_digest(found)
    return replace(found, digest=digest, benchmark=benchmark.name)


def register(benchmark: Benchmark) -> Benchmark:
    """Add ``benchmark`` (called by the module that defines it, at import)."""
    name = benchmark.name
    if not (name.isidentifier() and name == name.lower()) or name == TASK_FILES:
        raise BenchmarkError(
            f"benchmark name {name!r}: use a lower-case Python name other than {TASK_FILES!r}"
        )
    known = _registry.get(name)
    if known is not None and known != benchmark:
        raise BenchmarkError(f"benchmark {name!r} is registered twice")
    _registry[name] = benchmark
    return benchmark


def unregister(name: str) -> None:
    """Forget benchmark ``name`` (a test's own registration, once it is done)."""
    if name != HUMANEVAL:
        _registry.pop(name, None)
        _loaded.pop(name, None)


def registered(modules: Sequence[str] = ()) -> list[Benchmark]:
    """Every registered benchmark, HumanEval first, after importing ``modules`` (``[eval]
    benchmarks``), each of which registers its own."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise BenchmarkError(f"[eval] benchmarks: cannot import {module!r}: {exc}") from None
    return list(_registry.values())


def benchmark_of(task_set: TaskSet) -> Benchmark | None:
    """The registration whose family holds ``task_set`` (None: a task file)."""
    return _registry.get(task_set.benchmark) if task_set.benchmark else None


def family_of(task_set: TaskSet) -> str:
    """The asset names' prefix of ``task_set``'s family."""
    return task_set.benchmark or TASK_FILES


register(Benchmark(HUMANEVAL, humaneval_tasks, "HumanEval", references_pass=True))
