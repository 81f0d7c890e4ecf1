"""report.json as one typed record: built from a request's state, saved, loaded back; older
files load (unknown keys ignored, missing ones defaulted) or are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.agents.options import CrewOptions
from codegen.agents.pick import CandidateRun, Selection, SharedInput
from codegen.agents.pick.records import SelectionGroup, SplitOutput, SplittingInput
from codegen.agents.records import ContextChunk, Round
from codegen.agents.report import RequestReport, Verification, write_report
from codegen.agents.report.request_report import BadReport
from codegen.agents.spec import Spec
from codegen.agents.state import (
    ContextResult,
    CrewState,
    HumanVerdict,
    ReviewResult,
    SolutionResult,
    SpecResult,
)
from codegen.agents.types import Status
from codegen.replay.scripted import PRIMES_SPEC
from codegen.retrieval.grounding import Grounding
from codegen.sandbox.image import PackageSet
from codegen.sandbox.types import TestCaseResult, TestReport

# The keys report.json has always had (readers outside this package rely on them).
REPORT_KEYS = {
    "request_id",
    "status",
    "reason",
    "rounds",
    "tests_passed",
    "tests_total",
    "test_report",
    "review",
    "history",
    "context",
    "grounding",
    "structured_outputs",
    "candidates",
    "human_review",
    "artifacts",
    "usage",
    "endpoints",
    # What a person is shown of the module, the package set, and the reviewer's grade.
    "module",
    "sandbox_packages",
    "methods",
    "warnings",
    "reviewer_grade",
}


def finished_state() -> CrewState:
    report = TestReport(tests=[TestCaseResult("test_solution.py::test_a", "passed")])
    selection = Selection(
        chosen=1,
        why="2 candidate(s) agree",
        rule="output_agreement",
        groups=[
            SelectionGroup([1, 2], 1, 2.0, weight=2.0, support=1.5),
            SelectionGroup([0], 1, 1.0),
        ],
        candidates=[
            CandidateRun(1, "", 1, 1, {"test_solution.py::test_a": True}, 10, 0.5, 1, 0, 0, 1.0)
        ],
        inputs=[SharedInput("10", "example"), SharedInput("11", "mutation")],
        splitting_inputs=[
            SplittingInput(1, [SplitOutput(0, "[2, 3, 5, 7, 11]"), SplitOutput(1, "[2]")])
        ],
        inputs_seconds=0.25,
    )
    verdict = HumanVerdict("approve", "fine", "alice", "2026-01-01T00:00:00+00:00", 1)
    return CrewState(
        request_id="req-0123456789abcdef",
        request="primes up to n",
        options=CrewOptions(review="human"),
        spec=SpecResult(spec=Spec.model_validate(PRIMES_SPEC), structured_outputs="json_schema"),
        context=ContextResult(
            chunks=[ContextChunk("lib/a.py#L1-L9", "lib/a.py", "stdlib", 0.5, 3, "def a(): ...")],
            grounding=Grounding("partial", 1, 0.5, 2),
        ),
        solution=SolutionResult(
            code="def primes_up_to(n): ...",
            rounds=2,
            report=report,
            history=[Round(1, passed=0, total=1, feedback="fix it"), Round(2, passed=1, total=1)],
            selection=selection,
            tests="def test_a(): ...",
        ),
        review=ReviewResult(mode="human", verdicts=[verdict]),
    )


def test_a_report_saved_loads_back_the_same_with_the_same_keys(tmp_path: Path) -> None:
    report = RequestReport.of(finished_state(), tmp_path)
    report.save(tmp_path)
    stored = json.loads((tmp_path / "report.json").read_text())
    assert set(stored) == REPORT_KEYS
    assert stored["context"] == ["lib/a.py#L1-L9"]
    assert stored["history"][0] == {"round": 1, "passed": 0, "total": 1, "feedback": "fix it"}
    picked = stored["candidates"]
    assert picked["groups"][0] == {
        "members": [1, 2],
        "size": 2,
        "passes": 1,
        "score": 2.0,
        "weight": 2.0,
        "support": 1.5,
    }
    assert picked["groups"][1] == {"members": [0], "size": 1, "passes": 1, "score": 1.0}
    assert picked["splitting_inputs"][0]["outputs"][1] == {"group": 1, "output": "[2]"}
    assert picked["candidates"][0]["crashes"] == 0 and picked["inputs"][1]["origin"] == "mutation"
    assert stored["human_review"]["verdicts"][0]["verdict"] == "approve"
    loaded = RequestReport.load(tmp_path)
    assert loaded == report
    assert loaded.status is Status.PASSED and loaded.grounding == Grounding("partial", 1, 0.5, 2)


def test_an_older_report_loads_with_unknown_keys_ignored_and_missing_ones_defaulted(
    tmp_path: Path,
) -> None:
    old = {"request_id": "req-0123456789abcdef", "status": "rejected", "reason": "no", "x": 1}
    (tmp_path / "report.json").write_text(json.dumps(old))
    report = RequestReport.load(tmp_path)
    assert report is not None
    assert (report.status, report.reason, report.rounds) == (Status.REJECTED, "no", 0)
    assert report.history == [] and report.candidates is None and report.grounding is None
    assert RequestReport.load(tmp_path / "none") is None  # no report yet


@pytest.mark.parametrize(
    ("text", "why"),
    [('{"status": "lost"}', "unknown status 'lost'"), ("{not json", "not readable")],
)
def test_an_unreadable_report_is_refused_in_one_line(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "report.json").write_text(text)
    with pytest.raises(BadReport, match=why) as refused:
        RequestReport.load(tmp_path)
    assert "\n" not in str(refused.value)


def test_a_failed_verification_rerun_downgrades_a_passed_report(tmp_path: Path) -> None:
    RequestReport.of(finished_state(), tmp_path).save(tmp_path)
    write_report(tmp_path, verification=Verification(False, 2, 3))
    report = RequestReport.load(tmp_path)
    assert report is not None and report.status is Status.FAILED_TESTS
    assert report.reason == "the verification re-run failed: 2 of 3 tests passed"
    # A later report of the state keeps the note, and stays downgraded.
    again = write_report(tmp_path, finished_state())
    assert again is not None and again.verification == Verification(False, 2, 3)
    assert again.status is Status.FAILED_TESTS


def test_the_report_shows_the_module_packages_per_method_results_warnings_and_grade(
    tmp_path: Path,
) -> None:
    state = finished_state()
    state.request = "write `is_palindrome(s)`"  # answered with primes_up_to: a warning
    assert state.spec is not None and state.solution is not None
    state.spec.packages = PackageSet("default", ("numpy==1.26.4", "pandas==2.2.3"))
    state.solution.tests = "from solution import primes_up_to\ndef test_a():\n    primes_up_to(3)\n"
    state.solution.review = "APPROVED\nFine.\nGRADE: 8/10"
    report = RequestReport.of(state, tmp_path)
    report.save(tmp_path)
    stored = json.loads((tmp_path / "report.json").read_text())
    assert stored["module"]["functions"] == [
        {"name": "primes_up_to", "signature": "def primes_up_to(n: int) -> list[int]"}
    ]
    assert stored["sandbox_packages"] == {
        "name": "default",
        "requirements": ["numpy==1.26.4", "pandas==2.2.3"],
    }
    assert stored["methods"] == [{"name": "primes_up_to", "passed": 1, "total": 1, "failed": []}]
    assert stored["warnings"][0].startswith("the request names `is_palindrome`")
    assert stored["reviewer_grade"]["grade"] == 8.0
    assert "reviewer model's opinion" in stored["reviewer_grade"]["note"]
    assert RequestReport.load(tmp_path) == report
    # No grade in the reply: no grade, never a default number; not reviewed: null.
    state.solution.review = "APPROVED"
    assert RequestReport.of(state, tmp_path).to_dict()["reviewer_grade"]["grade"] is None
    state.solution.review = ""
    assert RequestReport.of(state, tmp_path).to_dict()["reviewer_grade"] is None
