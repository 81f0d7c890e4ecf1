"""Picking a draft by agreement on outputs: every candidate called on the same inputs.

Input: each candidate's outcome on each shared input (``codegen.sandbox.calls.CallOutcome``,
from ``call_functions``: one sandbox execution for all candidates), the pass/fail rows of the
generated suite and which tests are the spec's worked examples (``selection.rows_of``).

* ``BehaviourTable`` turns outcomes into comparable classes per input: returned values equal
  under float tolerance (``atol``/``rtol`` on every float inside lists, tuples, dicts) share a
  class; every exception is one class and every timeout another (an exception or a timeout is
  an output too).
* ``agreement_pick`` (rule ``output_agreement``): candidates passing the most worked examples
  are eligible (an example in the spec outranks any number of agreeing drafts). An input is
  *valid* when at least half of the eligible candidates return a value on it; a candidate's
  weight is the share of valid inputs it returns a value on (crashing or hanging on inputs
  its peers handle costs it weight). CodeT's dual agreement (Chen et al. 2022) picks the
  consensus set: eligible drafts with the same verdicts on the generated tests (suspect tests
  left out), scored by members x tests passed. Inside it, drafts with the same outputs on
  every shared input form a group, and the group with the most weight wins (AlphaCode's and
  MBR-exec's clustering by outputs, applied where the tests can no longer tell drafts
  apart); its first member is the pick (with ``priors``, its most reliable member).
* With ``priors`` and ``errors`` (the crew's pick when the candidates' models have a
  reliability history) a check can be wrong too: ``suspect_checks`` scores every behaviour of
  every candidate by its posterior under the one-coin Dawid-Skene model of
  ``agents.reliability`` (each draft right with its source's probability ``p``) with the checks
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

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from codegen.agents.inputs import CallInput, InputBudget, call_sites, inputs_for
from codegen.agents.reliability import MAX_P, MIN_P
from codegen.agents.selection import Row, suspect_tests
from codegen.agents.spec import Spec
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import CallOutcome, Digest, Opaque, call_functions
from codegen.sandbox.types import Limits

ERROR = -1  # the class of every exception
TIMEOUT = -2  # the class of every timeout
ATOL = 1e-6
RTOL = 1e-6


def _close(a: object, b: object, atol: float, rtol: float) -> bool:
    """Python's ``==``, except that floats within tolerance are equal, at any depth."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool):
            return a == b
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= atol + rtol * abs(b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_close(x, y, atol, rtol) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], atol, rtol) for k in a)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # a decoded value's == does not fail; stay safe anyway
        return False


def _has_float(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list | tuple):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def _key(value: object) -> object:
    """A hashable exact key (type-tagged, so 1 and 1.0 and True differ)."""
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((repr(k), _key(v)) for k, v in value.items()))))
    if isinstance(value, set | frozenset):
        return (type(value).__name__, tuple(sorted(repr(v) for v in value)))
    if isinstance(value, Digest | Opaque):
        return (type(value).__name__, repr(value))
    return (type(value).__name__, repr(value))


def short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class BehaviourTable:
    """Per candidate and input, the class of its outcome (>= 0: a returned value; ERROR,
    TIMEOUT); per input, one example value (or error text) per class, for reports."""

    classes: list[list[int]]
    labels: list[dict[int, str]]
    _pairs: dict[tuple[int, int, tuple[int, ...]], int] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls, outcomes: Sequence[Sequence[CallOutcome]], atol: float = ATOL, rtol: float = RTOL
    ) -> BehaviourTable:
        count = len(outcomes[0]) if outcomes else 0
        classes = [[0] * count for _ in outcomes]
        labels: list[dict[int, str]] = []
        for k in range(count):
            exact: dict[object, int] = {}
            floats: list[tuple[object, int]] = []  # representatives that hold floats
            label: dict[int, str] = {}
            next_class = 0
            for c, row in enumerate(outcomes):
                outcome = row[k]
                if outcome.status != "ok":
                    found = ERROR if outcome.status == "error" else TIMEOUT
                    label.setdefault(found, outcome.error.split(":", 1)[0] or outcome.status)
                else:
                    value = outcome.value
                    key = _key(value)
                    found = exact.get(key, -3)
                    if found == -3 and _has_float(value):
                        found = next((i for rep, i in floats if _close(value, rep, atol, rtol)), -3)
                    if found == -3:
                        found, next_class = next_class, next_class + 1
                        label[found] = short(value)
                        if _has_float(value):
                            floats.append((value, found))
                        else:
                            exact[key] = found
                    elif _has_float(value):
                        exact.setdefault(key, found)
                classes[c][k] = found
            labels.append(label)
        return cls(classes, labels)

    @property
    def inputs(self) -> int:
        return len(self.labels)

    def agree(self, a: int, b: int, inputs: tuple[int, ...]) -> int:
        """Inputs (of ``inputs``) on which ``a`` and ``b`` return the same value."""
        if a == b:
            return sum(self.classes[a][k] >= 0 for k in inputs)
        key = (min(a, b), max(a, b), inputs)
        if key not in self._pairs:
            ca, cb = self.classes[a], self.classes[b]
            self._pairs[key] = sum(1 for k in inputs if ca[k] >= 0 and ca[k] == cb[k])
        return self._pairs[key]


