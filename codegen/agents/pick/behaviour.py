"""Drafts' behaviour on shared inputs, comparable, and the record of a pick: outcomes as
classes per input (``BehaviourTable``: returned values equal under float tolerance share a
class; every exception is one class, every timeout another; an input a draft never ran, its
run stopped before it, is ``UNKNOWN``, no outcome at all), the groups, verdicts and the
inputs that split the leading groups (``AgreementPick``). Used by ``agents.pick.agreement`` (the
pick) and ``agents.pick.posterior`` (the checks as fallible evidence)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from codegen.agents.pick.matrix import Row
from codegen.sandbox.calls import CallOutcome, Digest, Opaque

ERROR = -1  # the class of every exception
TIMEOUT = -2  # the class of every timeout
UNKNOWN = -4  # never run: the draft's run stopped before this input (not an outcome)


def ran(cls: int) -> bool:
    return cls != UNKNOWN


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
    TIMEOUT; UNKNOWN: not run); per input, one example value (or error text) per class, for
    reports."""

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
                if outcome.never_ran:
                    found = UNKNOWN
                elif outcome.status != "ok":
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

    def valid_inputs(self, rows: Sequence[int], inputs: Sequence[int]) -> tuple[int, ...]:
        """The ``inputs`` on which at least half of the candidates ``rows`` that ran them
        return a value (an input nobody handles says nothing about who crashes)."""
        return tuple(
            k
            for k in inputs
            if 2 * sum(self.classes[r][k] >= 0 for r in rows)
            >= sum(ran(self.classes[r][k]) for r in rows)
        )

    def value_share(self, row: int, valid: Sequence[int]) -> float:
        """The share of the ``valid`` inputs candidate ``row`` ran on which it returns a
        value (1.0 when it ran none)."""
        run = [k for k in valid if ran(self.classes[row][k])]
        return sum(self.classes[row][k] >= 0 for k in run) / len(run) if run else 1.0

    def crashes(self, row: int, valid: Sequence[int]) -> int:
        """The ``valid`` inputs candidate ``row`` ran and raised or hung on (an input it never
        ran is not a crash)."""
        return sum(self.classes[row][k] < 0 and ran(self.classes[row][k]) for k in valid)

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


def splitting_inputs(
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
class PickFrame:
    """What a pick compares: ``people`` (rows of the table), each one's suite row (``rows``, in
    the same order), which test columns are the spec's worked examples, the inputs compared."""

    people: list[int]
    rows: Sequence[Row]
    trusted: list[bool]
    columns: tuple[int, ...]

    @classmethod
    def of(
        cls,
        table: BehaviourTable,
        rows: Sequence[Row],
        trusted: Sequence[bool] | None,
        members: Sequence[int] | None,
        inputs: Sequence[int] | None,
    ) -> PickFrame:
        """``members`` default to every row of ``table``, ``inputs`` to all of its inputs, and
        ``trusted`` to no worked examples."""
        people = list(range(len(table.classes))) if members is None else list(members)
        if not people or len(rows) != len(people):
            raise ValueError("no candidates to pick from" if not people else "rows != members")
        tests = len(rows[0]) if rows else 0
        return cls(
            people,
            rows,
            list(trusted) if trusted is not None else [False] * tests,
            tuple(range(table.inputs)) if inputs is None else tuple(inputs),
        )

    @property
    def tests(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    def passes(self, i: int, tests: Sequence[int]) -> int:
        """How many of the test columns ``tests`` member ``i`` passes."""
        return sum(self.rows[i][t] for t in tests)


def candidate_verdicts(
    table: BehaviourTable,
    frame: PickFrame,
    groups: Sequence[Sequence[int]],
    examples: Sequence[int],
    counted: Sequence[int],
    valid: Sequence[int],
    weight: dict[int, float],
) -> tuple[CandidateVerdicts, ...]:
    """Every member's verdicts: its group (index into ``groups``, -1 when in none), the
    ``examples`` and ``counted`` tests it passes, its crashes and weight (0 when unweighted)."""
    group_of = {i: gi for gi, members in enumerate(groups) for i in members}
    return tuple(
        CandidateVerdicts(
            candidate=person,
            group=group_of.get(i, -1),
            examples_passed=frame.passes(i, examples),
            suite_passed=frame.passes(i, counted),
            crashes=table.crashes(person, valid) if i in weight else 0,
            weight=round(weight.get(i, 0.0), 4),
        )
        for i, person in enumerate(frame.people)
    )
