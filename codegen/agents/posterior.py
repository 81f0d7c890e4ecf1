"""The checks themselves as fallible evidence, for a pick among drafts whose models have a
reliability history: every behaviour scored by its posterior under the one-coin Dawid-Skene
model of ``agents.reliability`` (each draft right with its source's probability ``p``), with
a prompt's worked examples and the generated tests able to be wrong (``CheckErrors``).
``suspect_checks`` names the checks more likely wrong than right (``agents.agreement`` leaves
them out); ``posterior_pick`` is that posterior's own pick, an ablation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from codegen.agents.behaviour import (
    AgreementPick,
    BehaviourGroup,
    BehaviourTable,
    CandidateVerdicts,
    splitting_inputs,
)
from codegen.agents.reliability import MAX_P, MIN_P
from codegen.agents.selection import Row, suspect_tests


@dataclass(frozen=True)
class CheckErrors:
    """How far the checks themselves can be wrong: the prior of ``posterior_pick``.

    A prompt's worked examples come from one author: all of them are right, or, with
    probability ``sloppy``, the prompt is careless and each of its examples is wrong with
    probability ``wrong``, independently (an author who gets one example wrong often gets more
    wrong; an example every candidate fails makes the others in that prompt less certain too).
    A generated test (not suspect) is wrong with probability ``test``, independently.

    Chosen before measuring, as round figures: about one prompt in twenty with a wrong example,
    an even chance for each example of such a prompt, one generated test in five wrong (the test
    designer is a model too). docs/humaneval.md gives how the picks move across other values."""

    sloppy: float = 0.05
    wrong: float = 0.5
    test: float = 0.2

    def examples_log_likelihood(self, failed: int, count: int) -> float:
        """log P(a behaviour fails ``failed`` of ``count`` examples | it is the correct one)."""
        if count == 0:
            return 0.0
        clean = (1.0 - self.sloppy) if failed == 0 else 0.0
        sloppy = self.sloppy * self.wrong**failed * (1.0 - self.wrong) ** (count - failed)
        return math.log(clean + sloppy)

    def tests_log_likelihood(self, failed: int) -> float:
        """log-odds cost of failing ``failed`` generated tests (relative to passing them)."""
        return failed * math.log(self.test / (1.0 - self.test))


CHECK_ERRORS = CheckErrors()


def _log_odds(p: float) -> float:
    p = min(MAX_P, max(MIN_P, p))
    return math.log(p / (1.0 - p))


def posterior_pick(
    table: BehaviourTable,
    rows: Sequence[Row],
    trusted: Sequence[bool] | None,
    priors: Sequence[float],
    members: Sequence[int] | None = None,
    inputs: Sequence[int] | None = None,
    errors: CheckErrors = CHECK_ERRORS,
    max_splitting: int = 5,
) -> AgreementPick:
    """The ``posterior_agreement`` pick: the most probable correct behaviour under the one-coin
    Dawid-Skene model, with the checks as fallible evidence.

    ``priors``: each member's probability of being right (its source's reliability,
    ``agents.reliability``). Every candidate, also one failing a worked example, is in a
    behaviour group (same outputs on every shared input, same verdicts on the examples and on
    the non-suspect generated tests). A group's log score is the sum of its members' log-odds
    ``log(p / (1 - p))`` (the one-coin model: the likelihood that exactly these drafts are right,
    up to a constant shared by all groups), plus ``errors.examples_log_likelihood`` of the
    examples it fails and ``errors.tests_log_likelihood`` of the generated tests it fails. The
    best score wins (ties: the group answering more valid inputs, then the most reliable
    member); the pick is its most reliable member. The crew does not pick by it: its groups'
    posteriors decide which checks ``suspect_checks`` leaves out, and ``benchmarks/selection.py``
    reports its own pick as an ablation (exact groups split right drafts that differ only
    outside the domain; docs/humaneval.md)."""
    people = list(range(len(table.classes))) if members is None else list(members)
    if not people or len(rows) != len(people):
        raise ValueError("no candidates to pick from" if not people else "rows != members")
    if len(priors) != len(people):
        raise ValueError("priors != members")
    prior = [min(MAX_P, max(MIN_P, float(p))) for p in priors]
    n_tests = len(rows[0]) if rows else 0
    trusted = list(trusted) if trusted is not None else [False] * n_tests
    columns = tuple(range(table.inputs)) if inputs is None else tuple(inputs)
    examples = [t for t in range(n_tests) if trusted[t]]
    suspect = suspect_tests(rows, trusted)
    counted = [t for t in range(n_tests) if not trusted[t] and t not in suspect]
    everyone = range(len(people))
    passed_examples = [sum(rows[i][t] for t in examples) for i in everyone]
    best_examples = max(passed_examples)
    classes = table.classes
    # Every candidate is a hypothesis here, not only those passing the most examples.
    valid = table.valid_inputs([people[i] for i in everyone], columns)
    weight = {i: table.value_share(people[i], valid) for i in everyone}
    by_behaviour: dict[tuple[Row, tuple[int, ...]], list[int]] = {}
    for i in everyone:
        verdicts_row = tuple(rows[i][t] for t in (*examples, *counted))
        by_behaviour.setdefault(
            (verdicts_row, tuple(classes[people[i]][k] for k in columns)), []
        ).append(i)
    scored: list[tuple[float, list[int], int, int]] = []
    for found in by_behaviour.values():
        group_members = sorted(found, key=lambda i: (-prior[i], i))
        first = group_members[0]
        failed_examples = sum(not rows[first][t] for t in examples)
        failed_tests = sum(not rows[first][t] for t in counted)
        log_score = (
            sum(_log_odds(prior[i]) for i in group_members)
            + errors.examples_log_likelihood(failed_examples, len(examples))
            + errors.tests_log_likelihood(failed_tests)
        )
        scored.append((log_score, group_members, failed_examples, len(counted) - failed_tests))
    top = max(s for s, *_ in scored)
    total = sum(math.exp(s - top) for s, *_ in scored)
    scored.sort(key=lambda g: (-round(g[0], 9), -weight[g[1][0]], -prior[g[1][0]], g[1][0]))
    groups = [
        (
            ms,
            BehaviourGroup(
                tuple(people[i] for i in ms),
                round(sum(weight[i] for i in ms), 4),
                round(sum(prior[i] for i in ms), 4),
                passes,
                round(s, 6),
                posterior=round(math.exp(s - top) / total, 6),
            ),
        )
        for s, ms, _, passes in scored
    ]
    best_members, best = groups[0]
    group_of = {i: gi for gi, (ms, _) in enumerate(groups) for i in ms}
    verdicts = tuple(
        CandidateVerdicts(
            candidate=people[i],
            group=group_of[i],
            examples_passed=passed_examples[i],
            suite_passed=sum(rows[i][t] for t in counted),
            crashes=table.crashes(people[i], valid),
            weight=round(weight[i], 4),
        )
        for i in everyone
    )
    outvoted = tuple(t for t in examples if not rows[best_members[0]][t])
    eligible = tuple(people[i] for i in everyone if passed_examples[i] == best_examples)
    why = (
        f"{len(best.members)} candidate(s) with the same outputs on {len(columns)} inputs "
        f"({len(valid)} valid), log-odds {sum(_log_odds(prior[i]) for i in best_members):.2f}, "
        f"pass {len(examples) - len(outvoted)}/{len(examples)} examples and "
        f"{best.suite_passes}/{len(counted)} generated tests: posterior {best.posterior:.2f} "
        f"of being the correct behaviour, against {len(groups) - 1} other behaviour(s)"
        + (
            f"; {len(outvoted)} worked example(s) outvoted by the agreeing drafts"
            if outvoted
            else ""
        )
        + (f"; {len(suspect)} suspect test(s) left out" if suspect else "")
    )
    return AgreementPick(
        chosen=people[best_members[0]],
        group=best,
        groups=tuple(g for _, g in groups),
        rule="posterior_agreement",
        why=why,
        eligible=eligible,
        valid_inputs=valid,
        splitting=tuple(
            splitting_inputs(table, [people[ms[0]] for ms, _ in groups[:3]], columns, max_splitting)
        ),
        candidates=verdicts,
        suspect_tests=suspect,
        outvoted_examples=outvoted,
    )


def suspect_checks(
    table: BehaviourTable,
    rows: Sequence[Row],
    trusted: Sequence[bool] | None,
    priors: Sequence[float],
    members: Sequence[int] | None = None,
    inputs: Sequence[int] | None = None,
    errors: CheckErrors = CHECK_ERRORS,
) -> tuple[int, ...]:
    """The checks (test columns: worked examples and generated tests) more likely wrong than
    right: under ``posterior_pick``'s model, the behaviours failing the check hold more than
    half of the posterior (given that some candidate's behaviour is the correct one). A check
    no candidate passes is never among them: it filters nothing, and for a generated test
    ``selection.suspect_tests`` decides as before."""
    if not rows or not rows[0]:
        return ()
    model = posterior_pick(table, rows, trusted, priors, members, inputs, errors)
    representative: dict[int, int] = {}
    for index, verdict in enumerate(model.candidates):
        representative.setdefault(verdict.group, index)

    def wrong(t: int) -> float:
        return sum(model.groups[g].posterior for g, i in representative.items() if not rows[i][t])

    return tuple(t for t in range(len(rows[0])) if any(row[t] for row in rows) and wrong(t) > 0.5)
