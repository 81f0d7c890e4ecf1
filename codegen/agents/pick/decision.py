"""One pick among several drafts, decided from what was observed of them, so the crew (in the
sandbox, ``draft_pick.select_draft``) and an evaluation's re-pick (from the stored selection record,
no model call and no sandbox run) decide by the same code.

``decide`` applies the registered pick rule (``rules``; by default ``dominance``, which is
``agreement_rule`` unless one model clearly dominates) to the
behaviour table (each draft's outcome class per shared input), the
suite's pass/fail rows, which tests are worked examples, and per draft the reliability its
vote counts with (``UsedReliability``; all ``none``: equal votes). ``record`` writes the
decision into a ``Selection``; ``repick`` rebuilds the observations from a stored
``Selection`` and decides again with other reliabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from codegen.agents.pick import rules
from codegen.agents.pick.agreement import agreement_pick
from codegen.agents.pick.behaviour import BehaviourTable
from codegen.agents.pick.matrix import Row, pick
from codegen.agents.pick.posterior import CHECK_ERRORS
from codegen.agents.pick.records import (
    Selection,
    SelectionGroup,
    SplitOutput,
    SplittingInput,
    UsedReliability,
)
from codegen.agents.pick.reliability import priors_from_history, vote_weights
from codegen.agents.pick.rules import Decision, Observations, register_rule
from codegen.agents.pick.typical import most_typical


def decide(
    table: BehaviourTable,
    names: Sequence[str],
    rows: Sequence[Row],
    trusted: Sequence[bool],
    used: Sequence[UsedReliability],
    typical: Sequence[float] | None = None,
    origins: Sequence[str] | None = None,
) -> Decision:
    """The pick by the registered rule ``rules.DEFAULT_RULE`` names (``dominance``:
    ``agreement_rule`` unless one model clearly dominates, ``agents.pick.dominance``)."""
    seen = Observations(table, names, rows, trusted, used, typical, origins)
    return rules.rule_named(rules.DEFAULT_RULE)(seen)


def agreement_rule(seen: Observations) -> Decision:
    """The crew's pick: output agreement with equal votes when no draft has a reliability;
    with one (config, history, this evaluation), ``similarity_agreement`` with each draft's
    reliability as its prior and the checks its posterior shows more likely wrong left out
    first; with neither shared inputs nor a reliability, examples then agreement on the
    suite's verdicts (``selection.pick``). Inside the winning group, with ``typical`` (per
    draft, ``agents.pick.typical``), the most reliable member, then the most typical."""
    table, names, rows, trusted = seen.table, seen.names, seen.rows, seen.trusted
    used, typical = seen.used, seen.typical
    count = len(used)
    priors = priors_from_history([u.model for u in used], vote_weights(used))
    if not names and not table.inputs and priors is None:
        if typical is not None and count > 1:
            chosen = most_typical(range(count), typical)
            return Decision(
                chosen,
                f"no test ran for any draft; {_typical_note(chosen, count)}",
                "examples_then_agreement",
                (),
                [],
                None,
            )
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
        index, why = _within_group(agreed.chosen, agreed.group.members, agreed.why, typical, priors)
        return Decision(index, why, agreed.rule, agreed.suspect_tests, groups, agreed)
    chosen = pick(rows, trusted)
    groups = [SelectionGroup(list(g.members), len(g.passed), g.score) for g in chosen.groups]
    index, why = _within_group(chosen.chosen, chosen.group.members, chosen.why, typical, None)
    return Decision(index, why, chosen.rule, chosen.suspect_tests, groups, None)


register_rule("agreement", agreement_rule)


def _within_group(
    chosen: int,
    members: Sequence[int],
    why: str,
    typical: Sequence[float] | None,
    priors: Sequence[float] | None,
) -> tuple[int, str]:
    """The winning group's member to pick: the rule's own (most reliable, else earliest)
    unless ``typical`` says another member of equal reliability is more typical."""
    if typical is None or len(members) < 2:
        return chosen, why
    best = most_typical(members, typical, priors)
    return best, f"{why}; {_typical_note(best, len(members))}"


def _typical_note(chosen: int, among: int) -> str:
    return (
        f"draft {chosen} the most typical of the {among} equal ones "
        "(its code most like the other drafts')"
    )


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


def typicality_of(selection: Selection) -> list[float] | None:
    """Per draft, the typicality a stored record holds; None for a record from before it
    was kept (its pick then falls to the rule's own order)."""
    found = [c.typicality for c in sorted(selection.candidates, key=lambda c: c.candidate)]
    return None if any(t is None for t in found) else [t for t in found if t is not None]


def repick(selection: Selection, used: Sequence[UsedReliability]) -> Selection | None:
    """The pick ``selection`` records, decided again from its own observations with the
    reliabilities ``used`` (one per draft): no model call, no sandbox run. None when the
    record does not hold its behaviour table."""
    found = observations(selection)
    if found is None or len(used) != len(selection.candidates):
        return None
    table, names, rows, trusted = found
    origins = [i.origin for i in selection.inputs]
    decision = decide(table, names, rows, trusted, used, typicality_of(selection), origins)
    return record(replace(selection, reliabilities=list(used)), decision, names)
