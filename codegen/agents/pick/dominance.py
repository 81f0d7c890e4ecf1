"""A pick that does not fall below the clearly most reliable model for no reason.

Agreement lets several weaker models that share a mistake outvote a stronger one (the
"popularity trap"). When one model's reliability estimate stands clearly above every other's
(``dominant_model``: its interval's low end above every other model's high end; estimates
with intervals come from an evaluation's method-level estimate,
``agents.pick.method_evidence``), its draft stands unless execution shows it wrong where
another draft is right (``shown_wrong``): it fails a worked example another draft passes, or
raises where another draft returns a value on a call of a worked example's sequence. Then the
pick moves to the best agreement group holding a draft that is right there, and the record's
``why`` names that evidence. Where the estimates are close, agreement decides as before.

Registered as the pick rule ``dominance`` (``rules.register_rule``); ``rules.DEFAULT_RULE``
names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from codegen.agents.pick.behaviour import ERROR, TIMEOUT
from codegen.agents.pick.decision import agreement_rule
from codegen.agents.pick.records import UsedReliability
from codegen.agents.pick.rules import Decision, Observations, register_rule

EXAMPLE_ORIGIN = "example"  # a shared input built from a worked example (inputs.sequences)


@dataclass(frozen=True)
class Dominant:
    """The model whose estimate stands clearly above the others', its drafts, and the
    interval figures that say so."""

    model: str
    drafts: tuple[int, ...]
    low: float
    next_high: float  # the highest upper end among the other models


@dataclass(frozen=True)
class Evidence:
    """Execution showing draft ``draft`` wrong where ``right`` drafts are right."""

    draft: int
    what: str
    right: tuple[int, ...]


def dominant_model(used: Sequence[UsedReliability]) -> Dominant | None:
    """The model whose estimate's interval lies wholly above every other model's, when the
    drafts come from two models or more and each has an interval; else None."""
    bounds: dict[str, tuple[float, float, float]] = {}
    for u in used:
        if u.value is None or u.low is None or u.high is None:
            return None
        bounds[u.model] = (u.value, u.low, u.high)
    if len(bounds) < 2:
        return None
    top = max(bounds, key=lambda m: (bounds[m][0], m))
    next_high = max(high for m, (_, _, high) in bounds.items() if m != top)
    if bounds[top][1] <= next_high:
        return None
    drafts = tuple(u.candidate for u in used if u.model == top)
    return Dominant(top, drafts, bounds[top][1], next_high)


def shown_wrong(seen: Observations, draft: int) -> Evidence | None:
    """Execution showing ``draft`` wrong where another draft is right: a worked example it
    fails and another passes, else a call of a worked example's sequence on which it raises
    (or times out) and another returns a value."""
    rows = seen.rows
    for t, name in enumerate(seen.names):
        if seen.trusted[t] and not rows[draft][t]:
            right = tuple(j for j in range(len(rows)) if j != draft and rows[j][t])
            if right:
                return Evidence(draft, f"fails worked example {name}", right)
    classes = seen.table.classes
    example_inputs = [k for k, o in enumerate(seen.origins or ()) if o == EXAMPLE_ORIGIN]
    for k in example_inputs:
        if classes[draft][k] in (ERROR, TIMEOUT):
            right = tuple(j for j in range(len(classes)) if j != draft and classes[j][k] >= 0)
            if right:
                what = seen.table.labels[k].get(classes[draft][k], "an exception")
                return Evidence(draft, f"raises {what} on worked-example call {k}", right)
    return None


def dominance_rule(seen: Observations) -> Decision:
    """Agreement's pick (``decision.agreement_rule``), unless one model dominates
    (``dominant_model``): then its draft, unless ``shown_wrong``; then the best agreement group
    holding a draft right where it is wrong."""
    agreed = agreement_rule(seen)
    found = dominant_model(seen.used)
    if found is None:
        return agreed
    claim = (
        f"model {found.model} stands clearly above the others "
        f"(estimate interval low {found.low:.2f} > every other's high, at most "
        f"{found.next_high:.2f})"
    )
    wrong = {d: shown_wrong(seen, d) for d in found.drafts}
    standing = [d for d in found.drafts if wrong[d] is None]
    if agreed.chosen in standing:
        return replace(agreed, why=f"{agreed.why}; {claim}: its draft, as agreement chose")
    if standing:
        chosen = _first_in_groups(agreed, standing)
        why = (
            f"{claim}: its draft {chosen} stands (no worked example or call shows it wrong "
            f"where another draft is right), over agreement's draft {agreed.chosen} "
            f"({agreed.why})"
        )
        return replace(agreed, chosen=chosen, why=why, rule="dominant_model")
    evidence = [e for e in wrong.values() if e is not None]
    right = sorted({j for e in evidence for j in e.right} - set(found.drafts))
    chosen = _first_in_groups(agreed, right) if right else agreed.chosen
    shown = "; ".join(f"draft {e.draft} {e.what}" for e in evidence)
    why = (
        f"{claim}, but {shown} where draft(s) {', '.join(map(str, right))} are right: "
        f"the pick moves to draft {chosen} ({agreed.why})"
    )
    return replace(agreed, chosen=chosen, why=why, rule="dominant_model_shown_wrong")


def _first_in_groups(agreed: Decision, among: Sequence[int]) -> int:
    """The member of ``among`` in agreement's best-ranked group (its groups are best first),
    else the first of ``among``."""
    for group in agreed.groups:
        for member in group.members:
            if member in among:
                return member
    return among[0]


register_rule("dominance", dominance_rule)
