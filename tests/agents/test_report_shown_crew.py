"""A class request through the whole crew on a scripted endpoint and the Docker sandbox: its
report.json shows the class and methods with per-method results, the package set, the
reviewer's grade (from a reply with reasoning) and, for a mismatched name, a warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.dependencies import SandboxPackages
from codegen.agents.llm import LLMClient
from codegen.agents.types import Status
from codegen.json_types import JSONObject
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.sandbox.api import Sandbox
from codegen.sandbox.image import package_set, sandbox_distributions


def method(name: str, signature: str) -> JSONObject:
    return {"name": name, "signature": signature, "description": "as named"}


STACK_SPEC: JSONObject = {
    "purpose": "A stack of integers.",
    "functions": [],
    "classes": [
        {
            "name": "Stack",
            "description": "Last in, first out.",
            "constructor": "def __init__(self) -> None",
            "attributes": [],
            "methods": [
                method("push", "def push(self, item: int) -> None"),
                method("pop", "def pop(self) -> int"),
                method("size", "def size(self) -> int"),
            ],
        }
    ],
    "constants": [],
    "dependencies": [],
    "behaviours": ["pop returns the last item pushed"],
    "edge_cases": [],
    "examples": [],
    "constraints": [],
}
TESTS = """```python
from solution import Stack


def test_pop_returns_the_last_push():
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.pop() == 2


def test_size_counts_items():
    s = Stack()
    s.push(1)
    assert s.size() == 1


def test_new_stack_is_empty():
    assert Stack().size() == 0
```"""
CODE = """```python
class Stack:
    def __init__(self) -> None:
        self.items: list[int] = []

    def push(self, item: int) -> None:
        self.items.append(item)

    def pop(self) -> int:
        return self.items.pop()

    def size(self) -> int:
        return len(self.items)
```"""
REPLIES = {
    "analyzer": STACK_SPEC,
    "test_designer": TESTS,
    "programmer": CODE,
    "reviewer": "<think>Grade 3/10? No.</think>\nAPPROVED\nClear and correct.\n\n**GRADE: 9/10**",
    "documenter": "# Stack\n",
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=1)
    yield box
    box.close()


@pytest.mark.docker
def test_a_class_request_reports_its_methods_grade_packages_and_warnings(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    chosen = package_set()
    packages = SandboxPackages("default", (), sandbox_distributions("none-built", chosen), chosen)
    with ScriptedOpenAIServer(handler=lambda role, body: REPLIES[role]) as server:
        out = run_crew(
            "a class `Stack` with push, pop and `peek()`",
            llm=LLMClient(
                base_url=server.base_url,
                api_key="sk-test",
                max_retries=1,
                timeout_s=10,
                cache_dir=tmp_path / "llm-cache",
                modes_file=tmp_path / "modes.json",
            ),
            sandbox=sandbox,
            artifacts=tmp_path / "req",
            packages=packages,
        )
    assert out.status is Status.PASSED, out.reason  # the reasoning did not hide the APPROVED
    report = json.loads((tmp_path / "req" / "report.json").read_text())
    assert [m["name"] for m in report["module"]["classes"][0]["methods"]] == [
        "push",
        "pop",
        "size",
    ]
    assert [(m["name"], m["passed"], m["total"]) for m in report["methods"]] == [
        ("Stack.__init__", 0, 0),
        ("Stack.push", 1, 1),  # test_size_counts_items names size, not push
        ("Stack.pop", 1, 1),
        ("Stack.size", 2, 2),
    ]
    assert report["sandbox_packages"]["name"] == "default"
    assert any(r.startswith("pandas==") for r in report["sandbox_packages"]["requirements"])
    assert report["reviewer_grade"]["grade"] == 9  # the answer's grade, not the reasoning's
    assert report["warnings"] == [
        "the request names `peek`, which the spec does not define (it defines: Stack)"
    ]
