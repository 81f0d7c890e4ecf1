"""What every selection rule sees of a task (``Draw``), what it returns (``Picked``), and the
rules themselves (``strategies``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Draw:
    """One subset of a task's samples, as every rule sees it."""

    rows: list[tuple[bool, ...]]
    trusted: list[bool]
    correct: list[bool]
    members: list[int]  # the samples' programs (rows of ``table``)
    table: Any  # codegen.agents.pick.behaviour.BehaviourTable
    without_examples: tuple[int, ...]  # input columns of each setting
    with_examples: tuple[int, ...]
    sources: tuple[str, ...] = ()  # each sample's model (MapCoder: its run), when known
    typical: tuple[float, ...] = ()  # each sample's typicality among the draw's code, when known


@dataclass(frozen=True)
class Picked:
    """A rule's pick: the share of correct members in its group, and whether the rule calls
    it passing (every test it counts green), with and without the suspect tests."""

    share: float
    passing: bool | None = None
    passing_with_suspect: bool | None = None


Strategy = Callable[[Draw], Picked]

# How a rule takes one member of its winning group (MapCoder): at random (the group's share
# of correct samples), the crew's choice before typicality (the most reliable, then the
# earliest) and the crew's now (``codegen.agents.pick.typical.most_typical``).
MEMBERS = ("random", "earliest", "typical")


def _share(members: Sequence[int], positions: dict[int, list[int]], correct: list[bool]) -> float:
    """Share of correct samples among the samples whose rows are in ``members``."""
    picked = [i for m in members for i in positions[m]]
    return sum(correct[i] for i in picked) / len(picked)


def _member(how: str, samples: list[int], draw: Draw, priors: Sequence[float] | None) -> float:
    """Whether the member of ``samples`` taken ``how`` (``MEMBERS``) is correct; for
    ``random``, the share of correct ones."""
    from codegen.agents.pick import most_typical

    if how == "random":
        return sum(draw.correct[i] for i in samples) / len(samples)
    typical = draw.typical if how == "typical" else [0.0] * len(draw.correct)
    return float(draw.correct[most_typical(samples, typical, priors)])


def _generated_only(trusted: list[bool]) -> list[int]:
    return [t for t, tr in enumerate(trusted) if not tr]


def _only(rows: list[tuple[bool, ...]], columns: list[int]) -> list[tuple[bool, ...]]:
    return [tuple(r[t] for t in columns) for r in rows]


def _verdict(row: tuple[bool, ...], suspect: Sequence[int]) -> tuple[bool, bool]:
    kept = [ok for t, ok in enumerate(row) if t not in set(suspect)]
    return all(kept), all(row)


def _codet(d: Draw, examples: bool = True) -> Picked:
    # With no generated tests at all (MapCoder's runs; 6 of CodeT's 164 tasks), CodeT's
    # rule over the examples; without examples (CodeT's own setting, as the rules it is
    # compared with there) it has nothing to go on: every sample in one group.
    from codegen.agents.pick import dual_agreement

    generated = _generated_only(d.trusted)
    rows = _only(d.rows, generated) if generated or not examples else d.rows
    chosen = dual_agreement(rows)
    row = rows[chosen.chosen]
    return Picked(_share(chosen.group.members, _self(rows), d.correct), all(row), all(row))


def _ours(d: Draw, examples: bool) -> Picked:
    from codegen.agents.pick import pick

    rows = d.rows if examples else _only(d.rows, _generated_only(d.trusted))
    chosen = pick(rows, d.trusted if examples else None)
    ok, ok_all = _verdict(rows[chosen.chosen], chosen.suspect_tests)
    return Picked(_share(chosen.group.members, _self(rows), d.correct), ok, ok_all)


def _agreement(
    d: Draw,
    examples: bool,
    reliability: Any,
    weighted: str = "",
    support: str = "group",
    checks: bool = False,
    member: str = "",
) -> Picked:
    from codegen.agents.pick import CHECK_ERRORS, agreement_pick

    rows = d.rows if examples else _only(d.rows, _generated_only(d.trusted))
    priors = (
        reliability.probabilities(d.sources)
        if weighted == "probability"
        else reliability.weights(d.sources)
        if weighted == "log_odds"
        else [1.0] * len(d.rows)
    )
    chosen = agreement_pick(
        d.table,
        rows,
        d.trusted if examples else None,
        members=d.members,
        inputs=d.with_examples if examples else d.without_examples,
        priors=priors if weighted else None,
        support="similarity" if support == "similarity" else "group",
        errors=CHECK_ERRORS if checks else None,
    )
    # group members are programs; map back to the draw's samples
    samples = [i for i, m in enumerate(d.members) if m in set(chosen.group.members)]
    first = samples[0]
    ok, ok_all = _verdict(rows[first], chosen.suspect_tests)
    if member:
        return Picked(_member(member, samples, d, priors if weighted else None), ok, ok_all)
    if weighted:
        # The pick is the group's most reliable member (its source's weight): that
        # sample's verdict, not the group's share.
        best = max(samples, key=lambda i: (priors[i], -i))
        return Picked(float(d.correct[best]), ok, ok_all)
    # the group shares outputs and suite verdicts: its samples' share of correct ones
    return Picked(sum(d.correct[i] for i in samples) / len(samples), ok, ok_all)


