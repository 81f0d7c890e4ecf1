"""Replies as real models send them (agents.replies): fixtures written in the shapes of real
chat replies (no fence, untagged fences, spread definitions, usage blocks, body-only)."""

from __future__ import annotations

import json
import time

import pytest

from codegen.agents.replies import AgentOutputError, extract_json, extract_module, extract_tests

FRACTION = [("truncate_number", "def truncate_number(number: float) -> float")]
PREFIXES = [("all_prefixes", "all_prefixes(string: str) -> List[str]:")]


def run(code: str, call: str) -> object:
    # Parsed fixture code is ours, not a model's: it is safe to execute here.
    namespace: dict[str, object] = {}
    exec(compile(code, "solution.py", "exec"), namespace)
    return eval(call, namespace)


def test_reasoning_is_dropped_and_the_fence_needs_no_language_tag() -> None:
    reply = (
        "<think>Maybe ```python\ndef truncate_number(x): return 0\n``` no.</think>\n"
        "```\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```"
    )
    parsed = extract_module(reply, FRACTION)
    assert "return 0" not in parsed.code and run(parsed.code, "truncate_number(3.5)") == 0.5
    # Servers that strip the opening tag still send the closing one.
    unopened = "I should use modulo.</think>def truncate_number(n):\n    return n % 1.0\n"
    assert run(extract_module(unopened, FRACTION).code, "truncate_number(2.25)") == 0.25


def test_definitions_spread_over_blocks_are_merged_and_usage_ignored() -> None:
    reply = """First a helper:

```py
import math

def is_square(n: int) -> bool:
    return math.isqrt(n) ** 2 == n
```

Then the function itself, which uses it:

```python
def count_squares(values: list[int]) -> int:
    return sum(is_square(v) for v in values)

print(count_squares([1, 2, 4]))
assert count_squares([]) == 1
if __name__ == "__main__":
    count_squares(input())
```

Example:

```python
count_squares([9, 10])
```

Output:

```
2
```"""
    parsed = extract_module(reply, [("count_squares", "def count_squares(values)")])
    assert "2 fenced blocks merged" in parsed.how
    assert "print(" not in parsed.code and "assert" not in parsed.code
    assert "__main__" not in parsed.code and "[9, 10]" not in parsed.code
    assert run(parsed.code, "count_squares([1, 2, 4, 9])") == 3


def test_bare_code_and_code_in_prose_are_the_code() -> None:
    bare = "def add(a: int, b: int) -> int:\n    return a + b"
    assert extract_module(bare, [("add", "def add(a, b)")]).how == "bare code"
    prose = "Sure! Here it is:\n\ndef add(a, b):\n    return a + b\n\nIt adds the numbers."
    parsed = extract_module(prose, [("add", "def add(a, b)")])
    assert parsed.how == "code in prose" and run(parsed.code, "add(2, 3)") == 5


def test_body_only_replies_are_attached_to_the_spec_signature() -> None:
    fenced = "```python\n    return number - int(number)\n```"
    parsed = extract_module(fenced, FRACTION)
    assert parsed.how == "body attached to the spec's signature"
    assert parsed.code.startswith("def truncate_number(number: float) -> float:\n")
    assert run(parsed.code, "truncate_number(1.75)") == 0.75
    bare = (
        "    result = []\n    for i in range(len(string)):\n"
        "        result.append(string[: i + 1])\n    return result"
    )
    parsed = extract_module(bare, PREFIXES)
    # The signature's List was in the prompt the model saw, never in its reply.
    assert "from typing import List" in parsed.code
    assert run(parsed.code, "all_prefixes('ab')") == ["a", "ab"]


def test_standard_modules_used_but_not_imported_get_their_import() -> None:
    reply = "```python\ndef hyp(a, b):\n    return math.sqrt(a * a + b * b)\n```"
    parsed = extract_module(reply, [("hyp", "def hyp(a, b)")])
    assert parsed.code.startswith("import math\n") and "added missing import math" in parsed.notes
    assert run(parsed.code, "hyp(3, 4)") == 5.0
    # A name the code binds itself is left alone.
    own = "```python\nmath = None\ndef f():\n    return math\n```"
    assert "import math" not in extract_module(own, [("f", "def f()")]).code


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "empty"),
        ("<think>only thinking</think>", "empty"),
        ("I cannot help with that.", "no Python code found"),
        ("```python\ndef oops(:\n```", "none of the 1 fenced block"),
        ("```python\ndef other():\n    return 1\n```", "no fenced block defines add"),
        ("x" * 300_000, "limit is 200000"),
    ],
)
def test_no_usable_code_is_a_contract_violation_saying_what_was_wrong(
    reply: str, message: str
) -> None:
    with pytest.raises(AgentOutputError, match=message):
        extract_module(reply, [("add", "def add(a, b)")])


def test_hostile_prose_is_bounded() -> None:
    reply = "\n".join(f"def f{i}(" for i in range(5000))
    started = time.perf_counter()
    with pytest.raises(AgentOutputError):
        extract_module(reply, [("f", "def f()")])
    assert time.perf_counter() - started < 30  # bounded work, not a timing target


def test_the_test_designer_block_is_the_one_with_test_functions() -> None:
    reply = """Setup:

```python
import pytest
from solution import add
```

The tests:

```
def test_small():
    assert add(1, 2) == 3

@pytest.mark.parametrize("a", [0, 1])
def test_zero(a):
    assert add(a, 0) == a
```

Run them with `pytest`:

```bash
pytest -q
```"""
    parsed = extract_tests(reply)
    assert "from solution import add" in parsed.code and "def test_zero" in parsed.code
    assert "pytest -q" not in parsed.code
    bare = "from solution import add\n\ndef test_one():\n    assert add(0, 1) == 1\n"
    assert extract_tests(bare).how == "bare code"
    with pytest.raises(AgentOutputError, match="defines a test_ function"):
        extract_tests("```python\ndef helper():\n    pass\n```")
    with pytest.raises(AgentOutputError, match="no test module found"):
        extract_tests("Sorry, no tests today.")


def test_analyzer_json_fenced_with_prose_or_reasoning() -> None:
    spec = {"purpose": "p", "functions": []}
    text = json.dumps(spec)
    assert json.loads(extract_json(text)) == spec
    assert json.loads(extract_json(f"Here is the spec:\n```json\n{text}\n```\nDone.")) == spec
    assert (
        json.loads(extract_json(f"<think>{{not json}}</think>The spec is {text} as asked.")) == spec
    )
    with pytest.raises(AgentOutputError, match="not valid JSON"):
        extract_json("this is not json {")


def test_a_spec_function_named_test_something_is_the_code_not_a_test_module() -> None:
    # MBPP's mbpp_19 entry point is test_duplicate: its block is the solution.
    reply = (
        "```python\ndef test_duplicate(nums: list) -> bool:\n"
        "    return len(nums) != len(set(nums))\n```"
    )
    parsed = extract_module(reply, [("test_duplicate", "def test_duplicate(nums: list) -> bool")])
    assert "return len(nums) != len(set(nums))" in parsed.code
    tests = "```python\nfrom solution import f\n\ndef test_f():\n    assert f() == 1\n```\n"
    with pytest.raises(AgentOutputError):
        extract_module(tests, [("f", "def f()")])
