"""The pick rule as a registered object: a ``PickRule`` turns what was observed of the drafts
(``Observations``) into a ``Decision``; ``register_rule`` adds one by name and ``DEFAULT_RULE``
names the one the crew and an evaluation's re-pick use (``decision.agreement_rule``). Changing
the pick rule: write the rule, ``register_rule`` it, point ``DEFAULT_RULE`` at it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codegen.agents.pick.behaviour import AgreementPick, BehaviourTable
from codegen.agents.pick.matrix import Row
from codegen.agents.pick.records import SelectionGroup, UsedReliability


@dataclass(frozen=True)
class Observations:
    """What a pick is decided from: each draft's outcome class per shared input (``table``),
    the suite's test names and per-draft pass/fail rows, which tests are worked examples
    (``trusted``), each draft's reliability (``used``) and, when known, its typicality and
    where each shared input came from (``origins``: ``example``, ``test``, ``mutation``...)."""

    table: BehaviourTable
    names: Sequence[str]
    rows: Sequence[Row]
    trusted: Sequence[bool]
    used: Sequence[UsedReliability]
    typical: Sequence[float] | None = None
    origins: Sequence[str] | None = None


@dataclass(frozen=True)
class Decision:
    chosen: int
    why: str
    rule: str
    suspect: tuple[int, ...]  # test columns left out as suspect
    groups: list[SelectionGroup]
    agreed: AgreementPick | None  # output agreement's full record, when it decided


PickRule = Callable[[Observations], Decision]

PICK_RULES: dict[str, PickRule] = {}

# The rule ``decide`` applies; read when it runs, so a registration can change it.
# ``dominance`` (agents.pick.dominance): agreement, unless one model clearly dominates.
DEFAULT_RULE = "dominance"


def register_rule(name: str, rule: PickRule) -> PickRule:
    """``rule`` under ``name`` (a second registration of a name replaces the first)."""
    PICK_RULES[name] = rule
    return rule


def rule_named(name: str) -> PickRule:
    try:
        return PICK_RULES[name]
    except KeyError:
        raise ValueError(
            f"no pick rule named {name!r} (known: {', '.join(sorted(PICK_RULES))})"
        ) from None
