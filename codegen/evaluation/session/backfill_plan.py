"""An evaluation as a backfill, in plain data: which assets, which partitions, which run tags.

``codegen eval ... --backfill`` submits what :func:`plan_backfill` returns (through
codegen/orchestration/backfill.py) and the evaluation assets read the same tags back, so the
names below are the contract between the two:

    codegen/task_set       the staged task set a task-file backfill is about (its digest)
    codegen/samples_file   the staged samples file it scores (its digest)
    codegen/eval_mode      crew, canonical or samples
    codegen/eval_history   who appends the run to the history: "cli" (the CLI that drives
                           and reports it) or "summary" (the summary asset, for --submit-only)
    codegen/sandbox_package_set
                           the sandbox package set the CLI scores under (ClassEval's is
                           'classeval'): the runs score under it whatever their own settings

A registered benchmark's tasks are its family's static partitions (the task keys); a task
file's are ``<set digest>:<task>`` partitions of ``task_set_tasks``, the file staged first
(codegen/evaluation/staged.py) so the runs never depend on the user's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen.evaluation.benchmarks import family_of
from codegen.evaluation.harness import CANONICAL, SAMPLES
from codegen.evaluation.staged import StagedFiles, partition_key
from codegen.evaluation.tasks import TaskSet

LLM_POOL = "llm"
SANDBOX_POOL = "sandbox"
# The dynamic partitions of task files' tasks: "<task set digest>:<task key>".
TASK_SET_PARTITIONS = "task_set_tasks"
TASK_SET_TAG = "codegen/task_set"
SAMPLES_FILE_TAG = "codegen/samples_file"
MODE_TAG = "codegen/eval_mode"
HISTORY_TAG = "codegen/eval_history"
PACKAGE_SET_TAG = "codegen/sandbox_package_set"
HISTORY_BY_SUMMARY = "summary"
HISTORY_BY_CLI = "cli"


@dataclass(frozen=True)
class BackfillPlan:
    selection: list[str]  # asset names
    partitions: list[str]  # the partitions to run
    tags: dict[str, str]
    title: str
    # Dynamic partitions to add before submitting: all of a task file's tasks, so one set's
    # partitions stay together whichever of them this backfill runs.
    new_partitions: list[str] = field(default_factory=list)


def plan_backfill(
    task_set: TaskSet,
    keys: Sequence[str],
    mode: str,
    *,
    eval_dir: Path,
    drive: bool,
    title: str,
    samples_digest: str | None = None,
    package_set: str | None = None,
) -> BackfillPlan:
    """The backfill of ``task_set``'s ``keys`` in ``mode`` (a task file is staged here;
    raises StagedFileError). ``drive``: the CLI drives it and records the history;
    ``package_set``: the sandbox's, for the runs to score under."""
    prefix = family_of(task_set)
    if mode == SAMPLES:
        assets = ["file_scores", "file_summary"]
    else:
        assets = ["canonical" if mode == CANONICAL else "samples", "summary"]
        if mode != CANONICAL:
            assets.insert(1, "scores")
    tags = {MODE_TAG: mode, HISTORY_TAG: HISTORY_BY_CLI if drive else HISTORY_BY_SUMMARY}
    if samples_digest:
        tags[SAMPLES_FILE_TAG] = samples_digest
    if package_set:
        tags[PACKAGE_SET_TAG] = package_set
    partitions, every = list(keys), list[str]()
    if not task_set.benchmark:
        every = StagedFiles(eval_dir).stage_task_set(task_set)
        partitions = [partition_key(task_set, k) for k in keys]
        tags[TASK_SET_TAG] = task_set.digest
    selection = [f"{prefix}_{a}" for a in assets]
    return BackfillPlan(selection, partitions, tags, title, every)
