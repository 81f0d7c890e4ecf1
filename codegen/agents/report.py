"""A request's artifacts and its one report.json writer (``write_report``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen.agents.artifacts import write_artifact
from codegen.agents.state import CrewState
from codegen.agents.types import Status


@dataclass(frozen=True)
class Verification:
    """The blocking check's re-run of the stored tests against the stored code."""

    passed: bool
    tests_passed: int
    tests_total: int


def store_artifacts(folder: Path, name: str, state: CrewState) -> None:
    """The files a finished step adds to the request's folder (never partial: atomic)."""
    if name == "spec" and state.spec is not None and state.spec.spec:
        write_artifact(folder, "spec.json", state.spec.spec)
    elif name == "tests" and state.tests is not None and state.tests.tests:
        write_artifact(folder, "test_solution.py", state.tests.tests)
    elif name == "solution" and state.solution is not None:
        original = state.tests.tests if state.tests is not None else ""
        if state.solution.tests and state.solution.tests != original:
            # Suspect tests were left out: the stored suite is the one the code was held to.
            write_artifact(folder, "test_solution.py", state.solution.tests)
        if state.solution.code:
            write_artifact(folder, "solution.py", state.solution.code)
        write_report(folder, state)
    elif name == "review" and state.review is not None:
        if state.review.revised is not None and state.review.revised.code:
            write_artifact(folder, "solution.py", state.review.revised.code)
        write_report(folder, state)
    elif name == "docs" and state.docs is not None:
        if state.docs.docs:
            write_artifact(folder, "README.md", state.docs.docs)
        write_report(folder, state)


def write_report(
    folder: Path, state: CrewState | None = None, verification: Verification | None = None
) -> dict[str, Any]:
    """The one writer of report.json: the state's report (or the stored one), keeping the
    verification note; a 'passed' request whose verification re-run failed is not passed."""
    path = folder / "report.json"
    stored: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    report = state.report(folder) if state is not None else dict(stored)
    if not report:
        return {}
    note = (
        {
            "passed": verification.passed,
            "tests_passed": verification.tests_passed,
            "tests_total": verification.tests_total,
        }
        if verification is not None
        else stored.get("verification")
    )
    if note is not None:
        report["verification"] = note
        if not note["passed"] and report.get("status") == Status.PASSED.value:
            report["status"] = Status.FAILED_TESTS.value
            report["reason"] = (
                f"the verification re-run failed: {note['tests_passed']} of "
                f"{note['tests_total']} tests passed"
            )
    write_artifact(folder, "report.json", report)
    return report
