"""Model output built to break the host's parsers: code nested past CPython's parser and AST
limits (MemoryError, RecursionError from ``ast.parse``) and JSON nested past the recursion
limit. Each is the reply's ordinary one-line failure (AgentOutputError) or is skipped, never an
exception that ends the request, and parsing keeps working afterwards."""

from __future__ import annotations

import pytest

from codegen.agents.replies import (
    AgentOutputError,
    extract_json,
    extract_module,
    extract_tests,
    parse_python,
)
from codegen.agents.spec import Example, Spec
from codegen.agents.suite import spec_example_tests, without_tests

# Each raises MemoryError or RecursionError from a bare ast.parse on CPython 3.11.
DEEP_CODE = {"parser-overflow": "-" * 20_000 + "1", "deep-ast": "a" + ".b" * 20_000}
FUNCTIONS = [("f", "def f()")]


@pytest.mark.parametrize("code", DEEP_CODE.values(), ids=DEEP_CODE.keys())
def test_deep_code_is_a_syntax_error_to_every_reader(code: str) -> None:
    with pytest.raises(SyntaxError, match="nested too deeply"):
        parse_python(code)
    fenced = f"```python\n{code}\n```"
    with pytest.raises(AgentOutputError, match="nested too deeply"):
        extract_module(fenced, FUNCTIONS)
    with pytest.raises(AgentOutputError, match="nested too deeply"):
        extract_tests(fenced)
    with pytest.raises(AgentOutputError):
        extract_module(code, FUNCTIONS)  # bare code, then code-in-prose search
    assert without_tests(code, ["test_x"], ["test_x"]) == code
    spec = Spec(
        purpose="p",
        functions=[{"name": "f", "signature": "f()", "description": "d"}],
        behaviours=[],
        edge_cases=[],
        examples=[Example(call=code, expected="1"), Example(call="f()", expected="1")],
        constraints=[],
    )
    tests = spec_example_tests(spec)  # the deep example skipped, the plain one kept
    assert "test_spec_example_1" in tests and "test_spec_example_0" not in tests
    # The parser's state is intact afterwards.
    assert extract_module("```python\ndef f():\n    return 1\n```", FUNCTIONS).code.strip()


def test_deeply_nested_json_is_no_json_object() -> None:
    nested = "[" * 20_000 + "]" * 20_000
    for reply in (nested, '{"purpose": ' + nested + "}", f"Here:\n```json\n{nested}\n```"):
        with pytest.raises(AgentOutputError, match="not valid JSON"):
            extract_json(reply)
    assert extract_json('{"a": [1]}') == '{"a": [1]}'
