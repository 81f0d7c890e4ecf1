"""Picking one draft out of several by executing them against generated tests.

Input: a pass/fail matrix, one row per candidate and one column per test, and which tests are
trusted (taken from the spec's worked examples rather than written by a model). Candidates
with identical rows form a group: they behave the same on everything we can observe.

* ``dual_agreement`` is CodeT's rule (Chen et al. 2022, arXiv 2207.10397): a group's score is
  (candidates in it) x (tests its members pass); the best group wins.
* ``pick`` is the crew's rule: the same consensus score, but candidates that fail a trusted
  example cannot win while any candidate passes them all (an example in the spec outranks
  any number of agreeing drafts), and suspect tests are left out of the score.

A *suspect* test is a generated test that every candidate fails while at least two
candidates agree on every other test: when independent drafts agree with each other and all
disagree with one test, the test is more likely wrong than all the drafts. Suspect tests are
reported and kept out of the pick and of the programmer's feedback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

Row = tuple[bool, ...]


@dataclass(frozen=True)
class Group:
    """Candidates with identical per-test outcomes."""

    members: tuple[int, ...]
    passed: tuple[int, ...]  # indices of the tests they pass
    score: float = 0.0


@dataclass(frozen=True)
class Pick:
    chosen: int  # the candidate picked (the group's first member)
    group: Group
    groups: tuple[Group, ...]
    rule: str
    why: str
    suspect_tests: tuple[int, ...] = field(default=())


def groups_of(rows: Sequence[Row]) -> list[Group]:
    by_row: dict[Row, list[int]] = {}
    for index, row in enumerate(rows):
        by_row.setdefault(tuple(row), []).append(index)
    return [
        Group(tuple(members), tuple(i for i, ok in enumerate(row) if ok))
        for row, members in by_row.items()
    ]


def _best(groups: list[Group], rule: str, why: str, suspect: tuple[int, ...] = ()) -> Pick:
    # Ties go to the larger group, then to the earliest draft (a stable, explainable order).
    best = max(groups, key=lambda g: (g.score, len(g.members), -g.members[0]))
    ranked = tuple(sorted(groups, key=lambda g: (-g.score, -len(g.members), g.members[0])))
    return Pick(best.members[0], best, ranked, rule, why, suspect)


def dual_agreement(rows: Sequence[Row], tests: Sequence[int] | None = None) -> Pick:
    """CodeT: score = |group| x |tests the group passes| (over ``tests``, default all)."""
    if not rows:
        raise ValueError("no candidates to pick from")
    counted = set(range(len(rows[0]))) if tests is None else set(tests)
    groups = [
        Group(g.members, g.passed, float(len(g.members) * len(counted.intersection(g.passed))))
        for g in groups_of(rows)
    ]
    best = max(groups, key=lambda g: (g.score, len(g.members), -g.members[0]))
    why = (
        f"{len(best.members)} candidate(s) agree and pass "
        f"{len(counted.intersection(best.passed))} of {len(counted)} tests"
    )
    return _best(groups, "dual_agreement", why)


def suspect_tests(rows: Sequence[Row], trusted: Sequence[bool]) -> tuple[int, ...]:
    """Generated tests every candidate fails while two or more candidates agree on the rest."""
    if len(rows) < 2:
        return ()
    n_tests = len(rows[0])
    failed_by_all = [
        t for t in range(n_tests) if not trusted[t] and not any(row[t] for row in rows)
    ]
    if not failed_by_all:
        return ()
    largest = max(len(g.members) for g in groups_of(rows))
    return tuple(failed_by_all) if largest >= 2 else ()


def pick(rows: Sequence[Row], trusted: Sequence[bool] | None = None) -> Pick:
    """The crew's pick: trusted examples first, then consensus over the non-suspect tests."""
    if not rows:
        raise ValueError("no candidates to pick from")
    n_tests = len(rows[0])
    trusted = list(trusted) if trusted is not None else [False] * n_tests
    examples = [t for t in range(n_tests) if trusted[t]]
    suspect = suspect_tests(rows, trusted)
    counted = [t for t in range(n_tests) if t not in suspect]
    eligible = list(range(len(rows)))
    note = ""
    if examples:
        # Keep the candidates passing the most examples (all of them, when any does).
        best_examples = max(sum(rows[c][t] for t in examples) for c in eligible)
        eligible = [c for c in eligible if sum(rows[c][t] for t in examples) == best_examples]
        note = f"{len(eligible)} of {len(rows)} pass {best_examples}/{len(examples)} examples; "
    sub = dual_agreement([rows[c] for c in eligible], counted)
    groups = tuple(
        Group(tuple(eligible[m] for m in g.members), g.passed, g.score) for g in sub.groups
    )
    return Pick(
        chosen=eligible[sub.chosen],
        group=Group(
            tuple(eligible[m] for m in sub.group.members), sub.group.passed, sub.group.score
        ),
        groups=groups,
        rule="examples_then_agreement",
        why=note + sub.why + (f"; {len(suspect)} suspect test(s) left out" if suspect else ""),
        suspect_tests=suspect,
    )
