"""The verdicts of an evaluation that a time limit decided, counted for its report.

A figure that counts them moves with the machine's load (ClassEval's references _28 and _35
pass alone and time out at load 7-10), so the summary (``report.Summary.time_limit``) says
how many there are, which, and at what load each was reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from codegen.evaluation.scoring import SampleScore
from codegen.json_types import JSONObject
from codegen.sandbox.time_limit import decided_by


@dataclass
class TimeLimitVerdicts:
    """The verdicts a time limit decided (``SampleScore.time_limit_verdicts``): a figure that
    counts them moves with the machine's load, so the report says how many, and at what load
    (``sandbox.time_limit``)."""

    tasks: int = 0  # tasks with at least one
    # One per verdict: task, sample (its index), test_class (ClassEval), time_limit_s, load_1m.
    verdicts: list[JSONObject] = field(default_factory=list)
    # "3 tasks decided by the 5 s time limit at load 6.2"; "" when none was.
    note: str = ""

    @classmethod
    def of(cls, tasks: Iterable[tuple[str, Sequence[SampleScore]]]) -> TimeLimitVerdicts:
        """Over each task's reported scores (``(task key, scores)``)."""
        verdicts: list[JSONObject] = [
            {"task": key, "sample": index, **verdict}
            for key, scores in tasks
            for index, score in enumerate(scores)
            for verdict in score.time_limit_verdicts()
        ]
        if not verdicts:
            return cls()
        count = len({v["task"] for v in verdicts})
        how = decided_by(
            [_number(v.get("time_limit_s")) for v in verdicts],
            [_number(v.get("load_1m")) for v in verdicts],
        )
        also = f" ({len(verdicts)} verdicts)" if len(verdicts) > count else ""
        note = f"{count} task{'s' if count > 1 else ''}{also} decided {how}"
        return cls(tasks=count, verdicts=verdicts, note=note)

    def lines(self, limit: int = 10) -> list[str]:
        """One line per verdict (the first ``limit``): task, sample, test class, limit, load."""
        shown = [
            f"{v['task']} #{v['sample']}"
            + (f" {v['test_class']}" if v.get("test_class") else "")
            + ": decided "
            + decided_by([_number(v.get("time_limit_s"))], [_number(v.get("load_1m"))])
            for v in self.verdicts[:limit]
        ]
        if len(self.verdicts) > limit:
            shown.append(f"... {len(self.verdicts) - limit} more (all in --json: time_limit)")
        return shown


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
