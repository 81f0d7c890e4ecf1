"""Shared inputs for classes (agents.pick.inputs: sequences, sequence_seeds): call sequences on a
fresh instance from the spec's examples, the tests' call sites and their mutations, bounded
and deterministic; every draft run on them in one sandbox execution and compared per step.
Fixtures written for these tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codegen.agents.pick import agreement_pick, pick, run_on_shared_inputs
from codegen.agents.pick.inputs import CallSequence, Step, class_sequences, run_sequences
from codegen.agents.pick.inputs.sequence_seeds import example_sequences, suite_sequences
from codegen.agents.pick.inputs.sequences import SequenceBudget, step_outcomes
from codegen.agents.spec import Spec
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import CallOutcome
from codegen.sandbox.types import Limits

LIMITS = Limits(timeout_s=60, memory_mb=256)

TALLY = Spec.model_validate(
    {
        "purpose": "A running total.",
        "functions": [],
        "classes": [
            {
                "name": "Tally",
                "description": "Adds numbers up.",
                "constructor": "def __init__(self) -> None",
                "attributes": [{"name": "total", "type": "int", "description": "the sum"}],
                "methods": [
                    {
                        "name": "add",
                        "signature": "def add(self, n: int) -> int",
                        "description": "Adds n; returns the total so far.",
                    }
                ],
            }
        ],
        "behaviours": [],
        "edge_cases": [],
        "examples": [{"setup": ["t = Tally()"], "call": "t.add(5)", "expected": "5"}],
        "constraints": [],
    }
)
# The suite drives a sequence but only checks the first call's value and the type after it:
# every draft below passes it.
TALLY_TESTS = """from solution import Tally


def test_add_returns_the_amount():
    t = Tally()
    assert t.add(5) == 5


def test_several_adds_give_an_int():
    t = Tally()
    t.add(1)
    t.add(2)
    assert isinstance(t.add(3), int)
"""
# Forgets what came before: right on every call made on a fresh instance, wrong in a row.
FORGETS = """class Tally:
    def __init__(self):
        self.total = 0

    def add(self, n):
        self.total = n
        return n
"""
KEEPS_SUM = """class Tally:
    def __init__(self):
        self.total = 0

    def add(self, n):
        self.total += n
        return self.total
"""
KEEPS_ITEMS = """class Tally:
    def __init__(self):
        self.items = []

    @property
    def total(self):
        return sum(self.items)

    def add(self, n):
        self.items.append(n)
        return self.total
"""


def test_sequences_come_from_examples_tests_setups_and_fixtures() -> None:
    source = """
import pytest
from solution import Account

@pytest.fixture
def acct():
    return Account(10)

def test_fixture(acct):
    assert acct.deposit(5) == 15
    amount = 3
    acct.withdraw(amount)   # a name bound to a literal: the literal
    acct.deposit(len([1]))  # not a literal: the sequence ends before it
    acct.deposit(1)

def test_chain_and_raise():
    assert Account(1).balance == 1
    with pytest.raises(ValueError):
        Account(-1)

class TestAccount:
    def setUp(self):
        self.a = Account(100)

    def test_withdraw(self):
        self.assertEqual(self.a.withdraw(30), 70)
        self.assertEqual(self.a.balance, 70)
