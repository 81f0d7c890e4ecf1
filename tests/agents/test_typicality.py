"""The tie-break inside a behaviour group (``agents.pick.typical``): drafts that every check and
shared input leaves equal are told apart by how like the other drafts their code is; a more
reliable model still comes first; a stored record decides the same again."""

from __future__ import annotations

import json

from codegen.agents.pick import (
    CONFIG,
    NONE,
    BehaviourTable,
    CandidateRun,
    Selection,
    SharedInput,
    UsedReliability,
    decide,
    most_typical,
    record,
    repick,
    typicality,
)

STACK = """class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()
"""
# The same class with one name changed: a near twin of STACK.
TWIN = STACK.replace("items", "elements")
# Behaves the same on a fresh push/pop, written another way.
ODD = """class Stack:
    def __init__(self):
        self._head = None

    def push(self, item):
        self._head = (item, self._head)

    def pop(self):
        item, self._head = self._head
        return item
"""


def test_the_odd_draft_out_is_the_least_typical() -> None:
    scores = typicality([ODD, STACK, TWIN])
    assert scores[0] < min(scores[1], scores[2])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert typicality([STACK]) == [0.0] and typicality(["", ""]) == [0.0, 0.0]
    assert most_typical([0, 1, 2], scores) in (1, 2)
    # A more reliable member wins over a more typical one.
    assert most_typical([0, 1, 2], scores, priors=[0.9, 0.5, 0.5]) == 0


def _record(used: list[UsedReliability], typical: list[float] | None) -> Selection:
    """Three drafts with the same outputs on two shared inputs and the same example verdict."""
    table = BehaviourTable([[0, 0]] * 3, [{0: "1"}, {0: "2"}])
    names = ["test_solution.py::test_spec_example_0"]
    rows = [(True,)] * 3
    base = Selection(
        chosen=0,
        why="",
        trusted_tests=names,
        candidates=[
            CandidateRun(
                i,
                "",
                1,
                1,
                {names[0]: True},
                10,
                None,
                classes=table.classes[i],
                typicality=None if typical is None else typical[i],
            )
            for i in range(3)
        ],
        inputs=[SharedInput(str(k), "mutation", table.labels[k]) for k in range(2)],
        reliabilities=used,
    )
    return record(base, decide(table, names, rows, [True], used, typical), names)


def test_the_most_typical_member_of_the_winning_group_is_picked_and_decided_again() -> None:
    none = [UsedReliability(i, "m @ http://m/v1", None, NONE) for i in range(3)]
    typical = typicality([ODD, STACK, TWIN])
    first = _record(none, typical)
    assert first.chosen in (1, 2) and "most typical of the 3" in first.why
    stored = Selection.from_dict(json.loads(json.dumps(first.to_dict())))
    assert [c.typicality for c in stored.candidates] == typical
    again = repick(stored, none)
    assert again is not None and (again.chosen, again.why) == (first.chosen, first.why)
    # A record from before typicality was kept: the earliest draft, as the rule had it.
    assert _record(none, None).chosen == 0
    # With reliabilities, the most reliable member first, however odd its code.
    trusted = [
        UsedReliability(i, f"m{i} @ http://m/v1", p, CONFIG) for i, p in enumerate((0.9, 0.5, 0.5))
    ]
    assert _record(trusted, typical).chosen == 0
