"""Picking a draft by execution agreement (agents.pick.matrix) on small pass/fail matrices."""

from __future__ import annotations

import pytest

from codegen.agents.pick import dual_agreement, pick
from codegen.agents.pick.matrix import groups_of, suspect_tests

T, F = True, False


def test_candidates_with_identical_outcomes_form_one_group() -> None:
    groups = groups_of([(T, F), (T, F), (F, F)])
    assert sorted(g.members for g in groups) == [(0, 1), (2,)]
    assert {g.members: g.passed for g in groups}[(0, 1)] == (0,)


def test_dual_agreement_weighs_group_size_by_tests_passed() -> None:
    # Two drafts agree on passing 2 tests (score 4); one lone draft passes all 3 (score 3).
    rows = [(T, T, F), (T, T, F), (T, T, T)]
    chosen = dual_agreement(rows)
    assert chosen.group.members == (0, 1) and chosen.group.score == 4
    assert "2 candidate(s) agree and pass 2 of 3 tests" in chosen.why
    with pytest.raises(ValueError):
        dual_agreement([])


def test_a_trusted_example_outranks_any_number_of_agreeing_drafts() -> None:
    # Test 0 is a worked example from the spec; the majority fails it.
    rows = [(F, T, T), (F, T, T), (F, T, T), (T, T, F)]
    assert dual_agreement(rows).chosen == 0
    ours = pick(rows, trusted=[T, F, F])
    assert ours.chosen == 3 and ours.rule == "examples_then_agreement"
    assert "1 of 4 pass 1/1 examples" in ours.why
    # An example nobody passes (a wrong example) filters nobody out.
    assert pick([(F, T), (F, T), (F, F)], trusted=[T, F]).group.members == (0, 1)


def test_a_test_every_agreeing_draft_fails_is_suspect_and_left_out() -> None:
    rows = [(T, F), (T, F), (T, F)]
    assert suspect_tests(rows, [F, F]) == (1,)
    chosen = pick(rows, [F, F])
    assert chosen.suspect_tests == (1,) and "1 suspect test(s) left out" in chosen.why
    # Examples are never suspect; one draft alone cannot outvote a test.
    assert suspect_tests(rows, [F, T]) == ()
    assert suspect_tests([(T, F)], [F, F]) == ()
    assert suspect_tests([(T, F), (F, F)], [F, F]) == ()
