"""Picking a draft by agreement on outputs: every candidate called on the same inputs.

Input: each candidate's outcome on each shared input (``codegen.sandbox.calls.CallOutcome``,
from ``call_functions``: one sandbox execution for all candidates), the pass/fail rows of the
generated suite and which tests are the spec's worked examples (``selection.rows_of``).

* ``BehaviourTable`` turns outcomes into comparable classes per input: returned values equal
  under float tolerance (``atol``/``rtol`` on every float inside lists, tuples, dicts) share a
  class; every exception is one class and every timeout another (an exception or a timeout is
  an output too). An input a candidate never ran (its run stopped after a timeout, or at its
  deadline) is unknown: it counts neither for nor against it.
* ``agreement_pick`` (rule ``output_agreement``): candidates passing the most worked examples
  are eligible (an example in the spec outranks any number of agreeing drafts). An input is
  *valid* when at least half of the eligible candidates that ran it return a value on it; a
  candidate's weight is the share of the valid inputs it ran that it returns a value on
  (crashing or hanging on inputs its peers handle costs it weight). CodeT's dual agreement
  (Chen et al. 2022) picks the consensus set: eligible drafts with the same verdicts on the
  generated tests (suspect tests left out), scored by members x tests passed. Inside it,
  drafts with the same outputs on every shared input form a group, and the group with the
  most weight wins (AlphaCode's and MBR-exec's clustering by outputs, applied where the tests
  can no longer tell drafts apart); its first member is the pick (with ``priors``, its most
  reliable member).
* With ``priors`` and ``errors`` (the crew's pick when the candidates' models have a
  reliability history) a check can be wrong too: ``suspect_checks`` scores every behaviour of
  every candidate by its posterior under the one-coin Dawid-Skene model of
  ``agents.pick.reliability`` (each draft right with its source's probability ``p``) with the checks
  as fallible evidence (``CheckErrors``: a prompt's worked examples are all right, or, rarely,
  the prompt is sloppy and each of them may be wrong; a generated test is wrong with a fixed
  probability), and a check the behaviours that fail it hold more than half the posterior of
  is left out: a worked example is then *outvoted* (no longer a filter), a generated test
  suspect. A worked example still outweighs any one draft, but several reliable drafts that
  agree on one behaviour failing it can outvote it. ``posterior_pick`` (rule
  ``posterior_agreement``) is that posterior's own pick, an ablation.

The record (``AgreementPick``) says why: every group with its size, weight, support and suite
passes, the inputs that split the leading groups (with each side's output), and each
candidate's verdicts (examples, suite, crashes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from codegen.agents.pick.behaviour import (
    AgreementPick,
    BehaviourGroup,
    BehaviourTable,
    PickFrame,
    candidate_verdicts,
    ran,
    splitting_inputs,
)
from codegen.agents.pick.inputs import (
    CallInput,
    CallSequence,
    InputBudget,
    Step,
    call_sites,
    class_sequences,
    columns,
    inputs_for,
    run_sequences,
)
from codegen.agents.pick.matrix import Row, suspect_tests
from codegen.agents.pick.posterior import CheckErrors, suspect_checks
from codegen.agents.spec import Spec
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import call_functions
from codegen.sandbox.types import Limits


@dataclass(frozen=True)
class _Checks:
    """Which test columns count, and how: worked examples that filter, generated tests that
    score, and the ones left out (suspect tests, outvoted examples)."""

    examples: list[int]
    counted: list[int]
    suspect: tuple[int, ...]
    outvoted: tuple[int, ...]


def _checks_that_count(
    table: BehaviourTable,
    frame: PickFrame,
    prior: list[float],
    errors: CheckErrors | None,
) -> _Checks:
    """The checks left out first: ``suspect_tests``, and with ``errors`` what
    ``suspect_checks`` finds more likely wrong than right."""
    rows, trusted = frame.rows, frame.trusted
    judged_wrong: tuple[int, ...] = ()
    if errors is not None:
        judged_wrong = suspect_checks(
            table, rows, trusted, prior, frame.people, frame.columns, errors
        )
    outvoted = tuple(t for t in judged_wrong if trusted[t])
    suspect = tuple(
        sorted(set(suspect_tests(rows, trusted)).union(t for t in judged_wrong if not trusted[t]))
    )
    return _Checks(
        examples=[t for t in range(frame.tests) if trusted[t] and t not in outvoted],
        counted=[t for t in range(frame.tests) if not trusted[t] and t not in suspect],
        suspect=suspect,
        outvoted=outvoted,
    )


def _expected_agreement(
    table: BehaviourTable,
    frame: PickFrame,
    representative: int,
    valid: tuple[int, ...],
    weight: dict[int, float],
) -> float:
    """MBR-exec's support of the behaviour of member ``representative``: every weighted
    draft's weight times the share of the valid inputs both ran on which it returns the same."""
    classes = table.classes
    if not valid:
        return sum(weight.values())
    own = classes[frame.people[representative]]
    total = 0.0
    for j in weight:
        theirs = classes[frame.people[j]]
        both = [k for k in valid if ran(own[k]) and ran(theirs[k])]
        same = sum(1 for k in both if own[k] >= 0 and own[k] == theirs[k])
        total += weight[j] * (same / len(both) if both else 0.0)
    return round(total, 6)


