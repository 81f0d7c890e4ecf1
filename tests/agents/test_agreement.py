"""Output agreement (agents.pick.agreement): every draft called on the same generated inputs in ONE
sandbox execution, grouped by what it returns; fixtures written for these tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codegen.agents.pick import BehaviourTable, agreement_pick, pick, run_on_shared_inputs
from codegen.agents.pick.behaviour import ERROR, TIMEOUT, UNKNOWN
from codegen.agents.spec import Spec
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import LOAD_FAILED, CallOutcome
from codegen.sandbox.types import Limits

LIMITS = Limits(timeout_s=60, memory_mb=256)


def spec_of(name: str, examples: list[tuple[str, str]]) -> Spec:
    return Spec.model_validate(
        {
            "purpose": "a fixture",
            "functions": [{"name": name, "signature": f"def {name}(xs)", "description": ""}],
            "behaviours": [],
            "edge_cases": [],
            "examples": [{"call": c, "expected": e} for c, e in examples],
            "constraints": [],
        }
    )


SECOND = spec_of("second_largest", [("second_largest([1, 3, 2])", "2")])
SECOND_TESTS = "def test_it():\n    assert second_largest([2, 1, 3]) == 2\n"
# Every draft passes the example and the generated test; only other inputs tell them apart.
WRONG_DUPLICATES = "def second_largest(xs):\n    return sorted(xs)[-2]\n"  # [3, 3, 1] -> 3
WRONG_POSITION = "def second_largest(xs):\n    return sorted(xs)[1]\n"  # right for 3 items only
RIGHT_SET = "def second_largest(xs):\n    return sorted(set(xs))[-2]\n"
RIGHT_LOOP = """
def second_largest(xs):
    best = second = None
    for x in xs:
        if best is None or x > best:
            best, second = x, best
        elif x != best and (second is None or x > second):
            second = x
    if second is None:
        raise ValueError("no second value")
    return second
"""


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    sandbox = open_sandbox("docker", pool_size=1)
    yield sandbox
    sandbox.close()


def rows_all_pass(count: int) -> list[tuple[bool, ...]]:
    return [(True, True)] * count  # (the example, the generated test)


@pytest.mark.docker
def test_generated_inputs_split_what_the_examples_and_the_suite_cannot(box: Sandbox) -> None:
    codes = [WRONG_DUPLICATES, WRONG_POSITION, RIGHT_SET, RIGHT_LOOP]
    shared = run_on_shared_inputs(box, codes, SECOND, SECOND_TESTS, LIMITS)
    assert shared.entry_point == "second_largest"
    assert [i.origin for i in shared.inputs[:2]] == ["example", "test"]
    assert {i.origin for i in shared.inputs[2:]} == {"mutation"}
    rows, trusted = rows_all_pass(4), [True, False]
    # On test verdicts alone all four are one group, and the first draft (wrong) wins.
    assert pick(rows, trusted).chosen == 0
    chosen = agreement_pick(shared.table, rows, trusted)
    assert chosen.rule == "output_agreement"
    assert chosen.group.members == (2, 3) and chosen.chosen == 2
    assert sorted(g.members for g in chosen.groups) == [(0,), (1,), (2, 3)]
    assert chosen.splitting, "the inputs that split the groups are reported"
    split = chosen.splitting[0]
    assert len({out for _, out in split.outputs}) > 1
    assert "4 of 4 pass 1/1 examples" in chosen.why
    assert [v.examples_passed for v in chosen.candidates] == [1, 1, 1, 1]


HANGS = """
def second_largest(xs):
    if len(xs) > 3:
        while True:
            pass
    return sorted(set(xs))[-2]
"""
CRASHES = """
def second_largest(xs):
    if len(set(xs)) != len(xs):
        raise RuntimeError("duplicates")
    return sorted(set(xs))[-2]
