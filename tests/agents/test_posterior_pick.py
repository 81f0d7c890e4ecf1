"""Worked examples and generated tests as strong but fallible evidence when the candidates'
sources have a reliability history (agents.pick.posterior: ``suspect_checks``, ``agreement_pick(...,
errors=)``, and the posterior's own pick ``posterior_pick``). Fixtures written for these tests."""

from __future__ import annotations

import math

import pytest

from codegen.agents.pick import (
    CHECK_ERRORS,
    BehaviourTable,
    Selection,
    agreement_pick,
    posterior_pick,
)
from codegen.agents.pick.posterior import CheckErrors, suspect_checks
from codegen.sandbox.calls import CallOutcome


def by_last_digit(xs: list[int]) -> list[int]:
    """The spec: sort by the last digit, ties by value."""
    return sorted(xs, key=lambda x: (x % 10, x))


def plain(xs: list[int]) -> list[int]:
    """A misreading: plain ascending order."""
    return sorted(xs)


def by_first_digit(xs: list[int]) -> list[int]:
    """Another misreading: sort by the first digit."""
    return sorted(xs, key=lambda x: (int(str(x)[0]), x))


INPUTS = [[21, 12, 3], [5, 15], [40, 31, 22, 13], [9, 19, 29, 8], [], [7], [30, 3, 21]]


def table_of(*functions) -> BehaviourTable:
    return BehaviourTable.of([[CallOutcome("ok", f(list(i))) for i in INPUTS] for f in functions])


def example_rows(functions, examples) -> list[tuple[bool, ...]]:
    return [tuple(f(list(args)) == expected for args, expected in examples) for f in functions]


# The prompt's own worked examples are wrong: the first is plain ascending order (the spec
# says by last digit), the second is wrong for every reading (a value appears from nowhere).
WRONG_EXAMPLES = [([21, 12, 3], [3, 12, 21]), ([5, 15], [15, 5, 0])]
# Three reliable sources read the spec right and agree on every input; the weakest misreads
# it as plain sorting, which happens to pass the first (wrong) example.
SOURCES = [by_last_digit, by_last_digit, by_last_digit, plain]
PRIORS = [0.88, 0.84, 0.74, 0.58]


def test_a_wrong_worked_example_is_outvoted_by_reliable_agreeing_drafts() -> None:
    table = table_of(*SOURCES)
    rows = example_rows(SOURCES, WRONG_EXAMPLES)
    assert rows == [(False, False)] * 3 + [(True, False)]
    trusted = [True, True]
    # Before: an example outranks any agreement, so the one draft passing the wrong example
    # is the only eligible one and wins, with equal votes or with the history.
    assert agreement_pick(table, rows, trusted).chosen == 3
    before = agreement_pick(table, rows, trusted, priors=PRIORS, support="similarity")
    assert before.chosen == 3 and before.eligible == (3,)
    # With the checks as fallible evidence: three reliable drafts agreeing on one behaviour
    # outweigh the example, in a prompt that already has an example every candidate fails
    # (that one filters nothing and stays as it is).
    assert suspect_checks(table, rows, trusted, PRIORS) == (0,)
    now = agreement_pick(
        table, rows, trusted, priors=PRIORS, support="similarity", errors=CHECK_ERRORS
    )
    assert now.rule == "similarity_agreement"
    assert now.chosen == 0  # the most reliable member of the agreeing group
    assert now.group.members == (0, 1, 2)
    assert now.outvoted_examples == (0,) and now.eligible == (0, 1, 2, 3)
    assert "1 worked example(s) outvoted" in now.why
    # The posterior's own pick agrees here.
    model = posterior_pick(table, rows, trusted, PRIORS)
    assert model.rule == "posterior_agreement" and model.group.members == (0, 1, 2)
    assert model.group.posterior > 0.9
    assert [v.group for v in model.candidates] == [0, 0, 0, 1]  # nobody filtered out