"""
    found = [[s.source("a") for s in steps] for steps in suite_sequences(source, ["Account"])]
    assert found == [
        ["a = Account(10)", "a.deposit(5)", "a.withdraw(3)"],
        ["a = Account(1)", "a.balance"],
        ["a = Account(-1)"],
        ["a = Account(100)", "a.withdraw(30)", "a.balance"],
    ]
    (steps,) = example_sequences(["c = LRU(2)", "c.put(1, 1)"], "c.get(1)", ["LRU"])
    assert steps == [
        Step("new", "LRU", (2,)),
        Step("call", "put", (1, 1)),
        Step("call", "get", (1,)),
    ]
    assert example_sequences([], "LRU(1).get(5)", ["LRU"]) == [
        [Step("new", "LRU", (1,)), Step("call", "get", (5,))]
    ]
    assert example_sequences(["k = 3", "c = LRU(k)"], "c.get(1)", ["LRU"]) == [
        [Step("new", "LRU", (3,)), Step("call", "get", (1,))]
    ]
    # A name bound to anything else (or rebound) is no literal.
    setup = ["k = 3", "k = f()", "c = LRU(2)", "items = [k, 1]"]
    assert example_sequences(setup, "c.put(items)", ["LRU"]) == []


def test_sequences_are_bounded_deterministic_and_read_the_specs_attributes() -> None:
    budget = SequenceBudget(max_sequences=12, max_mutations=8, max_steps=5)
    first = class_sequences(TALLY, TALLY_TESTS, budget)
    assert first == class_sequences(TALLY, TALLY_TESTS, budget)  # no clock, no global RNG
    assert [s.origin for s in first[:2]] == ["example", "test"]
    assert {s.origin for s in first[2:]} == {"mutation"} and len(first) <= 12
    assert all(s.steps[0] == Step("new", "Tally") for s in first)
    assert all(s.steps[-1] == Step("attr", "total") and len(s.steps) <= 5 for s in first)
    assert first[1].source() == "obj = Tally(); obj.add(1); obj.add(2); obj.add(3); obj.total"
    other = class_sequences(TALLY, TALLY_TESTS, SequenceBudget(max_steps=5, seed=1))
    assert [s.key() for s in other] != [s.key() for s in first][: len(other)]


def test_a_class_with_no_call_anywhere_gets_one_from_its_signatures() -> None:
    bare = TALLY.model_copy(update={"examples": []})
    (seed, *mutated) = class_sequences(bare, "", SequenceBudget(max_mutations=3))
    assert seed.origin == "signature"
    assert seed.steps == (Step("new", "Tally"), Step("call", "add", (1,)), Step("attr", "total"))
    assert len(mutated) == 3


def test_untyped_parameters_take_the_type_their_param_line_gives() -> None:
    method = {
        "name": "add_all",
        "signature": "def add_all(self, words, flag)",
        "description": "Adds each.\n:param words: a list of strings\n:param flag: bool",
    }
    cls = {**TALLY.classes[0].model_dump(), "methods": [method]}
    spec = Spec.model_validate({**TALLY.model_dump(), "examples": [], "classes": [cls]})
    (seed, *_) = class_sequences(spec, "", SequenceBudget(max_mutations=0))
    assert seed.steps[1] == Step("call", "add_all", (["a"], False))
    untyped = {**method, "description": "Adds each."}  # no type anywhere: left out
    cls = {**cls, "methods": [untyped]}
    spec = Spec.model_validate({**spec.model_dump(), "classes": [cls]})
    assert class_sequences(spec, "", SequenceBudget(max_mutations=0))[0].steps[1:] == (
        Step("attr", "total"),
    )


def test_an_example_may_use_an_instance_it_never_makes() -> None:
    # A docstring shows ``t.add(5)`` (or a static call on the class) without ``t = Tally()``:
    # Tally is the spec's one class made without arguments, so a fresh one stands in.
    examples = [
        {"setup": ["t.add(2)"], "call": "t.add(5)", "expected": "7"},
        {"setup": [], "call": "Tally.add(5)", "expected": "5"},
        {"setup": [], "call": "math.floor(5)", "expected": "5"},  # not its member
    ]
    spec = Spec.model_validate({**TALLY.model_dump(), "examples": examples})
    found = [s.steps for s in class_sequences(spec, "", SequenceBudget(max_mutations=0))]
    new, read = Step("new", "Tally"), Step("attr", "total")
    assert found[:2] == [
        (new, Step("call", "add", (2,)), Step("call", "add", (5,)), read),
        (new, Step("call", "add", (5,)), read),
    ]
    assert all(s[0] == new for s in found)  # no sequence from math.floor
    assert example_sequences(["t.add(2)"], "t.add(5)", ["Tally"]) == []  # nothing implied


def test_a_steps_outcome_is_its_own_and_a_failed_sequence_fails_every_step() -> None:
    ok = CallOutcome("ok", [["ok", None], ["error", "KeyError: 3"], ["ok", (1, 2)]])
    assert [o.status for o in step_outcomes(ok, 3)] == ["ok", "error", "ok"]
    assert step_outcomes(ok, 3)[2].value == (1, 2)
    timeout = CallOutcome("timeout", error="time limit")
    assert step_outcomes(timeout, 2) == [timeout, timeout]
    forged = step_outcomes(CallOutcome("ok", "all good"), 2)  # a draft that answered otherwise
    assert {o.status for o in forged} == {"error"}


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    sandbox = open_sandbox("docker", pool_size=1)
    yield sandbox
    sandbox.close()


@pytest.mark.docker
def test_sequences_split_drafts_that_agree_on_every_single_call(box: Sandbox) -> None:
    codes = [FORGETS, KEEPS_SUM, KEEPS_ITEMS]  # the wrong draft first: the earliest wins ties
    shared = run_on_shared_inputs(box, codes, TALLY, TALLY_TESTS, LIMITS)
    singles = sorted(
        {(s.kind, s.name, s.args) for seq in class_sequences(TALLY, TALLY_TESTS) for s in seq.steps}
        - {("new", "Tally", ())}
    )
    # Each call on a fresh instance: the three drafts are one behaviour.
    fresh = [
        CallSequence((Step("new", "Tally"), Step(*s), Step("attr", "total")), "test")
        for s in singles
    ]
    alone = run_sequences(box, codes, fresh, LIMITS, 0.25, 3.0, 1)
    assert alone.classes[0] == alone.classes[1] == alone.classes[2]
    assert len(alone.classes[0]) == 3 * len(fresh) and min(alone.classes[0]) >= 0
    # The same calls in a row on one instance tell the draft that forgets apart.
    table = shared.table
    assert shared.entry_point == "Tally" and len(shared.inputs) == table.inputs
    assert table.classes[1] == table.classes[2] != table.classes[0]
    split = [i for i in shared.inputs if "obj.add(1); obj.add(2)" in i.text]
    assert split and split[0].origin == "test"
    rows, trusted = [(True, True, True)] * 3, [True, False, False]  # all pass the suite
    assert pick(rows, trusted).chosen == 0  # verdicts alone: one group, the earliest draft
    chosen = agreement_pick(table, rows, trusted)
    assert chosen.chosen == 1 and chosen.group.members == (1, 2)
    assert [g.members for g in chosen.groups] == [(1, 2), (0,)]
    assert chosen.splitting and "obj.add" in shared.inputs[chosen.splitting[0].input].text


def test_a_suite_nested_past_the_visitors_depth_loses_that_test_only() -> None:
    deep = "x" + ".y" * 2000  # parses; visiting it recursively would overflow the stack
    source = f"def test_deep():\n    c = C(1)\n    c.m({deep})\n\n\ndef test_ok():\n    C(2).m(3)\n"
    assert suite_sequences(source, ["C"]) == [[Step("new", "C", (2,)), Step("call", "m", (3,))]]
    assert example_sequences([f"c = C({deep})"], "c.m(1)", ["C"]) == []


def test_a_constructor_whose_parameters_all_have_defaults_is_called_with_none() -> None:
    untyped = TALLY.model_copy(update={"examples": []})
    untyped.classes[0] = untyped.classes[0].model_copy(
        update={"constructor": "def __init__(self, label=None)"}
    )
    (seed, *_) = class_sequences(untyped, "", SequenceBudget(max_mutations=0))
    assert seed.steps[:2] == (Step("new", "Tally"), Step("call", "add", (1,)))
