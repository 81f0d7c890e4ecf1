"""The posterior pick (agents.agreement.posterior_pick, rule ``posterior_agreement``): with
each candidate's source reliability known, the worked examples and generated tests are
strong but fallible evidence, not a hard filter. Fixtures written for these tests."""

from __future__ import annotations

import math

import pytest

from codegen.agents.agreement import (
    BehaviourTable,
    CheckErrors,
    agreement_pick,
    posterior_pick,
)
from codegen.agents.records import Selection, SelectionGroup
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
    trusted = [True, True]
    # The rule before: an example outranks any agreement, so the one draft passing the
    # wrong example is the only eligible one and wins, with or without a history.
    assert agreement_pick(table, rows, trusted).chosen == 3
    assert agreement_pick(table, rows, trusted, priors=PRIORS, support="similarity").chosen == 3
    # The posterior: three reliable drafts agreeing on one behaviour outweigh one example in
    # a prompt that already has an example every candidate fails.
    chosen = posterior_pick(table, rows, trusted, PRIORS)
    assert chosen.rule == "posterior_agreement"
    assert chosen.chosen == 0  # the most reliable member of the agreeing group
    assert chosen.group.members == (0, 1, 2)
    assert chosen.group.posterior > 0.9
    assert chosen.outvoted_examples == (0, 1)
    assert "outvoted" in chosen.why
    # Every candidate has a group (none is filtered out), best first.
    assert [v.group for v in chosen.candidates] == [0, 0, 0, 1]
    assert chosen.eligible == (3,)  # still reported: who passes the most examples


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
    chosen = posterior_pick(table, rows, [True] * 4, priors)
    assert chosen.chosen == 2 and chosen.group.members == (2, 3)
    assert chosen.outvoted_examples == ()
    # Nor does one reliable draft outvote an example a weak draft passes.
    one = posterior_pick(table, [rows[0], rows[3]], [True] * 4, [0.95, 0.55], members=[0, 3])
    assert one.chosen == 3


def test_generated_tests_are_evidence_too_and_suspect_ones_are_left_out() -> None:
    # No worked example; two generated tests: test 0 every draft fails (suspect, left out),
    # test 1 only the weak draft passes. Three agreeing reliable drafts outweigh one test
    # (each generated test is wrong with CheckErrors.test); one fairly reliable draft alone
    # does not outweigh a test and a weak draft.
    table = table_of(*SOURCES)
    rows = [(False, False), (False, False), (False, False), (False, True)]
    chosen = posterior_pick(table, rows, [False, False], PRIORS)
    assert chosen.suspect_tests == (0,) and chosen.chosen == 0
    alone = posterior_pick(table, [rows[0], rows[3]], [False, False], [0.75, 0.58], members=[0, 3])
    assert alone.chosen == 3
    # A stricter prior on the tests (one in a hundred wrong) lets the single test win.
    strict = posterior_pick(table, rows, [False, False], PRIORS, errors=CheckErrors(test=0.01))
    assert strict.chosen == 3


def test_the_examples_likelihood() -> None:
    errors = CheckErrors(sloppy=0.05, wrong=0.5, test=0.2)
    assert errors.examples_log_likelihood(0, 0) == 0.0
    # Passing every example: the clean prompt or a sloppy one that happens to be right.
    assert errors.examples_log_likelihood(0, 2) == pytest.approx(math.log(0.95 + 0.05 * 0.25))
    # Once a prompt is known to be sloppy, each further failed example costs little.
    one = errors.examples_log_likelihood(1, 3)
    two = errors.examples_log_likelihood(2, 3)
    assert one == pytest.approx(two)
    with pytest.raises(ValueError, match="priors"):
        posterior_pick(table_of(plain), [()], None, [0.5, 0.5])


def test_the_record_keeps_the_posterior_and_the_outvoted_examples() -> None:
    selection = Selection(
        chosen=0,
        why="w",
        rule="posterior_agreement",
        groups=[SelectionGroup([0, 1], 1, -2.5, 2.0, 1.7, posterior=0.93)],
        outvoted_examples=["test_solution.py::test_spec_example_1"],
    )
    data = selection.to_dict()
    assert data["groups"][0]["posterior"] == 0.93  # type: ignore[index]
    assert Selection.from_dict(data) == selection
    # Without them the record is as before.
    assert "outvoted_examples" not in Selection(chosen=0, why="w").to_dict()