"""


@pytest.mark.docker
def test_a_draft_that_hangs_or_crashes_on_generated_inputs_loses_weight(box: Sandbox) -> None:
    codes = [HANGS, CRASHES, RIGHT_SET, RIGHT_LOOP]
    shared = run_on_shared_inputs(box, codes, SECOND, SECOND_TESTS, LIMITS)
    classes = shared.table.classes
    assert TIMEOUT in classes[0] and ERROR in classes[1]
    # The hanging draft was stopped after its first timeout; every input still has an outcome.
    assert all(len(row) == len(shared.inputs) for row in classes)
    chosen = agreement_pick(shared.table, rows_all_pass(4), [True, False])
    assert chosen.chosen in (2, 3) and set(chosen.group.members) == {2, 3}
    verdicts = {v.candidate: v for v in chosen.candidates}
    assert verdicts[0].crashes > 0 and verdicts[0].weight < 1
    assert verdicts[1].crashes > 0 and verdicts[1].weight < 1
    assert verdicts[2].crashes == verdicts[3].crashes


def test_inputs_a_stopped_draft_never_ran_are_unknown_not_timeouts() -> None:
    """After its first timeout a draft is not called again (MAX_TIMEOUTS): the inputs it never
    ran say nothing about it. It hung once, so it crashed once, not on every later input."""

    def ok(value: object) -> CallOutcome:
        return CallOutcome("ok", value)

    not_run = CallOutcome("timeout", error="not run: 1 calls hit the time limit")
    unreached = CallOutcome("timeout", error="not reached: the run hit its deadline")
    outcomes = [
        [ok(1), ok(2), CallOutcome("timeout", error="time limit"), not_run, not_run, unreached],
        [ok(1), ok(2), ok(3), ok(4), ok(5), ok(6)],
        [ok(1), ok(2), ok(3), ok(4), ok(5), ok(6)],
        [ok(1), ok(0), ok(0), ok(0), ok(0), ok(0)],
    ]
    table = BehaviourTable.of(outcomes)
    assert table.classes[0][2] == TIMEOUT and table.classes[0][3:] == [UNKNOWN] * 3
    # A module that failed to load did run, and failed: every input is its error.
    broken = [CallOutcome("error", error=f"{LOAD_FAILED}: NameError: x")] * 6
    assert BehaviourTable.of([*outcomes, broken]).classes[4] == [ERROR] * 6
    chosen = agreement_pick(table, [()] * 4, support="similarity")
    assert set(chosen.group.members) == {1, 2}
    verdicts = {v.candidate: v for v in chosen.candidates}
    assert verdicts[0].crashes == 1  # the one call that hit the limit
    assert verdicts[0].weight == pytest.approx(2 / 3, abs=1e-4)  # values on 2 of 3 it ran
    groups = {g.members: g for g in chosen.groups}
    # Expected agreement counts only inputs both drafts ran: the stopped draft agrees with the
    # right pair on 2 of its 3 (weight 1 each), with itself on 2 of 3 (weight 2/3), and with
    # the wrong draft on 1 of 3.
    assert groups[(0,)].similarity == pytest.approx(4 / 9 + 2 / 3 + 2 / 3 + 1 / 3, abs=1e-5)
    assert groups[(1, 2)].similarity == pytest.approx(4 / 9 + 1 + 1 + 1 / 6, abs=1e-5)


def test_float_outputs_within_tolerance_are_one_behaviour() -> None:
    def ok(value: object) -> CallOutcome:
        return CallOutcome("ok", value)

    outcomes = [
        [ok(1.5), ok([0.1 + 0.2, 2.0]), ok({"m": 1 / 3})],
        [ok(1.5000000001), ok([0.3, 2.0]), ok({"m": 0.333333333})],
        [ok(1.51), ok([0.3, 2.0]), ok({"m": 1 / 3})],  # 1e-2 off: another output
        [ok(1.5), ok((0.3, 2.0)), CallOutcome("error", error="ValueError: x")],  # a tuple
    ]
    table = BehaviourTable.of(outcomes)
    c = table.classes
    assert c[0] == c[1]
    assert c[2][0] != c[0][0] and c[2][1:] == c[0][1:]
    assert c[3][0] == c[0][0] and c[3][1] != c[0][1] and c[3][2] == ERROR
    chosen = agreement_pick(table, [()] * 4)
    assert chosen.group.members == (0, 1)


def test_drafts_that_return_nothing_do_not_outvote_the_one_that_answers() -> None:
    """Two empty replies (every call raises NameError) crash the same way on every input; that
    is no shared answer. Before, they formed the heaviest group (the inputs they crash on
    looked invalid, so crashing cost no weight) and the pick was an empty draft, with equal
    votes and with each draft's prior alike (MBPP's mbpp_126_sum in the learned pick)."""

    def ok(value: object) -> CallOutcome:
        return CallOutcome("ok", value)

    empty = [CallOutcome("error", error="NameError: name 'sum' is not defined")] * 3
    table = BehaviourTable.of([[ok(6), ok(3), ok(1)], empty, empty])
    for priors, support in (
        (None, "group"),
        ([0.75, 0.79, 0.84], "similarity"),  # the empties' models estimated the more reliable
    ):
        chosen = agreement_pick(table, [()] * 3, priors=priors, support=support)
        assert chosen.chosen == 0 and chosen.eligible == (0,)
        assert "2 draft(s) that return a value on no shared input left out" in chosen.why
    # When no draft returns a value anywhere, nobody is left out.
    nothing = agreement_pick(BehaviourTable.of([empty, empty]), [()] * 2)
    assert nothing.eligible == (0, 1) and "left out" not in nothing.why
