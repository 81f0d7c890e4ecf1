"""The reviewer's grade, read leniently from replies as real models write them; no readable
grade is "no grade", never a default number."""

from __future__ import annotations

import pytest

from codegen.agents import prompts
from codegen.agents.report import parse_grade
from codegen.agents.report.grade import describe_grade, mean_grade
from codegen.agents.roles import parse_verdict


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("APPROVED\nClean.\nGRADE: 8/10", 8),
        ("APPROVED\n**Grade:** 9", 9),
        ("REJECTED\n- off by one\n\nQuality grade (1-10): 4", 4),
        ("APPROVED. I'd give it a 7 out of 10.", 7),
        ("APPROVED\n```\nGRADE: 6/10\n```", 6),
        ("APPROVED\nOverall: 9/10.\nThanks", 9),
        ("APPROVED\nGrade \u2014 7.5 / 10", 7.5),
        ("<think>maybe grade 3/10</think>\nAPPROVED\nGRADE: 8/10", 8),
        ("APPROVED\nscore: 2\nGRADE: 10/10", 10),  # the last label wins
    ],
)
def test_a_grade_is_read_from_prose_fences_and_after_reasoning(reply: str, grade: float) -> None:
    assert parse_grade(reply) == grade


@pytest.mark.parametrize(
    "reply",
    [
        "APPROVED\nLooks good.",
        "APPROVED\nGRADE: N/10",  # the template echoed, no number
        "APPROVED\nScore: 85/100",  # another scale
        "APPROVED\nGRADE: 11/10",
        "APPROVED\nGRADE: 0",
        "<think>GRADE: 9/10</think>\nAPPROVED",  # only while reasoning: not the answer
        "APPROVED\nIt handles 3/10 cases of the input.",  # a fraction in prose
        "",
    ],
)
def test_no_readable_grade_is_no_grade(reply: str) -> None:
    assert parse_grade(reply) is None


def test_the_grade_is_labelled_as_the_reviewers_opinion_and_averaged_over_grades_given() -> None:
    assert describe_grade(8.0) == "8/10 (the reviewer model's opinion)"
    assert describe_grade(None).startswith("no grade")
    assert describe_grade(None, reviewed=False) == "no grade (not reviewed by the agent)"
    assert mean_grade([8.0, None, 5.0]) == 6.5
    assert mean_grade([None, None]) is None


def test_the_reviewer_prompt_holds_the_rubric_and_the_grade_line() -> None:
    for part in ("correctness", "clarity", "safety", "fit to the spec", "GRADE: N/10"):
        assert part in prompts.REVIEWER_SYSTEM


def test_a_verdict_after_reasoning_is_read_after_it() -> None:
    verdict = parse_verdict("<think>APPROVED? no, wait</think>\nAPPROVED\nGRADE: 8/10")
    assert verdict.approved and verdict.text.startswith("APPROVED")
    assert not parse_verdict("<think>fine</think>REJECTED\n- x").approved
