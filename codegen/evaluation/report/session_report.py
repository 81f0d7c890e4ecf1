"""The end of an evaluation session: its summary, history line, plot, JSON result, verdict.

The CLI prints what this returns (``codegen eval ... --json`` prints ``result``); the verdict
decides the exit: an outage (tasks left unscored, a crew sample ended by an unreachable
endpoint or sandbox) is not a score, and a benchmark whose references all pass scoring one
of them as failing means the harness is broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen.agents.report import counted
from codegen.evaluation.harness import CANONICAL, TaskOutcome
from codegen.evaluation.report.summary import Summary
from codegen.evaluation.tasks import TaskSet
from codegen.json_types import JSONObject


class EvalOutage(RuntimeError):
    """Tasks left unscored by an outage (endpoint, sandbox): re-running retries them."""


class HarnessBroken(RuntimeError):
    """A benchmark whose references all pass scored one of them as failing."""


@dataclass
class Report:
    """What an evaluation's end prints: the summary, the JSON result, and its verdict."""

    summary: Summary
    result: JSONObject
    absent: list[str]  # tasks a samples file does not hold: listed as missing, no error
    outage: str | None = None  # why tasks are left unscored (exit 5: re-run to retry)
    broken: str | None = None  # the canonical self-check failed

    def raise_for_verdict(self) -> None:
        if self.outage:
            raise EvalOutage(self.outage)
        if self.broken:
            raise HarnessBroken(self.broken)


def add_absent(summary: Summary, absent: Sequence[str], task_set: TaskSet) -> list[str]:
    """List ``absent`` tasks as missing in ``summary``; returns the tasks left unscored."""
    unscored = list(summary.missing)
    if absent:
        order = {k: i for i, k in enumerate(task_set.problems)}
        summary.missing = sorted([*unscored, *absent], key=lambda k: order.get(k, len(order)))
        summary.tasks_expected += len(absent)
    return unscored


@dataclass(frozen=True)
class Ran:
    """What one session did, as the report needs it."""

    mode: str
    task_set: TaskSet
    keys: Sequence[str]
    wall: float
    outcomes: Sequence[TaskOutcome]
    errors: dict[str, str]
    references_pass: bool  # a canonical failure means the harness is broken


def build_report(
    ran: Ran,
    summary: Summary,
    unscored: list[str],
    absent: list[str],
    extra: JSONObject,
    plot: Path,
    results_dir: Path,
) -> Report:
    """The JSON result of ``ran`` and its verdict (history and plot are the caller's)."""
    keys, wall, task_set = ran.keys, ran.wall, ran.task_set
    canonical = ran.mode == CANONICAL
    failures = [{"task": r.key, "why": r.first_failure} for r in summary.failure_rows()]
    result: JSONObject = {
        **summary.to_dict(with_rows=False),
        "wall_s": round(wall, 2),
        "seconds_per_task": round(wall / max(1, len(keys)), 3),
        "cached_tasks": sum(o.generation_cached and o.scoring_cached for o in ran.outcomes),
        "errors": dict(ran.errors),
        "task_set": {"name": task_set.name, "digest": task_set.digest or None},
        **({"canonical_failures": failures} if canonical else {}),  # type: ignore[dict-item]
        **extra,
        "plot": str(plot),
        "results_dir": str(results_dir),
    }
    report = Report(summary=summary, result=result, absent=list(absent))
    report.outage = _outage(keys, ran.outcomes, ran.errors, unscored)
    if canonical and ran.references_pass and summary.passed_samples < summary.samples:
        report.broken = (
            f"canonical solutions scored {summary.passed_samples}/{summary.samples}: "
            "the scoring harness is broken"
        )
    return report


def _outage(
    keys: Sequence[str],
    outcomes: Sequence[TaskOutcome],
    errors: dict[str, str],
    unscored: list[str],
) -> str | None:
    """Why the run is unfinished (None: every task is scored)."""
    if errors:
        first = next(iter(errors.items()))
        return (
            f"{len(errors)} of {len(keys)} tasks could not run (first: {first[0]}: {first[1]}); "
            "re-run to retry them, finished tasks are cached"
        )
    crew_errors = [(o.key, c.reason) for o in outcomes for c in o.candidates if c.status == "error"]
    if crew_errors:
        # An outage is not a score: a model's own failures (no_code, unrecorded, ...) are
        # scored and cached, an unreachable endpoint or sandbox must not pass for a weak model.
        key, reason = crew_errors[0]
        return (
            f"{counted(len(crew_errors), 'sample')} ended with an outage, crew status error "
            "(first: "
            f"{key}: {reason}); they are not cached: re-run to retry them"
        )
    if unscored:
        return (
            f"{len(unscored)} of {len(keys)} tasks have no score (first: "
            f"{unscored[0]}); re-run to retry them, finished tasks are cached"
        )
    return None
