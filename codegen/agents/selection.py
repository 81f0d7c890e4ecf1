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

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from codegen.agents.replies import parse_python
from codegen.agents.spec import Spec
from codegen.sandbox.types import TestReport

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


# -- the crew's side: spec examples as tests, reports as rows, suspect tests dropped ----------
EXAMPLE_PREFIX = "test_spec_example_"


def spec_example_tests(spec: Spec) -> str:
    """pytest functions for the spec's worked examples (the trusted tests), or "".

    The setup statements run, then the call and the expected value are evaluated, inside the
    test, in the sandbox, in the namespace of ``solution``; an example that is not Python
    (statements, then an expression) is skipped.
    """
    functions: list[str] = []
    for index, example in enumerate(spec.examples):
        call, expected = example.call, example.expected
        setup = "\n".join(example.setup)
        try:
            parse_python(setup)
            parse_python(call, mode="eval")
            parse_python(expected, mode="eval")
        except SyntaxError:
            continue
        run_setup = f"    exec({setup!r}, namespace)\n" if setup else ""
        functions.append(
            f"def {EXAMPLE_PREFIX}{index}():\n"
            "    import solution\n\n"
            "    namespace = dict(vars(solution))\n"
            f"{run_setup}"
            f"    assert eval({call!r}, namespace) == eval({expected!r}, namespace)\n"
        )
    return "\n\n".join(functions)


def with_examples(tests: str, examples: str) -> str:
    return tests if not examples else tests.rstrip() + "\n\n\n" + examples


def test_function(name: str) -> str:
    """``test_solution.py::test_x[2]`` -> ``test_x``."""
    return name.rsplit("::", 1)[-1].split("[", 1)[0]


def rows_of(reports: Sequence[TestReport]) -> tuple[list[str], list[Row]]:
    """Every test name seen, and each candidate's pass/fail row over them (a draft whose
    module did not import fails them all)."""
    names = sorted({t.name for r in reports for t in r.tests})
    rows = []
    for report in reports:
        outcome = {t.name: t.outcome == "passed" for t in report.tests}
        rows.append(tuple(outcome.get(n, False) for n in names))
    return names, rows


def without_tests(tests: str, names: Sequence[str], every_name: Sequence[str]) -> str:
    """The test module minus the test functions named (pytest node names); a parametrized
    function goes only when all its cases (among ``every_name``) are named."""
    named = set(names)
    doomed = {
        f
        for f in {test_function(n) for n in named}
        if all(n in named for n in every_name if test_function(n) == f)
    }
    try:
        tree = parse_python(tests)
    except SyntaxError:
        return tests
    assert isinstance(tree, ast.Module)
    lines = tests.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in doomed:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            drop.update(range(start, node.end_lineno or node.lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)
