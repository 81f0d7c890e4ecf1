"""Worked examples a prompt writes outside doctest, as the importer derives them (a fixture
prompt in HumanEval's prose styles; no shared data is read)."""

from __future__ import annotations

from codegen.agents.spec import Spec
from codegen.evaluation.humaneval import Problem
from codegen.replay.examples import written_examples
from codegen.replay.importers import derived_spec, derived_tests

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
