"""Replies that echo their prompt before the answer (instruction-tuned models, as replayed from
ClassEval's published outputs): the skeleton with docstring-only methods, a response marker,
then the class filled in. The reader takes the answer, not the echo's empty methods, even
when the echo is the longer code (its docstrings keep the doctest lines the answer drops)."""

from __future__ import annotations

import ast

import pytest

from codegen.agents.replies import RESPONSE_MARKERS, AgentOutputError, extract_module, extract_tests
from codegen.agents.replies.extract import after_prompt_echo
from codegen.evaluation.classeval.tasks import extract_code

SKELETON = '''import math

class Meter:
    """
    Keeps a running total of readings.
    """

    def __init__(self):
        """
        Start at zero.
        """
        self.total = 0

    def add(self, value):
        """
        Add a reading.
        :param value: float
        >>> m = Meter()
        >>> m.add(2.5)
        >>> m.total
        2.5
        """

    def root(self):
        """
        The square root of the total.
        >>> m = Meter()
        >>> m.add(9)
        >>> m.root()
        3.0
        """
'''

ANSWER = '''import math

class Meter:
    """
    Keeps a running total of readings.
    """

    def __init__(self):
        self.total = 0

    def add(self, value):
        self.total += value

    def root(self):
        return math.sqrt(self.total)
'''

CLASSES = {"Meter": ["__init__", "add", "root"]}


def _echo(marker: str, answer: str) -> str:
    return (
        "You are a helpful coding assistant.\n\n@@ Instruction:\n"
        f"Please complete the class Meter in the following code.\n{SKELETON}\n{marker}\n{answer}"
    )


def _stubs(code: str) -> list[str]:
    """The methods of ``code`` whose body is only a docstring."""
    tree = ast.parse(code)
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in node.body)
    ]


def test_the_echo_is_the_longer_code_here() -> None:
    # The shape that fooled the reader: without the marker cut, the longest parsing run of
    # lines is the echo, whose methods are empty.
    assert len(SKELETON) > len(ANSWER)
    assert _stubs(SKELETON) == ["add", "root"]


@pytest.mark.parametrize("marker", RESPONSE_MARKERS)
def test_a_bare_answer_after_an_echoed_prompt_is_read(marker: str) -> None:
    parsed = extract_module(_echo(marker, ANSWER), [], CLASSES)
    assert parsed.code == ANSWER
    assert _stubs(parsed.code) == []
    assert "read after the echoed prompt's response marker" in parsed.notes


def test_a_fenced_answer_after_an_echoed_prompt_is_read() -> None:
    reply = _echo("### Response:", f"Here it is:\n```python\n{ANSWER}```\n")
    assert extract_module(reply, [], CLASSES).code == ANSWER


def test_the_authors_extraction_reads_the_same_answer() -> None:
    # One list of markers for both readers: the authors' cut lands on the same class.
    reply = _echo("@@ Response:", ANSWER)
    assert ast.dump(ast.parse(extract_code(reply))) == ast.dump(ast.parse(ANSWER))


def test_a_marker_with_no_code_after_it_reads_the_whole_reply() -> None:
    reply = f"```python\n{ANSWER}```\n\n### Response: that is all."
    parsed = extract_module(reply, [], CLASSES)
    assert parsed.code == ANSWER
    assert not any("echoed" in note for note in parsed.notes)


def test_a_reply_without_a_marker_has_no_answer_part() -> None:
    assert after_prompt_echo(f"```python\n{ANSWER}```") is None
    assert after_prompt_echo("[/INST]   \n\n") is None
    assert after_prompt_echo("a [/INST] b ### Response:\n\nc\n") == "c"


def test_an_echo_with_no_code_after_it_is_read_whole_as_before() -> None:
    # Nothing to prefer: the reply is read as it always was (here: the echo's skeleton).
    parsed = extract_module(_echo("@@ Response:", "I cannot help with that."), [], CLASSES)
    assert _stubs(parsed.code) == ["add", "root"]
    assert not any("echoed" in note for note in parsed.notes)


def test_nothing_usable_anywhere_still_says_what_was_wrong() -> None:
    with pytest.raises(AgentOutputError, match="Meter"):
        extract_module("Sure.\n[/INST]\nI cannot help with that.", [], CLASSES)


def test_the_test_designers_echo_is_cut_too() -> None:
    tests = "from solution import Meter\n\ndef test_add():\n    m = Meter()\n    m.add(1)\n"
    stub = "def test_add():\n    pass\n\ndef test_root():\n    '''Check the root.'''\n"
    reply = f"Write tests.\n{stub}\n### Response:\n{tests}"
    parsed = extract_tests(reply)
    assert parsed.code == tests