def test_a_right_worked_example_still_beats_two_reliable_drafts_that_fail_it() -> None:
    # The examples are right. The two most reliable drafts agree on a misreading (first
    # digit) that fails one of four examples; two weaker drafts agree on the spec and pass
    # them all. A clean prompt is the likely one: the example holds.
    examples = [([7], [7]), ([1, 22], [1, 22]), ([3, 41], [41, 3]), ([11, 2], [11, 2])]
    sources = [by_first_digit, by_first_digit, by_last_digit, by_last_digit]
    priors = [0.88, 0.84, 0.74, 0.66]
    table = table_of(*sources)
    rows = example_rows(sources, examples)
    assert rows[0] == (True, True, False, True) and all(rows[2])
    assert suspect_checks(table, rows, [True] * 4, priors) == ()
    chosen = agreement_pick(
        table, rows, [True] * 4, priors=priors, support="similarity", errors=CHECK_ERRORS
    )
    assert chosen.chosen == 2 and chosen.outvoted_examples == ()
    # Nor does one very reliable draft outvote an example a weak draft passes.
    one = agreement_pick(
        table,
        [rows[0], rows[3]],
        [True] * 4,
        members=[0, 3],
        priors=[0.95, 0.55],
        support="similarity",
        errors=CHECK_ERRORS,
    )
    assert one.chosen == 3 and one.outvoted_examples == ()


def test_a_generated_test_reliable_drafts_agree_against_is_suspect() -> None:
    # No worked example; two generated tests: test 0 every draft fails (suspect as before),
    # test 1 only the weak draft passes. Three agreeing reliable drafts outweigh it (each
    # generated test is wrong with CheckErrors.test): suspect too, and left out of the score.
    table = table_of(*SOURCES)
    rows = [(False, False), (False, False), (False, False), (False, True)]
    trusted = [False, False]
    assert agreement_pick(table, rows, trusted, priors=PRIORS, support="similarity").chosen == 3
    now = agreement_pick(
        table, rows, trusted, priors=PRIORS, support="similarity", errors=CHECK_ERRORS
    )
    assert now.suspect_tests == (0, 1) and now.chosen == 0
    assert suspect_checks(table, rows, trusted, PRIORS) == (1,)  # 0: the rule before
    # One fairly reliable draft alone does not outweigh a test and a weak draft.
    assert suspect_checks(table, [rows[0], rows[3]], trusted, [0.75, 0.58], [0, 3]) == ()
    # A stricter prior on the tests (one in a hundred wrong) keeps the test.
    assert suspect_checks(table, rows, trusted, PRIORS, errors=CheckErrors(test=0.01)) == ()


def test_without_a_history_nothing_changes() -> None:
    table = table_of(*SOURCES)
    rows = example_rows(SOURCES, WRONG_EXAMPLES)
    assert agreement_pick(table, rows, [True, True]).outvoted_examples == ()
    with pytest.raises(ValueError, match="priors"):
        agreement_pick(table, rows, [True, True], errors=CHECK_ERRORS)


def test_the_examples_likelihood() -> None:
    errors = CheckErrors(sloppy=0.05, wrong=0.5, test=0.2)
    assert errors.examples_log_likelihood(0, 0) == 0.0
    # Passing every example: the clean prompt, or a sloppy one that happens to be right.
    assert errors.examples_log_likelihood(0, 2) == pytest.approx(math.log(0.95 + 0.05 * 0.25))
    # Once a prompt is known to be sloppy, each further failed example costs nothing more.
    assert errors.examples_log_likelihood(1, 3) == pytest.approx(
        errors.examples_log_likelihood(2, 3)
    )
    assert errors.tests_log_likelihood(2) == pytest.approx(2 * math.log(0.25))


def test_the_record_keeps_the_outvoted_examples() -> None:
    selection = Selection(
        chosen=0, why="w", outvoted_examples=["test_solution.py::test_spec_example_1"]
    )
    data = selection.to_dict()
    assert data["outvoted_examples"] == ["test_solution.py::test_spec_example_1"]
    assert Selection.from_dict(data) == selection
    # Without any, the record is as before.
    assert "outvoted_examples" not in Selection(chosen=0, why="w").to_dict()
