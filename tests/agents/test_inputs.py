"""Shared inputs for output agreement (agents.pick.inputs): examples, call sites, bounded
mutation."""

from __future__ import annotations

import json

from codegen.agents.pick.inputs import (
    InputBudget,
    bracket_end,
    call_sites,
    inputs_for,
    params_of,
    stated_bounds,
)
from codegen.agents.pick.inputs.functions import assigned_calls, text_calls
from codegen.agents.pick.inputs.seeds import Bound

TESTS = """
from solution import second_largest
import solution


def test_basic():
    assert second_largest([4, 1, 3]) == 3
    assert solution.second_largest([10, 20]) == 10


def test_not_literal():
    xs = [1, 2]
    assert second_largest(xs) == 1            # a name: not an input
    assert second_largest(list(range(3))) == 1  # a call: not an input
    assert second_largest([1, 2], key=len) == 1  # keywords: not an input
    assert second_largest((1, 2)) == 1          # a tuple does not cross as JSON
"""


def test_call_sites_are_the_literal_calls_of_the_entry_point() -> None:
    assert call_sites(TESTS, "second_largest") == [([4, 1, 3],), ([10, 20],)]
    assert call_sites("second_largest([1, 2, 2])", "second_largest") == [([1, 2, 2],)]
    assert call_sites("def broken(:", "second_largest") == []


def test_examples_then_tests_then_mutations_bounded_and_deterministic() -> None:
    budget = InputBudget(max_inputs=30, max_mutations=25, seed=3)
    got = inputs_for("second_largest", ["second_largest([1, 3, 2])"], [TESTS], budget)
    origins = [i.origin for i in got]
    assert origins[:3] == ["example", "test", "test"]
    assert set(origins[3:]) == {"mutation"} and len(got) == 28
    assert got[0].args == ([1, 3, 2],)
    keys = [i.key() for i in got]
    assert len(set(keys)) == len(keys)  # no repeats
    for item in got[3:]:  # the type structure is kept: one list of ints
        [xs] = item.args
        assert isinstance(xs, list) and all(type(x) is int for x in xs)
        assert all(abs(x) <= 2 * 20 + 10 for x in xs)  # within the seeds' magnitude
        assert len(json.dumps(list(item.args))) <= budget.max_chars
    again = inputs_for("second_largest", ["second_largest([1, 3, 2])"], [TESTS], budget)
    assert [i.args for i in again] == [i.args for i in got]
    other = inputs_for(
        "second_largest", ["second_largest([1, 3, 2])"], [TESTS], InputBudget(seed=4)
    )
    assert [i.args for i in other] != [i.args for i in got]
    # Duplicates and reorderings appear: what splits sorted(xs)[-2] from the right answer.
    assert any(len(set(i.args[0])) < len(i.args[0]) for i in got)


def test_strings_dicts_and_floats_keep_their_types() -> None:
    calls = ["f('abba', {'a': 1.5}, True)"]
    got = inputs_for("f", calls, [], InputBudget(max_mutations=20))
    for item in got:
        s, d, flag = item.args
        assert isinstance(s, str) and set(s) <= set("ab") and len(s) <= 40
        assert isinstance(d, dict) and all(isinstance(v, float) for v in d.values())
        assert isinstance(flag, bool)
    assert len(got) > 10


def test_no_seed_no_input() -> None:
    assert inputs_for("f", [], ["assert g(1) == 2"]) == []


# A docstring whose worked examples are not ``>>>`` lines: no (call, expected) pair parses,
# but the calls and the parameter values written in it are inputs all the same.
PROSE = '''
def binary_digits(n: int, prefix):
    """Write n in binary between two copies of prefix.

    Examples:
        binary_digits(15, "db")   # returns "db1111db"
        for binary_digits(2, "x") == "x10x"
        mybinary_digits(3, "no") is another function

    Example 1:
        Input: n = 5, prefix = "ab"
        Output: "ab101ab"
    For n = 6 the output needs a prefix too.
    """
'''


def test_calls_and_parameter_values_written_in_prose_are_inputs() -> None:
    params = params_of(PROSE, "binary_digits")
    assert params == ["n", "prefix"]
    assert params_of("def binary_digits(n: int, prefix) -> str", "binary_digits") == params
    assert text_calls(PROSE, "binary_digits") == [(15, "db"), (2, "x")]
    # ``For n = 6`` gives one of two parameters: not a call.
    assert assigned_calls(PROSE, params) == [(5, "ab")]
    assert assigned_calls("Input: 3\nOutput: (1, 2)", ["n"]) == [(3,)]
    got = inputs_for("binary_digits", [], [], InputBudget(max_mutations=4), [PROSE], PROSE)
    assert [(i.args, i.origin) for i in got[:3]] == [
        ((15, "db"), "docstring"),
        ((2, "x"), "docstring"),
        ((5, "ab"), "docstring"),
    ]
    assert {i.origin for i in got[3:]} == {"mutation"} and len(got) == 7


