"""Reading a program from a programmer's reply, for a spec with a program: real replies to
stdin/stdout tasks (shaped like MapCoder's APPS runs) are bare scripts, fenced or not, between
prose, after worked examples of other problems, before blocks of sample input and output. The
program's top-level statements are the program and are kept (a function spec's reader drops
them as usage)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from codegen.agents.replies import AgentOutputError, extract_program
from codegen.agents.roles import read_solution
from codegen.agents.spec import Spec
from codegen.replay.scripted import MEDIAN_SOLUTION, MEDIAN_SPEC, PRIMES_SPEC

SCRIPT = """n = int(input())
values = list(map(int, input().split()))
print(sum(values[:n]))
"""


def same(code: str, expected: str) -> bool:
    return ast.dump(ast.parse(code)) == ast.dump(ast.parse(expected))


def test_a_bare_script_between_prose_is_the_program() -> None:
    reply = f"Here is the solution:\n\n{SCRIPT}\nIt reads n, then the numbers, and sums them."
    found = extract_program(reply, [])
    assert same(found.code, SCRIPT) and found.how == "code in prose"


def test_a_bare_script_alone_and_reasoning_before_a_fence() -> None:
    assert same(extract_program(SCRIPT, []).code, SCRIPT)
    reply = f"<think>print(1) is not it</think>\n```python\n{SCRIPT}```"
    assert same(extract_program(reply, []).code, SCRIPT)


def test_the_program_block_after_other_problems_and_before_sample_output() -> None:
    reply = (
        "## Example problem\n```python\ndef largest(nums):\n    return max(nums)\n```\n"
        "## The original problem\n```python\n" + SCRIPT + "```\n"
        "Sample input:\n```\n3\n1 2 3\n```\nOutput:\n```\n[6]\n```\n"
    )
    found = extract_program(reply, [])
    assert same(found.code, SCRIPT), found.code
    assert "ignored 3 other block(s)" in found.notes


def test_a_helper_from_an_earlier_block_is_put_before_the_program() -> None:
    helper = "def total(values):\n    return sum(values)\n\nprint(total([1]))\n"
    program = "values = list(map(int, input().split()))\nprint(total(values))\n"
    found = extract_program(f"```python\n{helper}```\nThen:\n```python\n{program}```", [])
    expected = "def total(values):\n    return sum(values)\n\n" + program
    assert same(found.code, expected), found.code  # the helper's usage line dropped


def test_main_is_kept_and_a_never_called_main_gets_its_call() -> None:
    guarded = 'def main():\n    print(input()[::-1])\n\n\nif __name__ == "__main__":\n    main()\n'
    assert same(extract_program(f"```python\n{guarded}```", []).code, guarded)
    uncalled = "def main():\n    print(input()[::-1])\n"
    found = extract_program(f"```python\n{uncalled}```", [])
    assert same(found.code, guarded) and "added the call of main()" in found.describe()


def test_code_that_runs_nothing_is_refused_saying_so() -> None:
    with pytest.raises(AgentOutputError, match="never runs as a program: it only defines solve"):
        extract_program("```python\ndef solve(n):\n    return n * 2\n```", [])


def test_a_program_with_spec_functions_must_define_one_of_them() -> None:
    functions = [("median", "def median(values: list[int]) -> float")]
    with pytest.raises(AgentOutputError, match="does not define median"):
        extract_program(SCRIPT, functions)
    code = "def median(values):\n    return sorted(values)[len(values) // 2]\n\n" + SCRIPT
    assert same(extract_program(code, functions).code, code)


def test_the_crew_reads_a_program_spec_as_a_program_and_a_function_spec_as_before() -> None:
    program = read_solution(MEDIAN_SOLUTION, Spec.model_validate(MEDIAN_SPEC)).code
    assert "print(values[middle])" in program and "sys.stdin.read()" in program
    function_reply = (
        "```python\ndef primes_up_to(n):\n    return [p for p in range(2, n + 1)"
        " if all(p % d for d in range(2, p))]\n\nprint(primes_up_to(10))\n```"
    )
    module = read_solution(function_reply, Spec.model_validate(PRIMES_SPEC)).code
    assert "print(" not in module  # a module is imported: its usage lines go


def test_the_extraction_benchmark_counts_matches_and_says_why_not(tmp_path: Path) -> None:
    from benchmarks.crew.apps_extraction import compare_file

    rows = [
        {"task_id": 1, "responses": [f"```python\n{SCRIPT}```"], "source_codes": [SCRIPT]},
        {"task_id": 2, "responses": ["def f(x):\n    return x"], "source_codes": ["def f(x):\n"]},
    ]
    path = tmp_path / "Run-APPS.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = compare_file(path)
    assert (result["matches"], result["total"]) == (1, 2)
    (refused,) = result["mismatches"]
    assert refused["task_id"] == 2 and refused["theirs"] == "does not parse either"
