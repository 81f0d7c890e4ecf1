"""Worked examples a prompt writes outside doctest, as the importer derives them (a fixture
prompt in HumanEval's prose styles; no shared data is read)."""

from __future__ import annotations

from codegen.agents.spec import Spec
from codegen.evaluation.humaneval import Problem
from codegen.replay.derived import derived_spec, derived_tests, prompt_examples
from codegen.replay.examples import written_examples

DOC = """
    Examples
    any_int(5, 2, 7) ➞ True
    * any_int(3, 2, 2) => False
    for any_int(1, 1, 1) == False
    any_int(3, -2, 1) should return True.
    any_int('a', 1) returns "x" # a remark
    >>> any_int(0, 0, 0) == True
    any_int(2, 2) ==> (None, 1)
    any_int(4, 4, 4) = [1, 2]
    any_int(x, 1, 2) ➞ True
    any_int(1, 2, 3) == 1 + 2 = 3
    not_it(1) ➞ True
"""


def test_prose_examples_are_read_exactly_or_not_at_all() -> None:
    assert written_examples(DOC, "any_int") == [
        ("any_int(5, 2, 7)", "True"),
        ("any_int(3, 2, 2)", "False"),
        ("any_int(1, 1, 1)", "False"),
        ("any_int(3, -2, 1)", "True"),
        ("any_int('a', 1)", "'x'"),
        ("any_int(0, 0, 0)", "True"),
        ("any_int(2, 2)", "(None, 1)"),
        ("any_int(4, 4, 4)", "[1, 2]"),
    ]


def test_importer_derives_prose_examples_when_the_docstring_has_no_doctest() -> None:
    prompt = f'def any_int(x, y, z):\n    """Is one the sum of the others?\n{DOC}    """\n'
    problem = Problem(
        task_id="Fixture/1", prompt=prompt, entry_point="any_int", canonical_solution="", test=""
    )
    spec = Spec.model_validate(derived_spec(problem))
    assert ("any_int(5, 2, 7)", "True") in [(e.call, e.expected) for e in spec.examples]
    assert "assert any_int(3, -2, 1) == True" in derived_tests(problem)
    # With doctest examples, those alone (as before).
    doctest = prompt.replace("Examples\n", "Examples\n    >>> any_int(9, 4, 5)\n    True\n\n")
    problem = Problem(
        task_id="Fixture/2", prompt=doctest, entry_point="any_int", canonical_solution="", test=""
    )
    spec = Spec.model_validate(derived_spec(problem))
    assert [(e.call, e.expected) for e in spec.examples] == [("any_int(9, 4, 5)", "True")]


SEQUENCE_DOC = """
    The sequence is defined by the recurrence:
    seq(0) = 2
    seq(n) = 2 * seq(n - 1) + 1, if n > 0.
    For example:
    seq(1) = 2 * 2 + 1 = 5
    seq(2) = 11
    Return the first n + 1 terms as a list.
    Examples:
    seq(2) = [2, 5, 11]
    seq(0) ➞ [2]
"""


def test_values_of_a_formula_are_not_examples_of_the_function() -> None:
    # seq(0) = 2 and seq(2) = 11 are terms of the recurrence; the function returns a list.
    assert written_examples(SEQUENCE_DOC, "seq") == [("seq(2)", "[2, 5, 11]"), ("seq(0)", "[2]")]
    # With no heading after the formula, no bare "=" line is an example; other styles still are.
    no_heading = SEQUENCE_DOC.replace("    Examples:\n", "").replace("    For example:\n", "")
    assert written_examples(no_heading, "seq") == [("seq(0)", "[2]")]
    # Without a formula a bare "=" line is an example wherever it stands.
    plain = "    seq(3) = [2, 5, 11, 23]\n    Examples:\n    seq(1) = [2, 5]\n"
    # "e.g." opens an example line as a heading does.
    inline = no_heading + "    e.g. seq(1) = [2, 5]\n"
    assert written_examples(inline, "seq") == [("seq(0)", "[2]"), ("seq(1)", "[2, 5]")]
    assert written_examples(plain, "seq") == [("seq(3)", "[2, 5, 11, 23]"), ("seq(1)", "[2, 5]")]


VALUES_DOC = """
    Examples:
    For lst = [1,2,3], k = 2 the output should be 6.
    For lst = [],  k = 0, the sum is nothing and the result should be 0
    For lst = [4] the output should be 4
    For lst = [5], k = 1 the output should be a number
    Example 1:
        Input: lst = [-3, 4], k = 1
        Output: [4] # the largest one
        Explanation: k = 1 keeps one.
    Example 2:
        Input:
            lst : [1, 1]
            k : 2
        Output: 2
    Constraints:
        Output: always a list
"""


def test_examples_given_as_parameter_values_need_every_parameter() -> None:
    assert written_examples(VALUES_DOC, "top", ["lst", "k"]) == [
        ("top([1, 2, 3], 2)", "6"),
        ("top([], 0)", "0"),
        ("top([-3, 4], 1)", "[4]"),
    ]
    # Without the signature's parameters no value line is a call.
    assert written_examples(VALUES_DOC, "top") == []
    # One parameter: a bare ``Input:`` value is its value.
    one = "    Example:\n        Input: [4,2,3]\n        Output: [2, 1]\n"
    assert written_examples(one, "pluck", ["arr"]) == [("pluck([4, 2, 3])", "[2, 1]")]


def test_importer_derives_examples_given_as_parameter_values() -> None:
    prompt = f'def top(lst, k):\n    """The k largest.\n{VALUES_DOC}    """\n'
    problem = Problem(
        task_id="Fixture/3", prompt=prompt, entry_point="top", canonical_solution="", test=""
    )
    spec = Spec.model_validate(derived_spec(problem))
    assert [(e.call, e.expected) for e in spec.examples][-1] == ("top([-3, 4], 1)", "[4]")
    assert "assert top([1, 2, 3], 2) == 6" in derived_tests(problem)


def test_doctest_examples_are_read_as_the_prompt_writes_them() -> None:
    # An escaped newline inside an example stays one line, and a remark after the call
    # cannot turn the derived assertion into a bare truth test.
    prompt = r'''def half(x):
    """Half of x, or of a text's length.
    >>> half('ab\ncd')
    2.5
    >>> round(half(3), 1)  # rounded
    1.5
    """
'''
    problem = Problem(
        task_id="Fixture/4", prompt=prompt, entry_point="half", canonical_solution="", test=""
    )
    assert prompt_examples(problem) == [(r"half('ab\ncd')", "2.5"), ("round(half(3), 1)", "1.5")]
    assert "assert round(half(3), 1) == 1.5" in derived_tests(problem)
    # A docstring that is not one triple-quoted literal is read as Python reads it.
    one_line = Problem(
        task_id="Fixture/5",
        prompt='def half(x):\n    ">>> half(3)\\n1.5"\n',
        entry_point="half",
        canonical_solution="",
        test="",
    )
    assert prompt_examples(one_line) == [("half(3)", "1.5")]