def test_a_task_with_no_call_anywhere_gets_seeds_from_its_signature() -> None:
    from codegen.agents.pick.inputs.functions import signature_seeds

    seeds = signature_seeds("def f(n: int, words: List[str], grid):", "f")
    assert len(seeds) == 5 and seeds[2] == (2, ["ab", "c"], [[0]])
    assert signature_seeds("def f(s, lst):", "f")[1] == ("a", [1])
    assert signature_seeds("def f(mystery):", "f") == []  # an unknown type: no seed
    got = inputs_for("f", [], [], InputBudget(max_mutations=3), signature="def f(n: int): ...")
    assert [i.origin for i in got] == ["signature"] * 5 + ["mutation"] * 3
    # A call anywhere wins: the signature adds nothing then.
    got = inputs_for("f", ["f(7)"], [], InputBudget(max_mutations=0), signature="def f(n: int):")
    assert [(i.args, i.origin) for i in got] == [((7,), "example")]


def test_bracket_end_skips_brackets_in_strings_and_says_when_nothing_closes() -> None:
    assert bracket_end("f([1, (2)], {3: 4}) == 5", 1) == len("f([1, (2)], {3: 4})")
    # Brackets and the other quote inside a string do not count.
    assert bracket_end("""f(")", '(]', "it's") + 1""", 1) == len("""f(")", '(]', "it's")""")
    # An escaped quote stays inside its string; an escaped backslash does not escape it.
    assert bracket_end(r'f("a\")") == 1', 1) == len(r'f("a\")")')
    assert bracket_end(r'f("a\\", 2) == 1', 1) == len(r'f("a\\", 2)')
    # A string opened at ``start`` ends at its closing quote.
    assert bracket_end("'a(b' rest", 0) == len("'a(b'")
    # Unterminated: an open bracket or string, or the close past ``stop``.
    assert bracket_end("f((1)", 1) == -1
    assert bracket_end("f(')", 1) == -1
    assert bracket_end("f(1, 2)", 1, stop=6) == -1
    assert bracket_end("f(1, 2)", 1, stop=7) == 7


def test_a_call_on_a_string_of_brackets_is_read_whole() -> None:
    # HumanEval/56, /119 and /132 write such calls; a bracket in a string is not the call's.
    prose = 'is_nested("[]]") ➞ False\nis_nested("[[]][[") ➞ True'
    assert text_calls(prose, "is_nested") == [("[]]",), ("[[]][[",)]


RANGED = '''
def top(arr, k):
    """The k largest of arr, sorted.
    Example: top([3, 1, 2], 2) == [2, 3]
    Note:
        1. 1 <= len(arr) <= 5
        2. 0 <= k <= len(arr)
        3. 1 <= arr.length, 0 <= x (not parameters)
    """
'''


def test_mutations_keep_to_the_ranges_the_prompt_states() -> None:
    assert stated_bounds(RANGED, ["arr", "k"]) == [
        Bound(param=0, of_length=True, low=1, high=5),
        Bound(param=1, of_length=False, low=0, high_length_of=0),
    ]
    assert stated_bounds("Constraints: 0 ≤ N ≤ 10^3.", ["N"]) == [Bound(0, False, 0, 1000)]
    # A call that leaves the bounded parameter to its default keeps to it.
    assert Bound(param=2, of_length=False, low=0, high_length_of=3).holds([1, 2])
    budget = InputBudget(max_mutations=30)
    ranged = inputs_for("top", ["top([3, 1, 2], 2)"], [], budget, [RANGED], RANGED)
    mutated = [i.args for i in ranged if i.origin == "mutation"]
    assert len(mutated) == 30
    assert all(1 <= len(arr) <= 5 and 0 <= k <= len(arr) for arr, k in mutated)
    # The same seed without the stated ranges: its mutations leave them.
    free = inputs_for("top", ["top([3, 1, 2], 2)"], [], budget, [], RANGED)
    assert any(not 0 <= k <= len(arr) for arr, k in [i.args for i in free][1:])
