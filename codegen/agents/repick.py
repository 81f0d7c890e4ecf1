"""One pick among several drafts, decided from what was observed of them, so the crew (in the
sandbox, ``steps._select``) and an evaluation's re-pick (from the stored selection record,
no model call and no sandbox run) decide by the same code.

``decide`` takes the behaviour table (each draft's outcome class per shared input), the
suite's pass/fail rows, which tests are worked examples, and per draft the reliability its
vote counts with (``UsedReliability``; all ``none``: equal votes). ``record`` writes the
decision into a ``Selection``; ``repick`` rebuilds the observations from a stored
``Selection`` and decides again with other reliabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from codegen.agents.agreement import agreement_pick
from codegen.agents.behaviour import AgreementPick, BehaviourTable
from codegen.agents.posterior import CHECK_ERRORS
from codegen.agents.records import (
    Selection,
    SelectionGroup,
    SplitOutput,
    SplittingInput,
    UsedReliability,
)
from codegen.agents.reliability import priors_from_history
from codegen.agents.selection import Row, pick


@dataclass(frozen=True)
class Decision:
    chosen: int
    why: str
    rule: str
    suspect: tuple[int, ...]  # test columns left out as suspect
    groups: list[SelectionGroup]
    agreed: AgreementPick | None  # output agreement's full record, when it decided


def decide(
    table: BehaviourTable,
    names: Sequence[str],
    rows: Sequence[Row],
    trusted: Sequence[bool],
    used: Sequence[UsedReliability],
) -> Decision:
    """The crew's pick: output agreement with equal votes when no draft has a reliability;
    with one (config, history, this evaluation), ``similarity_agreement`` with each draft's
    reliability as its prior and the checks its posterior shows more likely wrong left out
    first; with neither shared inputs nor a reliability, examples then agreement on the
    suite's verdicts (``selection.pick``)."""
    count = len(used)
    priors = priors_from_history([u.model for u in used], [u.value for u in used])
    if not names and not table.inputs and priors is None:
        return Decision(0, "no test ran for any draft", "examples_then_agreement", (), [], None)
    if table.inputs or priors is not None:
        # With a history (also without shared inputs): the most reliable draft among those
        # passing the most examples, not the earliest; and a worked example or generated test
        # that reliable agreeing drafts show more likely wrong than right is left out first.
        agreed = agreement_pick(
            table,
            list(rows) if names else [() for _ in range(count)],
            trusted,
            priors=priors,
            support="group" if priors is None else "similarity",
            errors=None if priors is None else CHECK_ERRORS,
        )
        groups = [
            SelectionGroup(list(g.members), g.suite_passes, g.score, g.weight, g.support)
            for g in agreed.groups
        ]
        return Decision(
            agreed.chosen, agreed.why, agreed.rule, agreed.suspect_tests, groups, agreed
        )
    chosen = pick(rows, trusted)
    groups = [SelectionGroup(list(g.members), len(g.passed), g.score) for g in chosen.groups]
    return Decision(chosen.chosen, chosen.why, chosen.rule, chosen.suspect_tests, groups, None)


def record(base: Selection, decision: Decision, names: Sequence[str]) -> Selection:
    """``base`` (the drafts' runs, inputs and reliabilities) with ``decision`` written in:
    the pick, its rule and why, the groups, each draft's verdicts, the splitting inputs."""
    agreed = decision.agreed
    verdicts = {v.candidate: v for v in agreed.candidates} if agreed else {}
    candidates = [
        replace(
            c,
            examples_passed=verdicts[c.candidate].examples_passed
            if c.candidate in verdicts
            else None,
            group=verdicts[c.candidate].group if c.candidate in verdicts else None,
            crashes=verdicts[c.candidate].crashes if c.candidate in verdicts else None,
            weight=verdicts[c.candidate].weight if c.candidate in verdicts else None,
        )
        for c in base.candidates
    ]
    return replace(
        base,
        chosen=decision.chosen,
        why=decision.why,
        rule=decision.rule,
        groups=decision.groups,
        suspect_tests=[names[t] for t in decision.suspect],
        candidates=candidates,
        splitting_inputs=[
            SplittingInput(s.input, [SplitOutput(g, out) for g, out in s.outputs])
            for s in (agreed.splitting if agreed else ())
        ],
        outvoted_examples=[names[t] for t in agreed.outvoted_examples] if agreed else [],
    )


def observations(
    selection: Selection,
) -> tuple[BehaviourTable, list[str], list[Row], list[bool]] | None:
    """The behaviour table, test names, suite rows and trusted columns a stored record was
    decided from; None when it does not hold them (a record from before tables were kept,
    or one whose rows do not match its inputs)."""
    cands = sorted(selection.candidates, key=lambda c: c.candidate)
    if not cands or [c.candidate for c in cands] != list(range(len(cands))):
        return None
    classes = [c.classes for c in cands]
    if any(row is None or len(row) != len(selection.inputs) for row in classes):
        return None
    # rows_of's order: every test name seen, sorted.
    names = sorted({n for c in cands for n in c.outcomes})
    rows = [tuple(c.outcomes.get(n, False) for n in names) for c in cands]
    trusted_names = set(selection.trusted_tests)
    trusted = [n in trusted_names for n in names]
    labels = [dict(i.outputs) for i in selection.inputs]
    table = BehaviourTable([list(row or []) for row in classes], labels)
    return table, names, rows, trusted


def repick(selection: Selection, used: Sequence[UsedReliability]) -> Selection | None:
    """The pick ``selection`` records, decided again from its own observations with the
    reliabilities ``used`` (one per draft): no model call, no sandbox run. None when the
    record does not hold its behaviour table."""
    found = observations(selection)
    if found is None or len(used) != len(selection.candidates):
        return None
    table, names, rows, trusted = found
    decision = decide(table, names, rows, trusted, used)
    return record(replace(selection, reliabilities=list(used)), decision, names)