def _ranked_groups(
    table: BehaviourTable,
    frame: PickFrame,
    counted: list[int],
    prior: list[float],
    weight: dict[int, float],
    valid: tuple[int, ...],
    support: Literal["group", "similarity"],
) -> list[tuple[list[int], BehaviourGroup]]:
    """The weighted (eligible) drafts in behaviour groups, best first: CodeT's consensus sets
    over the suite (same verdicts on the ``counted`` tests; score = members x tests passed,
    every draft in one set when no test counts), and inside each set the drafts with the same
    outputs on every shared input; the best set's largest behaviour (by weight) first."""
    rows, classes = frame.rows, table.classes
    by_verdicts: dict[Row, list[int]] = {}
    by_behaviour: dict[tuple[Row, tuple[int, ...]], list[int]] = {}
    for i in weight:
        verdicts_row = tuple(rows[i][t] for t in counted)
        by_verdicts.setdefault(verdicts_row, []).append(i)
        outputs = tuple(classes[frame.people[i]][k] for k in frame.columns)
        by_behaviour.setdefault((verdicts_row, outputs), []).append(i)
    set_score = {
        row: round(sum(prior[i] for i in ms) * (sum(row) if counted else 1), 9)
        for row, ms in by_verdicts.items()
    }
    set_weight = {row: sum(weight[i] for i in ms) for row, ms in by_verdicts.items()}
    groups: list[tuple[list[int], BehaviourGroup]] = []
    for (verdicts_row, _), found in by_behaviour.items():
        # The most reliable member first (with equal priors: the earliest draft).
        members = sorted(found, key=lambda i: (-prior[i], i))
        similarity = (
            _expected_agreement(table, frame, members[0], valid, weight)
            if support == "similarity"
            else 0.0
        )
        group = BehaviourGroup(
            tuple(frame.people[i] for i in members),
            round(sum(weight[i] for i in members), 4),
            round(set_weight[verdicts_row], 4),
            sum(verdicts_row),
            set_score[verdicts_row],
            similarity,
        )
        groups.append((members, group))
    groups.sort(
        key=lambda mg: (-mg[1].score, -mg[1].similarity, -mg[1].weight, -len(mg[0]), mg[0][0])
    )
    return groups


def _why(
    frame: PickFrame,
    checks: _Checks,
    groups: Sequence[BehaviourGroup],
    eligible: int,
    best_examples: int,
    valid: tuple[int, ...],
    support: Literal["group", "similarity"],
) -> str:
    best = groups[0]
    note = (
        f"{eligible} of {len(frame.people)} pass {best_examples}/{len(checks.examples)} examples; "
        if checks.examples
        else ""
    )
    rivals = sum(1 for g in groups if g.score == best.score) - 1
    return (
        f"{note}{len(best.members)} candidate(s) return the same outputs on "
        f"{len(frame.columns)} inputs ({len(valid)} valid), weight {best.weight:.2f}, in the "
        f"consensus set that passes {best.suite_passes} of {len(checks.counted)} generated "
        f"tests (score {best.score:g}, {rivals} other behaviour(s) in it or tied)"
        + (f"; {len(checks.suspect)} suspect test(s) left out" if checks.suspect else "")
        + (
            f"; {len(checks.outvoted)} worked example(s) outvoted: the drafts' posterior says wrong"
            if checks.outvoted
            else ""
        )
        + (
            f"; expected agreement {best.similarity:.2f} (weighted by each draft's prior)"
            if support == "similarity"
            else ""
        )
    )