@dataclass(frozen=True)
class BehaviourGroup:
    """Candidates with the same outputs on every shared input and the same suite verdicts."""

    members: tuple[int, ...]
    weight: float  # the members' weights summed
    support: float  # the weight of its consensus set (every draft with its suite verdicts)
    suite_passes: int  # generated tests (not suspect) the group passes
    score: float  # its consensus set's dual-agreement score
    similarity: float = 0.0  # support "similarity": the weight of every eligible draft times
    # the share of valid inputs on which it returns what this group returns
    posterior: float = 0.0  # rule posterior_agreement: the probability that this group's
    # behaviour is the correct one (given that some candidate's is)


@dataclass(frozen=True)
class CandidateVerdicts:
    candidate: int
    group: int  # index into AgreementPick.groups, -1 when not eligible
    examples_passed: int
    suite_passed: int
    crashes: int  # valid inputs it raised or timed out on
    weight: float


@dataclass(frozen=True)
class SplittingInput:
    """An input on which the leading groups disagree, and what each of them returned."""

    input: int
    outputs: tuple[tuple[int, str], ...]  # (group index, its output there)


@dataclass(frozen=True)
class AgreementPick:
    chosen: int
    group: BehaviourGroup
    groups: tuple[BehaviourGroup, ...]  # best first
    rule: str
    why: str
    eligible: tuple[int, ...]
    valid_inputs: tuple[int, ...]
    splitting: tuple[SplittingInput, ...]
    candidates: tuple[CandidateVerdicts, ...]
    suspect_tests: tuple[int, ...] = ()
    # the worked examples (test columns) outvoted: judged wrong by the drafts' posterior
    # (``errors``), or for rule posterior_agreement the examples its pick fails
    outvoted_examples: tuple[int, ...] = ()


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
    source's reliability (``agents.reliability``); a consensus set and a behaviour group are
    scored by their members' priors summed instead of counted (rule
    ``weighted_output_agreement``).

    ``support``: inside the winning consensus set, a behaviour group wins by its own weight
    (``group``: drafts with exactly its outputs), or by ``similarity`` (MBR-exec's expected
    agreement, Shi et al. 2022): every eligible draft's weight times the share of valid inputs
    on which it returns what the group returns, so drafts that differ only on a few inputs
    still support each other (rule ``similarity_agreement``). With priors that are each
    draft's probability of being right, this is the group's expected agreement with the
    correct behaviour.

    ``errors`` (with ``priors``, each draft's probability of being right): the checks
    ``suspect_checks`` finds more likely wrong than right are left out first: such a worked
    example filters nothing (``outvoted_examples``), such a generated test is suspect."""
    people = list(range(len(table.classes))) if members is None else list(members)
    if not people or len(rows) != len(people):
        raise ValueError("no candidates to pick from" if not people else "rows != members")
    if priors is not None and len(priors) != len(people):
        raise ValueError("priors != members")
    prior = [1.0] * len(people) if priors is None else [float(p) for p in priors]
    n_tests = len(rows[0]) if rows else 0
    trusted = list(trusted) if trusted is not None else [False] * n_tests
    columns = tuple(range(table.inputs)) if inputs is None else tuple(inputs)
    judged_wrong: tuple[int, ...] = ()
    if errors is not None:
        if priors is None:
            raise ValueError("errors needs priors (each draft's probability of being right)")
        judged_wrong = suspect_checks(table, rows, trusted, prior, people, columns, errors)
    outvoted = tuple(t for t in judged_wrong if trusted[t])
    examples = [t for t in range(n_tests) if trusted[t] and t not in outvoted]
    suspect = tuple(
        sorted(set(suspect_tests(rows, trusted)).union(t for t in judged_wrong if not trusted[t]))
    )
    counted = [t for t in range(n_tests) if not trusted[t] and t not in suspect]
    passed_examples = [sum(rows[i][t] for t in examples) for i in range(len(people))]
    best_examples = max(passed_examples)
    eligible = [i for i in range(len(people)) if passed_examples[i] == best_examples]
    classes = table.classes
    # Valid inputs: at least half of the eligible candidates return a value there.
    valid = tuple(
        k for k in columns if 2 * sum(classes[people[i]][k] >= 0 for i in eligible) >= len(eligible)
    )
    weight = {
        i: prior[i]
        * (sum(classes[people[i]][k] >= 0 for k in valid) / len(valid) if valid else 1.0)
        for i in eligible
    }
    # CodeT's consensus sets over the suite: same verdicts on the counted tests; score =
    # members x tests passed (every eligible draft in one set when no test counts).
    by_verdicts: dict[Row, list[int]] = {}
    for i in eligible:
        by_verdicts.setdefault(tuple(rows[i][t] for t in counted), []).append(i)
    set_score = {
        row: round(sum(prior[i] for i in ms) * (sum(row) if counted else 1), 9)
        for row, ms in by_verdicts.items()
    }
    set_weight = {row: sum(weight[i] for i in ms) for row, ms in by_verdicts.items()}
    # Within each set, the drafts with the same outputs on every shared input.
    by_behaviour: dict[tuple[Row, tuple[int, ...]], list[int]] = {}
    for i in eligible:
        verdicts_row = tuple(rows[i][t] for t in counted)
        signature = (verdicts_row, tuple(classes[people[i]][k] for k in columns))
        by_behaviour.setdefault(signature, []).append(i)

    def similarity(members_: list[int]) -> float:
        if support != "similarity":
            return 0.0
        own = classes[people[members_[0]]]
        if not valid:
            return sum(weight.values())
        total = 0.0
        for j in eligible:
            theirs = classes[people[j]]
            same = sum(1 for k in valid if own[k] >= 0 and own[k] == theirs[k])
            total += weight[j] * same / len(valid)
        return round(total, 6)

    groups: list[tuple[list[int], BehaviourGroup]] = []
    for (verdicts_row, _), found in by_behaviour.items():
        # The most reliable member first (with equal priors: the earliest draft).
        group_members = sorted(found, key=lambda i: (-prior[i], i))
        groups.append(
            (
                group_members,
                BehaviourGroup(
                    tuple(people[i] for i in group_members),
                    round(sum(weight[i] for i in group_members), 4),
                    round(set_weight[verdicts_row], 4),
                    sum(verdicts_row),
                    set_score[verdicts_row],
                    similarity(group_members),
                ),
            )
        )
    # The best consensus set, then its largest behaviour (by weight: crashers count less).
    groups.sort(
        key=lambda mg: (-mg[1].score, -mg[1].similarity, -mg[1].weight, -len(mg[0]), mg[0][0])
    )
    ranked = tuple(g for _, g in groups)
    best = groups[0][1]
    group_of = {i: gi for gi, (ms, _) in enumerate(groups) for i in ms}
    verdicts = tuple(
        CandidateVerdicts(
            candidate=people[i],
            group=group_of.get(i, -1),
            examples_passed=passed_examples[i],
            suite_passed=sum(rows[i][t] for t in counted),
            crashes=sum(classes[people[i]][k] < 0 for k in valid) if i in weight else 0,
            weight=round(weight.get(i, 0.0), 4),
        )
        for i in range(len(people))
    )
    splitting = _splitting(table, [people[ms[0]] for ms, _ in groups[:3]], columns, max_splitting)
    note = (
        f"{len(eligible)} of {len(people)} pass {best_examples}/{len(examples)} examples; "
        if examples
        else ""
    )
    rivals = sum(1 for _, g in groups if g.score == best.score) - 1
    why = (
        f"{note}{len(best.members)} candidate(s) return the same outputs on {len(columns)} "
        f"inputs ({len(valid)} valid), weight {best.weight:.2f}, in the consensus set that "
        f"passes {best.suite_passes} of {len(counted)} generated tests (score {best.score:g}, "
        f"{rivals} other behaviour(s) in it or tied)"
        + (f"; {len(suspect)} suspect test(s) left out" if suspect else "")
        + (
            f"; {len(outvoted)} worked example(s) outvoted: the drafts' posterior says wrong"
            if outvoted
            else ""
        )
        + (
            f"; expected agreement {best.similarity:.2f} (weighted by each draft's prior)"
            if support == "similarity"
            else ""
        )
    )
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
        why=why,
        eligible=tuple(people[i] for i in eligible),
        valid_inputs=valid,
        splitting=tuple(splitting),
        candidates=verdicts,
        suspect_tests=suspect,
        outvoted_examples=outvoted,
    )


def _splitting(
    table: BehaviourTable, leaders: Sequence[int], columns: Sequence[int], max_splitting: int
) -> list[SplittingInput]:
    """The first inputs on which the leading groups (one representative row each) differ."""
    splitting: list[SplittingInput] = []
    classes = table.classes
    for k in columns:
        if len(splitting) >= max_splitting or len(leaders) < 2:
            break
        if len({classes[r][k] for r in leaders}) > 1:
            outputs = tuple(
                (gi, table.labels[k].get(classes[r][k], "?")) for gi, r in enumerate(leaders)
            )
            splitting.append(SplittingInput(k, outputs))
    return splitting


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
    # Valid inputs: at least half of all candidates return a value there (every candidate is
    # a hypothesis here, not only those passing the most examples).
    valid = tuple(
        k for k in columns if 2 * sum(classes[people[i]][k] >= 0 for i in everyone) >= len(people)
    )
    weight = {
        i: (sum(classes[people[i]][k] >= 0 for k in valid) / len(valid) if valid else 1.0)
        for i in everyone
    }
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
            crashes=sum(classes[people[i]][k] < 0 for k in valid),
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
            _splitting(table, [people[ms[0]] for ms, _ in groups[:3]], columns, max_splitting)
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


# -- the crew's side: the drafts on the spec's and the suite's inputs, in one execution ------
# Measured on CodeT's data (docs/humaneval.md): a draft's first call at the limit stops its run
# (its other inputs count as timeouts), which cut the shared-input time where drafts hang or
# recurse exponentially, with the same picks as 1 s / 10 s / 3 timeouts on the tasks compared.
CALL_LIMIT_S = 0.25  # per call
DRAFT_DEADLINE_S = 3.0  # per draft, all its calls
MAX_TIMEOUTS = 1  # a draft that hangs this often is not called again


@dataclass(frozen=True)
class SharedRun:
    """Every draft called on the shared inputs: the inputs, the classes, the seconds."""

    entry_point: str
    inputs: list[CallInput]
    table: BehaviourTable
    seconds: float


def entry_point_of(spec: Spec, sources: Sequence[str]) -> str:
    """The spec's function called most often in ``sources`` (its examples and tests)."""
    names = [f.name for f in spec.functions]
    counts = {n: sum(len(call_sites(s, n)) for s in sources) for n in names}
    return max(names, key=lambda n: (counts[n], -names.index(n)))


def run_on_shared_inputs(
    box: Sandbox,
    codes: Sequence[str],
    spec: Spec,
    tests: str,
    limits: Limits | None,
    budget: InputBudget | None = None,
) -> SharedRun:
    """The shared inputs of ``spec`` and ``tests`` (``agents.inputs``) and every one of
    ``codes`` on them, in one sandbox execution (``sandbox.calls.call_functions``)."""
    calls = [e.call for e in spec.examples]
    entry = entry_point_of(spec, [*calls, tests])
    function = next((f for f in spec.functions if f.name == entry), None)
    prose = [function.description] if function else []
    signature = function.signature if function else ""
    inputs = inputs_for(entry, calls, [tests], budget, prose=prose, signature=signature)
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
