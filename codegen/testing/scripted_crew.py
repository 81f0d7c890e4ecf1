"""A scripted "model" for HumanEval runs: replies per role, like a real endpoint would.

The analyzer turns the request into a spec naming the function; the programmer answers with
the canonical solution for the tasks in ``solve`` and with ``wrong_body`` for the rest; the
test designer writes a suite that only checks the function exists (so the crew's own tests
pass whatever the code computes). The scripted programmer may know canonical solutions: it
stands in for a model. What the *crew* sends is what the anti-leak test inspects.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import TypedDict

from codegen.evaluation.humaneval import Problem, load_problems
from codegen.json_types import JSONObject, JSONValue

_TAG = re.compile(r"\[task (\w{12})\]")


class FunctionSpec(TypedDict):
    name: str
    signature: str
    description: str


class AnalyzerSpec(TypedDict):
    """The analyzer's JSON reply (the spec the crew asks for)."""

    purpose: str
    functions: list[FunctionSpec]
    behaviours: list[str]
    edge_cases: list[str]
    examples: list[str]
    constraints: list[str]


# A scripted reply: the spec (sent as JSON content) or the reply's text.
ScriptedReply = AnalyzerSpec | str


def _tag(problem: Problem) -> str:
    return hashlib.sha256(problem.prompt.encode()).hexdigest()[:12]


def _text(body: JSONObject) -> str:
    """All message contents of a chat completions request body."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))


def make_handler(
    solve: Iterable[str], wrong_body: str = "    return None\n"
) -> Callable[[str, JSONObject], ScriptedReply]:
    solve = set(solve)
    problems = list(load_problems().values())
    by_tag = {_tag(p): p for p in problems}

    def find(body: JSONObject) -> Problem:
        text = _text(body)
        match = _TAG.search(text)
        if match:
            return by_tag[match.group(1)]
        # The analyzer sees the request, which holds the prompt.
        for p in problems:
            if p.prompt.rstrip() in text:
                return p
        raise AssertionError("scripted model: cannot tell which task this is")

    def handler(role: str, body: JSONObject) -> ScriptedReply:
        problem = find(body)
        entry = problem.entry_point
        if role == "analyzer":
            return AnalyzerSpec(
                purpose=f"Implement {entry} as its docstring says [task {_tag(problem)}]",
                functions=[
                    FunctionSpec(name=entry, signature=f"{entry}(...)", description="see purpose")
                ],
                behaviours=["follows the docstring"],
                edge_cases=[],
                examples=[],
                constraints=[],
            )
        if role == "test_designer":
            suite = (
                f"from solution import {entry}\n\n\n"
                f"def test_exists():\n    assert callable({entry})\n"
            )
            return f"```python\n{suite}```"
        if role == "programmer":
            if problem.key in solve:
                code = problem.prompt + problem.canonical_solution
            else:
                code = problem.prompt + wrong_body
            return f"```python\n{code}```"
        if role == "reviewer":
            return "APPROVED\nMatches the spec."
        if role == "documenter":
            return f"# {entry}\n\nUsage: call `{entry}`.\n"
        raise AssertionError(f"unexpected role {role}")

    return handler


def dump(obj: JSONValue) -> str:
    return json.dumps(obj, sort_keys=True)