def agreement_pick(
    table: BehaviourTable,
    rows: Sequence[Row],
    trusted: Sequence[bool] | None = None,
    members: Sequence[int] | None = None,
    inputs: Sequence[int] | None = None,
    max_splitting: int = 5,
    priors: Sequence[float] | None = None,
    support: Literal["group", "similarity"] = "group",
    errors: CheckErrors | None = None,
) -> AgreementPick:
    """The ``output_agreement`` pick among ``members`` (rows of ``table``; default all), whose
    suite rows are ``rows`` (one per member, in order), over ``inputs`` (default all).

    ``priors`` (one per member, default all 1.0): how much each member's vote counts, e.g. its
    source's reliability (``agents.pick.reliability``); a consensus set and a behaviour group are
    scored by their members' priors summed instead of counted (rule
    ``weighted_output_agreement``).

    ``support``: inside the winning consensus set, a behaviour group wins by its own weight
    (``group``: drafts with exactly its outputs), or by ``similarity`` (MBR-exec's expected
    agreement, Shi et al. 2022): every eligible draft's weight times the share of the valid
    inputs both ran on which it returns what the group returns, so drafts that differ only on
    a few inputs still support each other (rule ``similarity_agreement``). With priors that are each
    draft's probability of being right, this is the group's expected agreement with the
    correct behaviour.

    ``errors`` (with ``priors``, each draft's probability of being right): the checks
    ``suspect_checks`` finds more likely wrong than right are left out first: such a worked
    example filters nothing (``outvoted_examples``), such a generated test is suspect."""
    frame = PickFrame.of(table, rows, trusted, members, inputs)
    people = frame.people
    if priors is not None and len(priors) != len(people):
        raise ValueError("priors != members")
    if errors is not None and priors is None:
        raise ValueError("errors needs priors (each draft's probability of being right)")
    prior = [1.0] * len(people) if priors is None else [float(p) for p in priors]
    checks = _checks_that_count(table, frame, prior, errors)
    # An example in the spec outranks any number of agreeing drafts: only those passing the
    # most of them are eligible.
    passed_examples = [frame.passes(i, checks.examples) for i in range(len(people))]
    best_examples = max(passed_examples)
    eligible = [i for i in range(len(people)) if passed_examples[i] == best_examples]
    valid = table.valid_inputs([people[i] for i in eligible], frame.columns)
    weight = {i: prior[i] * table.value_share(people[i], valid) for i in eligible}
    groups = _ranked_groups(table, frame, checks.counted, prior, weight, valid, support)
    ranked = tuple(g for _, g in groups)
    best = ranked[0]
    leaders = [people[ms[0]] for ms, _ in groups[:3]]
    return AgreementPick(
        chosen=best.members[0],
        group=best,
        groups=ranked,
        rule=(
            "similarity_agreement"
            if support == "similarity"
            else "output_agreement"
            if priors is None
            else "weighted_output_agreement"
        ),
        why=_why(frame, checks, ranked, len(eligible), best_examples, valid, support),
        eligible=tuple(people[i] for i in eligible),
        valid_inputs=valid,
        splitting=tuple(splitting_inputs(table, leaders, frame.columns, max_splitting)),
        candidates=candidate_verdicts(
            table, frame, [ms for ms, _ in groups], checks.examples, checks.counted, valid, weight
        ),
        suspect_tests=checks.suspect,
        outvoted_examples=checks.outvoted,
    )


