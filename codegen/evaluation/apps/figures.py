"""APPS's figures and its task shape: per task its category (the best of its samples: passed
when any passed, else the first sample's), the time limit that applied, and, for a samples
file that carried its own verdicts (MapCoder's ``is_solved``), that count beside ours and every
task where the two disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codegen.evaluation.apps import tasks as apps
from codegen.evaluation.apps.scoring import (
    MAX_STDOUT_BYTES,
    SCORING_VERSION,
    TIME_LIMIT_S,
    score_programs,
)
from codegen.evaluation.humaneval import PROGRAM, Problem
from codegen.evaluation.scoring import Category, SampleScore
from codegen.evaluation.task_shape import TaskShape
from codegen.json_types import JSONObject, JSONValue

CATEGORIES = (Category.PASSED, Category.WRONG_ANSWER, Category.RUNTIME_ERROR, Category.TIMEOUT)
DISAGREEMENTS_SHOWN = 10


def _task_category(scores: Sequence[SampleScore]) -> SampleScore | None:
    return next((s for s in scores if s.passed), scores[0] if scores else None)


def program_summary(
    scored: Sequence[tuple[Problem, Sequence[SampleScore]]],
    recorded: Mapping[str, bool] | None = None,
) -> JSONObject:
    """The figures over ``scored``; with the samples file's own verdicts by task key
    (MapCoder's ``is_solved``), their count beside ours and every task where the two
    disagree."""
    by_category: dict[str, list[JSONValue]] = {str(c): [] for c in CATEGORIES}
    per_task: dict[str, JSONValue] = {}
    recorded = recorded or {}
    disagree: list[JSONValue] = []
    fences: dict[str, int] = {}
    for problem, scores in scored:
        for score in scores:
            fence = score.fence or "none: not said"
            fences[fence] = fences.get(fence, 0) + 1
        best = _task_category(scores)
        if best is None:
            continue
        per_task[problem.task_id] = {"category": best.category, "message": best.message[:300]}
        by_category.setdefault(best.category, []).append(problem.task_id)
        if problem.key in recorded and recorded[problem.key] != best.passed:
            file_says = recorded[problem.key]
            why = best.message[:300]
            entry = {"task": problem.task_id, "ours": best.category, "file_is_solved": file_says}
            disagree.append({**entry, "why": why})
    figures: JSONObject = {
        "tasks": len(per_task),
        "solved_tasks": len(by_category[Category.PASSED]),
        "time_limit_s": TIME_LIMIT_S,
        "max_stdout_bytes": MAX_STDOUT_BYTES,
        "categories": {k: len(v) for k, v in by_category.items()},
        "tasks_by_category": by_category,  # type: ignore[dict-item]
        "per_task": per_task,
        "verdicts_by_fence": fences,  # type: ignore[dict-item]
    }
    if recorded:
        keys = {p.key for p, _ in scored}
        figures["file_is_solved"] = sum(v for k, v in recorded.items() if k in keys)
        figures["disagreements"] = disagree
    return figures


def describe(figures: JSONObject, every: bool) -> list[str]:
    counts = figures["categories"]
    assert isinstance(counts, dict)
    lines = [
        f"APPS: solved {figures['solved_tasks']}/{figures['tasks']} tasks "
        f"({', '.join(f'{k} {v}' for k, v in counts.items())}); "
        f"{figures['time_limit_s']} s per input"
    ]
    if "file_is_solved" in figures:
        disagree = figures["disagreements"]
        assert isinstance(disagree, list)
        lines.append(
            f"the file's own is_solved: {figures['file_is_solved']}; "
            f"{len(disagree)} tasks disagree (all in --json)"
        )
        for entry in disagree if every else disagree[:DISAGREEMENTS_SHOWN]:
            assert isinstance(entry, dict)
            lines.append(
                f"  {entry['task']}: ours {entry['ours']}, file is_solved "
                f"{entry['file_is_solved']}: {str(entry['why'])[:150]}"
            )
    return lines


def metadata(figures: JSONObject) -> JSONObject:
    """The counts only (the per-task lists are in --json)."""
    return {k: v for k, v in figures.items() if k not in ("per_task", "tasks_by_category")}


APPS_SHAPE = TaskShape(
    name=PROGRAM,
    title=apps.NAME,
    request=apps.request,
    claims_file=apps.is_task_file,
    read_file=apps.parse_task_file,
    claims_replies=apps.is_rows_file,
    read_replies=apps.rows_modules,
    read_verdicts=apps.rows_verdicts,
    score=score_programs,
    scoring_version=SCORING_VERSION,
    figures=program_summary,
    describe=describe,
    metadata=metadata,
)
