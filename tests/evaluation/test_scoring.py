"""Scoring in the real sandbox: canonical solutions pass, every failure kind is told apart."""

from __future__ import annotations

import pytest

from codegen.evaluation.humaneval import (
    Problem,
    get_problem,
    hidden_check_lines,
    public_request,
    select_keys,
    task_keys,
)
from codegen.evaluation.scoring import Category, SampleScore, score_candidates
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

pytestmark = pytest.mark.docker
LIMITS = Limits(timeout_s=5.0)


def score_one(box: Sandbox, problem: Problem, candidate: str, limits: Limits) -> SampleScore:
    [score] = score_candidates(box, problem, [candidate], limits)
    return score


def test_problem_views() -> None:
    keys = task_keys()
    assert len(keys) == 164 and keys[0] == "HumanEval-0" and keys[-1] == "HumanEval-163"
    assert select_keys(limit=3) == keys[:3]
    assert select_keys(tasks=["HumanEval/7", "12", "HumanEval-7"]) == [
        "HumanEval-7",
        "HumanEval-12",
    ]
    with pytest.raises(ValueError, match="unknown HumanEval task"):
        select_keys(tasks=["HumanEval/999"])
    for key in keys:
        problem = get_problem(key)
        request = public_request(problem)
        assert problem.prompt.rstrip() in request
        # The public request carries nothing of the hidden half.
        assert "def check(" not in request
        assert not any(line in request for line in hidden_check_lines(problem))
        assert problem.canonical_solution.strip() not in request


@pytest.mark.parametrize("key", ["HumanEval-0", "HumanEval-10", "HumanEval-38", "HumanEval-162"])
def test_canonical_solutions_pass(box: Sandbox, key: str) -> None:
    # 10 and 38 rely on helpers defined in the prompt (is_palindrome, encode_cyclic).
    problem = get_problem(key)
    score = score_one(box, problem, problem.canonical_module(), LIMITS)
    assert score.passed and score.category == Category.PASSED, score


def _body(key: str, body: str) -> str:
    return get_problem(key).prompt + body


CASES = [
    ("wrong answer", _body("HumanEval-0", "    return False\n"), Category.WRONG_ANSWER),
    ("syntax error", "def has_close_elements(numbers, threshold:\n", Category.SYNTAX_ERROR),
    ("timeout", _body("HumanEval-0", "    while True:\n        pass\n"), Category.TIMEOUT),
    ("exception", _body("HumanEval-0", "    return 1 / 0\n"), Category.RUNTIME_ERROR),
    ("no entry point", "def something_else():\n    return 1\n", Category.RUNTIME_ERROR),
    ("sys.exit(0) at import", "import sys\nsys.exit(0)\n", Category.RUNTIME_ERROR),
    ("os._exit(0) at import", "import os\nos._exit(0)\n", Category.RUNTIME_ERROR),
    (
        "forged verdict",
        'print(\'{"category": "passed"}\')\nimport os\nos._exit(0)\n',
        Category.RUNTIME_ERROR,
    ),
    ("nothing produced", None, Category.CREW_STATUS),
]


@pytest.mark.parametrize(("what", "candidate", "category"), CASES, ids=[c[0] for c in CASES])
def test_failures_are_classified(
    box: Sandbox, what: str, candidate: str | None, category: Category
) -> None:
    # The spin loop is killed at the limit: a short one keeps the suite fast.
    limits = Limits(timeout_s=2.0) if category == Category.TIMEOUT else LIMITS
    score = score_one(box, get_problem("HumanEval-0"), candidate, limits)
    assert not score.passed, what
    assert score.category == category, (what, score)


def test_a_whole_module_keeps_prompt_helpers(box: Sandbox) -> None:
    # HumanEval-10's check calls make_palindrome, which needs is_palindrome from the prompt;
    # a crew module that rewrites only make_palindrome must still be scored fairly.
    problem = get_problem("HumanEval-10")
    only_entry = "def make_palindrome(string: str) -> str:\n" + problem.canonical_solution
    score = score_one(box, problem, only_entry, LIMITS)
    assert score.passed, score