def _posterior(d: Draw, reliability: Any) -> Picked:
    # posterior_agreement: no hard example filter; the pick is one sample (the most
    # reliable member of the most probable behaviour), scored as that sample.
    from codegen.agents.pick import posterior_pick

    priors = reliability.probabilities(d.sources)
    chosen = posterior_pick(
        d.table, d.rows, d.trusted, priors, members=d.members, inputs=d.with_examples
    )
    samples = [i for i, m in enumerate(d.members) if m in set(chosen.group.members)]
    best = max(samples, key=lambda i: (priors[i], -i))
    ok, ok_all = _verdict(d.rows[best], chosen.suspect_tests)
    return Picked(float(d.correct[best]), ok, ok_all)


def _unweighted_rules() -> dict[str, Strategy]:
    """The rules that need no source reliability: the baseline, CodeT's, ours, agreement,
    and the oracle."""
    return {
        "random": lambda d: Picked(sum(d.correct) / len(d.correct)),
        # CodeT's own setting: its generated tests only (no docstring examples), so the
        # examples neither score nor split its groups.
        "codet": _codet,
        "codet_without_examples": lambda d: _codet(d, False),
        "ours": lambda d: _ours(d, True),
        "ours_without_examples": lambda d: _ours(d, False),
        "agreement": lambda d: _agreement(d, True, None),
        "agreement_without_examples": lambda d: _agreement(d, False, None),
        "oracle": lambda d: Picked(float(any(d.correct))),
    }


def _weighted_rules(reliability: Any) -> dict[str, Strategy]:
    """The rules that weigh each sample by its source's estimated reliability, the posterior's
    pick, and each agreement rule with its group's member taken each way of ``MEMBERS``."""

    def agreement_rule(shape: tuple[str, str, bool], member: str = "") -> Strategy:
        return lambda d: _agreement(d, True, reliability, *shape, member)

    # agreement()'s weighting, support and checks per rule. weighted: each sample's
    # source's estimated accuracy as its prior, MBR-exec's expected agreement (similarity)
    # over the shared inputs; the two ablations beside it. weighted_checks: the crew's
    # pick with a history now (weighted, after leaving out the checks the posterior shows
    # more likely wrong than right).
    shapes = {
        "weighted": ("probability", "similarity", False),
        "weighted_groups": ("log_odds", "group", False),
        "similarity": ("", "similarity", False),
        "weighted_checks": ("probability", "similarity", True),
    }
    rules = {name: agreement_rule(shape) for name, shape in shapes.items()}
    # posterior: that posterior's own pick (exact groups, no hard filter), an ablation
    rules["posterior"] = lambda d: _posterior(d, reliability)
    for name, shape in {"agreement": ("", "group", False), **shapes}.items():
        for how in MEMBERS:
            rules[f"{name}_{how}_member"] = agreement_rule(shape, how)
    return rules


def strategies(reliability: Any = None) -> dict[str, Strategy]:
    """The rules; with ``reliability`` (``codegen.agents.pick.reliability.Reliability``, estimated
    over the run's tasks) also ``weighted``: agreement with each sample weighing its source's
    log-odds."""
    rules = _unweighted_rules()
    if reliability is not None:
        rules.update(_weighted_rules(reliability))
    return rules


def votes_of(draw: Draw) -> Any:
    """What ``codegen.agents.pick.reliability.estimate`` sees of one task: each sample's source,
    eligibility and behaviour group under today's (unweighted) agreement pick."""
    from codegen.agents.pick import TaskVotes, agreement_pick

    chosen = agreement_pick(
        draw.table, draw.rows, draw.trusted, members=draw.members, inputs=draw.with_examples
    )
    return TaskVotes(
        sources=draw.sources,
        eligible=tuple(v.group >= 0 for v in chosen.candidates),
        behaviours=tuple(v.group for v in chosen.candidates),
    )


def draw_all(
    task: dict[str, Any], ran: dict[str, Any], chosen: Sequence[int] | None = None
) -> Draw:
    """The samples ``chosen`` (default all) of ``task`` as every rule sees them."""
    from codegen.agents.pick import BehaviourTable, typicality

    picked = list(range(len(task["sample_program"]))) if chosen is None else list(chosen)
    codes = task.get("codes")
    programs = [task["sample_program"][i] for i in picked]
    files = task.get("files") or []
    return Draw(
        rows=[tuple(ran["passes"][p]) for p in programs],
        trusted=task["trusted"],
        correct=[ran["correct"][p] for p in programs],
        members=programs,
        table=BehaviourTable(ran["classes"], [{} for _ in task["inputs"]]),
        without_examples=tuple(task["inputs_without_examples"]),
        with_examples=tuple(task["inputs_with_examples"]),
        sources=tuple(files[i] if i < len(files) else "" for i in picked),
        typical=tuple(typicality([codes[i] for i in picked])) if codes else (),
    )


def _self(rows: list[tuple[bool, ...]]) -> dict[int, list[int]]:
    return {i: [i] for i in range(len(rows))}
