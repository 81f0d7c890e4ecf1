"""The reviewer's quality grade: a number from 1 to 10 against the rubric in its prompt
(``prompts.REVIEWER_SYSTEM``), read leniently from the reply as real models write it.

The grade is the reviewer model's opinion, not a measurement: it is shown beside the test
results and averaged over an evaluation, never used to decide a status. A reply with no
readable grade has none (``None``, shown as "no grade"), never a default number.

What is read, after ``<think>`` reasoning is dropped (a grade given only while reasoning is
not the answer): the last ``grade``/``score``/``rating`` label followed by a number
(``GRADE: 8/10``, ``**Grade:** 8``, ``Quality grade (1-10): 7``, ``score of 9 out of 10``),
else the last bare ``N/10`` or ``N out of 10`` that ends its line. A number outside 1..10,
or over another denominator (``85/100``), is no grade.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen.agents.replies import strip_reasoning

GRADE_MIN, GRADE_MAX = 1.0, 10.0
# How a grade is labelled wherever it is shown: whose opinion it is.
GRADE_NOTE = "the reviewer model's opinion against the rubric in its prompt, not a measurement"

_NUMBER = r"(\d{1,3}(?:\.\d+)?)"
_OVER = r"(?:\s*(?:/|out\s+of)\s*(\d{1,3})\b)?"
# A label, an optional parenthesised scale ("(1-10)"), then punctuation, Markdown marks and a
# few filler words ("I'd grade it a 7") before the number; nothing else may stand between.
_BETWEEN = r"(?:[\s:=*_`>~\-\u2013\u2014]+|(?:is|of|a|an|it|this|i|would|give|be|my)\b)*"
_LABELLED = re.compile(
    r"\b(?:grade|score|rating)\b(?:\s*\([^)\n]{0,20}\))?" + _BETWEEN + _NUMBER + _OVER,
    re.I,
)
# A bare grade ends its sentence or line ("7/10.", "8 out of 10"); "3/10 cases" is no grade.
_BARE = re.compile(
    r"(?<![\d.])" + _NUMBER + r"\s*(?:/|out\s+of)\s*(\d{1,3})\b(?=[\s.!)*_`]*(?:$|\n))",
    re.I,
)


def _valid(number: str, over: str | None) -> float | None:
    if over is not None and int(over) != 10:
        return None
    value = float(number)
    return value if GRADE_MIN <= value <= GRADE_MAX else None


def parse_grade(reply: str) -> float | None:
    """The reviewer's grade in ``reply``, or None when it gives no readable one."""
    text = strip_reasoning(reply or "")
    labelled = list(_LABELLED.finditer(text))
    if labelled:
        last = labelled[-1]
        return _valid(last.group(1), last.group(2))
    bare = list(_BARE.finditer(text))
    if bare:
        return _valid(bare[-1].group(1), bare[-1].group(2))
    return None


def describe_grade(grade: float | None, reviewed: bool = True) -> str:
    """One phrase for the CLI and the UI: ``8/10 (the reviewer model's opinion)``."""
    if not reviewed:
        return "no grade (not reviewed by the agent)"
    if grade is None:
        return "no grade (the reviewer's reply gave none)"
    return f"{format_grade(grade)}/10 (the reviewer model's opinion)"


def format_grade(grade: float) -> str:
    return f"{grade:g}"


def mean_grade(grades: list[float | None]) -> float | None:
    """The mean of the grades given (replies without one are left out); None: none given."""
    given = [g for g in grades if g is not None]
    return round(sum(given) / len(given), 2) if given else None


@dataclass(frozen=True)
class GradeSummary:
    """The reviewer's grades over an evaluation's samples: the mean of those it gave (the
    reviewer model's opinion, 1-10), how many samples were graded, of how many."""

    mean: float | None
    graded: int
    samples: int
    note: str = GRADE_NOTE

    @classmethod
    def of(cls, grades: list[float | None]) -> GradeSummary:
        return cls(mean_grade(grades), sum(g is not None for g in grades), len(grades))

    def describe(self) -> str:
        if self.mean is None:
            return f"reviewer grade: no grade in {self.samples} samples"
        return (
            f"reviewer grade (the reviewer model's opinion): mean {self.mean:g}/10 over "
            f"{self.graded} of {self.samples} samples graded"
        )