# -- the crew's side: the drafts on the spec's and the suite's inputs, in one execution ------
# Measured on CodeT's data (CHANGELOG.md): a draft's first call at the limit stops its run
# (its other inputs count as timeouts), which cut the shared-input time where drafts hang or
# recurse exponentially, with the same picks as 1 s / 10 s / 3 timeouts on the tasks compared.
CALL_LIMIT_S = 0.25  # per call
DRAFT_DEADLINE_S = 3.0  # per draft, all its calls
MAX_TIMEOUTS = 1  # a draft that hangs this often is not called again


@dataclass(frozen=True)
class SharedRun:
    """Every draft called on the shared inputs: the inputs, the classes, the seconds (and,
    for programs, each run's time limit)."""

    entry_point: str
    inputs: list[CallInput]
    table: BehaviourTable
    seconds: float
    time_limit_s: float | None = None


def entry_point_of(spec: Spec, sources: Sequence[str]) -> str:
    """The spec's function called most often in ``sources`` (its examples and tests)."""
    names = [f.name for f in spec.functions]
    counts = {n: sum(len(call_sites(s, n)) for s in sources) for n in names}
    return max(names, key=lambda n: (counts[n], -names.index(n)))


def _function_inputs(
    spec: Spec, tests: str, budget: InputBudget | None
) -> tuple[str, list[CallInput]]:
    """The entry point (the spec's function called most in its examples and tests) and its
    shared inputs (``agents.pick.inputs.functions``)."""
    calls = [e.call for e in spec.examples]
    entry = entry_point_of(spec, [*calls, tests])
    function = next((f for f in spec.functions if f.name == entry), None)
    # The spec's constraints may state the parameters' ranges (``0 <= k <= len(arr)``).
    prose = [function.description, *spec.constraints] if function else list(spec.constraints)
    signature = function.signature if function else ""
    return entry, inputs_for(entry, calls, [tests], budget, prose=prose, signature=signature)


def run_on_shared_inputs(
    box: Sandbox,
    codes: Sequence[str],
    spec: Spec,
    tests: str,
    limits: Limits | None,
    budget: InputBudget | None = None,
) -> SharedRun:
    """The shared inputs of ``spec`` and ``tests`` (``pick.inputs``) and every one of
    ``codes`` on them, in one sandbox execution (``sandbox.calls.call_functions``). A spec
    with classes is run on call sequences (``inputs.sequences``: one input per step of each
    sequence), its free function's inputs joining them as sequences of one call."""
    if spec.classes:
        return _run_sequences(box, codes, spec, tests, limits, budget)
    if not spec.functions:
        return SharedRun("", [], BehaviourTable([[] for _ in codes], []), 0.0)
    entry, inputs = _function_inputs(spec, tests, budget)
    if not inputs:
        return SharedRun(entry, [], BehaviourTable([[] for _ in codes], []), 0.0)
    started = time.perf_counter()
    outcomes = call_functions(
        box,
        list(codes),
        entry,
        [list(i.args) for i in inputs],
        CALL_LIMIT_S,
        limits,
        module_deadline_s=DRAFT_DEADLINE_S,
        max_timeouts=MAX_TIMEOUTS,
        max_value_chars=2000,
    )
    return SharedRun(entry, inputs, BehaviourTable.of(outcomes), time.perf_counter() - started)


def _run_sequences(
    box: Sandbox,
    codes: Sequence[str],
    spec: Spec,
    tests: str,
    limits: Limits | None,
    budget: InputBudget | None,
) -> SharedRun:
    sequences = class_sequences(spec, tests)
    entry = ", ".join(c.name for c in spec.classes)
    if spec.functions:
        function, inputs = _function_inputs(spec, tests, budget)
        entry += ", " + function
        sequences += [CallSequence((Step("call", function, i.args),), i.origin) for i in inputs]
    if not sequences:
        return SharedRun(entry, [], BehaviourTable([[] for _ in codes], []), 0.0)
    started = time.perf_counter()
    table = run_sequences(
        box, codes, sequences, limits, CALL_LIMIT_S, DRAFT_DEADLINE_S, MAX_TIMEOUTS
    )
    return SharedRun(entry, columns(sequences), table, time.perf_counter() - started)
