"""The checks themselves as fallible evidence, for a pick among drafts whose models have a
reliability history: every behaviour scored by its posterior under the one-coin Dawid-Skene
model of ``agents.pick.reliability`` (each draft right with its source's probability ``p``), with
a prompt's worked examples and the generated tests able to be wrong (``CheckErrors``).
``suspect_checks`` names the checks more likely wrong than right (``agents.pick.agreement`` leaves
them out); ``posterior_pick`` is that posterior's own pick, an ablation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from codegen.agents.pick.behaviour import (
    AgreementPick,
    BehaviourGroup,
    BehaviourTable,
    PickFrame,
    candidate_verdicts,
    splitting_inputs,
)
from codegen.agents.pick.matrix import Row, suspect_tests
from codegen.agents.pick.reliability import MAX_P, MIN_P


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
    designer is a model too). CHANGELOG.md gives how the picks move across other values."""

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


@dataclass(frozen=True)
class _Scored:
    """One behaviour group under the model: its log score, members (most reliable first), and
    the generated tests it passes."""

    log_score: float
    members: list[int]
    suite_passes: int


def _behaviours(table: BehaviourTable, frame: PickFrame, checks: Sequence[int]) -> list[list[int]]:
    """Every member in a group: same outputs on every shared input, same verdicts on
    ``checks``."""
    by_behaviour: dict[tuple[Row, tuple[int, ...]], list[int]] = {}
    for i, person in enumerate(frame.people):
        verdicts_row = tuple(frame.rows[i][t] for t in checks)
        outputs = tuple(table.classes[person][k] for k in frame.columns)
        by_behaviour.setdefault((verdicts_row, outputs), []).append(i)
    return list(by_behaviour.values())


def _score(
    found: list[int],
    frame: PickFrame,
    prior: list[float],
    examples: list[int],
    counted: list[int],
    errors: CheckErrors,
) -> _Scored:
    """The one-coin model's log score of a group: its members' log-odds summed, plus the
    likelihood of the examples and generated tests it fails."""
    members = sorted(found, key=lambda i: (-prior[i], i))
    first = members[0]
    failed_examples = sum(not frame.rows[first][t] for t in examples)
    failed_tests = sum(not frame.rows[first][t] for t in counted)
    log_score = (
        sum(_log_odds(prior[i]) for i in members)
        + errors.examples_log_likelihood(failed_examples, len(examples))
        + errors.tests_log_likelihood(failed_tests)
    )
    return _Scored(log_score, members, len(counted) - failed_tests)


def _ranked(
    scored: list[_Scored], frame: PickFrame, prior: list[float], weight: dict[int, float]
) -> list[tuple[list[int], BehaviourGroup]]:
    """The groups best first (ties: the group answering more valid inputs, then the most
    reliable member), each with its posterior."""
    top = max(g.log_score for g in scored)
    total = sum(math.exp(g.log_score - top) for g in scored)
    ordered = sorted(
        scored,
        key=lambda g: (
            -round(g.log_score, 9),
            -weight[g.members[0]],
            -prior[g.members[0]],
            g.members[0],
        ),
    )
    return [
        (
            g.members,
            BehaviourGroup(
                tuple(frame.people[i] for i in g.members),
                round(sum(weight[i] for i in g.members), 4),
                round(sum(prior[i] for i in g.members), 4),
                g.suite_passes,
                round(g.log_score, 6),
                posterior=round(math.exp(g.log_score - top) / total, 6),
            ),
        )
        for g in ordered
    ]


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
    ``agents.pick.reliability``). Every candidate, also one failing a worked example, is in a
    behaviour group (same outputs on every shared input, same verdicts on the examples and on
    the non-suspect generated tests). A group's log score is the sum of its members' log-odds
    ``log(p / (1 - p))`` (the one-coin model: the likelihood that exactly these drafts are right,
    up to a constant shared by all groups), plus ``errors.examples_log_likelihood`` of the
    examples it fails and ``errors.tests_log_likelihood`` of the generated tests it fails. The
    best score wins (ties: the group answering more valid inputs, then the most reliable
    member); the pick is its most reliable member. The crew does not pick by it: its groups'
    posteriors decide which checks ``suspect_checks`` leaves out, and ``benchmarks/selection.py``
    reports its own pick as an ablation (exact groups split right drafts that differ only
    outside the domain; CHANGELOG.md)."""
    frame = PickFrame.of(table, rows, trusted, members, inputs)
    people = frame.people
    if len(priors) != len(people):
        raise ValueError("priors != members")
    prior = [min(MAX_P, max(MIN_P, float(p))) for p in priors]
    examples = [t for t in range(frame.tests) if frame.trusted[t]]
    suspect = suspect_tests(rows, frame.trusted)
    counted = [t for t in range(frame.tests) if not frame.trusted[t] and t not in suspect]
    everyone = range(len(people))
    # Every candidate is a hypothesis here, not only those passing the most examples.
    valid = table.valid_inputs(people, frame.columns)
    weight = {i: table.value_share(people[i], valid) for i in everyone}
    scored = [
        _score(found, frame, prior, examples, counted, errors)
        for found in _behaviours(table, frame, [*examples, *counted])
    ]
    groups = _ranked(scored, frame, prior, weight)
    best_members, best = groups[0]
    outvoted = tuple(t for t in examples if not rows[best_members[0]][t])
    passed_examples = [frame.passes(i, examples) for i in everyone]
    eligible = tuple(people[i] for i in everyone if passed_examples[i] == max(passed_examples))
    why = (
        f"{len(best.members)} candidate(s) with the same outputs on {len(frame.columns)} inputs "
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
    leaders = [people[ms[0]] for ms, _ in groups[:3]]
    return AgreementPick(
        chosen=people[best_members[0]],
        group=best,
        groups=tuple(g for _, g in groups),
        rule="posterior_agreement",
        why=why,
        eligible=eligible,
        valid_inputs=valid,
        splitting=tuple(splitting_inputs(table, leaders, frame.columns, max_splitting)),
        candidates=candidate_verdicts(
            table, frame, [ms for ms, _ in groups], examples, counted, valid, weight
        ),
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
