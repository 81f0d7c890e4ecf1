"""What `codegen generate` prints and the UI shows of a request: the spec's classes and
methods with their tests' results, the package set, name warnings and the reviewer's grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.agents.report import RequestReport
from codegen.agents.spec import Spec
from codegen.agents.state import CrewState, SolutionResult, SpecResult, TestsResult
from codegen.assets.codegen_metadata import solution_metadata, spec_metadata
from codegen.orchestration.cli.outcome import show_outcome, summarize
from codegen.sandbox.image import PackageSet
from codegen.sandbox.types import TestCaseResult as Case
from codegen.sandbox.types import TestReport as Report


def method(name: str, signature: str) -> dict[str, str]:
    return {"name": name, "signature": signature, "description": ""}


LRU = Spec.model_validate(
    {
        "purpose": "An LRU cache.",
        "classes": [
            {
                "name": "LRUCache",
                "description": "",
                "constructor": "def __init__(self, capacity: int)",
                "attributes": [],
                "methods": [
                    method("get", "def get(self, key: int) -> int"),
                    method("put", "def put(self, key: int, value: int) -> None"),
                ],
            }
        ],
        "behaviours": [],
        "edge_cases": [],
        "examples": [],
        "constraints": [],
    }
)
TESTS = """from solution import LRUCache

def test_get_missing():
    assert LRUCache(1).get(5) == -1

def test_eviction():
    c = LRUCache(1)
    c.put(1, 1)
    c.put(2, 2)
    assert c.get(1) == -1
"""


def lru_state(review: str = "APPROVED\nClean.\nGRADE: 9/10") -> CrewState:
    report = Report(
        tests=[
            Case("test_solution.py::test_get_missing", "passed"),
            Case("test_solution.py::test_eviction", "failed", "assert 1 == -1"),
        ]
    )
    return CrewState(
        request_id="req-0123456789abcdef",
        request="a class LRUCache(capacity) with get, put and `evict()`",
        spec=SpecResult(spec=LRU, packages=PackageSet("default", ("numpy==1.26.4",))),
        tests=TestsResult(tests=TESTS),
        solution=SolutionResult(code="class LRUCache: ...", report=report, review=review),
    )


def test_the_cli_prints_the_classes_methods_results_packages_warnings_and_grade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = summarize(RequestReport.of(lru_state(), tmp_path), "run-1", tmp_path)
    show_outcome(summary, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("status     passed: ") and lines[1].endswith("(1 warning below)")
    assert lines[2] == (
        "warning    the request names `evict`, which the spec does not define "
        "(it defines: LRUCache)"
    )
    assert lines[3:6] == [
        "module     class LRUCache: __init__(self, capacity: int)  "
        "[constructor alone: no test calls it]",
        "             get(self, key: int) -> int  [1/2 tests passed; failed: test_eviction]",
        "             put(self, key: int, value: int) -> None  [0/1 tests passed; failed: "
        "test_eviction]",
    ]
    assert "needs      standard library only; sandbox package set default (numpy==1.26.4)" in lines
    assert "grade      9/10 (the reviewer model's opinion)" in lines

    show_outcome(summary, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert out["reviewer_grade"]["grade"] == 9.0 and out["warnings"] == summary["warnings"]
    assert out["methods"][1] == {
        "name": "LRUCache.get",
        "passed": 1,
        "total": 2,
        "failed": ["test_solution.py::test_eviction"],
    }
    assert out["sandbox_packages"] == {"name": "default", "requirements": ["numpy==1.26.4"]}
    assert out["module"]["classes"][0]["name"] == "LRUCache"


def test_a_reply_without_a_grade_prints_no_grade_never_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = RequestReport.of(lru_state(review="APPROVED\nLooks fine."), tmp_path)
    show_outcome(summarize(report, None, tmp_path), as_json=False)
    assert "grade      no grade (the reviewer's reply gave none)" in capsys.readouterr().out


def test_the_ui_shows_the_outline_per_method_table_warnings_and_grade(tmp_path: Path) -> None:
    state = lru_state()
    shown = solution_metadata(state, tmp_path)
    assert "get(self, key: int) -> int  [1/2 tests passed" in shown["module"].value  # type: ignore[union-attr]
    rows = shown["per_method"].value.records  # type: ignore[union-attr]
    assert [(r.data["name"], r.data["passed"], r.data["total"]) for r in rows] == [
        ("LRUCache.__init__", 0, 0),
        ("LRUCache.get", 1, 2),
        ("LRUCache.put", 0, 1),
    ]
    assert "`evict`" in shown["warnings"].value and shown["warning_count"] == 1  # type: ignore[union-attr]
    assert shown["reviewer_grade"] == "9/10 (the reviewer model's opinion)"
    assert shown["reviewer_grade_value"] == 9.0
    assert "numpy==1.26.4" in str(shown["dependencies"])
    # The spec step shows the outline and the warnings; no results and no grade yet.
    before = spec_metadata(state, tmp_path)
    assert "[" not in before["module"].value and "reviewer_grade" not in before  # type: ignore[union-attr]
    assert before["warning_count"] == 1
