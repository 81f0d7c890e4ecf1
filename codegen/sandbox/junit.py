"""Per-test results from pytest's JUnit XML, never from its text output."""

from __future__ import annotations

import json
from typing import Any

from defusedxml import ElementTree

from codegen.sandbox.types import ExecResult, ProgramRun, TestCaseResult, TestReport

MAX_XML_BYTES = 4_000_000
MAX_DETAILS_CHARS = 2_000
MAX_MESSAGE_CHARS = 500
# The in-box ``program`` fixture's record of one run (``inside/program_run.PROPERTY``).
PROGRAM_RUN_PROPERTY = "codegen_program_run"
# One record's JSON text: its texts are cut to 2,000 characters in the box, each character at
# most six in JSON; a longer value (or one that is not a run) is dropped, not decoded.
MAX_PROGRAM_RUN_CHARS = 200_000
MAX_PROGRAM_RUNS = 200  # per test


def _trim(text: str, limit: int) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    # The end of a traceback (the assertion and its values) is what a reader needs.
    return "...\n" + text[-limit:]


def _node_name(classname: str, name: str) -> str:
    parts = [p for p in classname.split(".") if p]
    # pytest's classname is "test_solution" or "test_solution.TestClass".
    module = parts[0] + ".py" if parts else "test_solution.py"
    return "::".join([module, *parts[1:], name])


def program_runs(case: Any) -> tuple[ProgramRun, ...]:
    """The program runs recorded on a ``<testcase>`` (its ``codegen_program_run``
    properties), in order. The values hold the candidate's stdout: each is decoded only when
    short enough, and one that is not a run is left out."""
    runs: list[ProgramRun] = []
    for prop in case.iterfind("properties/property"):
        if prop.get("name") != PROGRAM_RUN_PROPERTY or len(runs) >= MAX_PROGRAM_RUNS:
            continue
        value = prop.get("value", "")
        if len(value) > MAX_PROGRAM_RUN_CHARS:
            continue
        try:
            runs.append(ProgramRun.from_dict(json.loads(value)))
        except (ValueError, RecursionError):
            continue
    return tuple(runs)


def parse_junit(xml: bytes, exec_result: ExecResult) -> TestReport:
    report = TestReport(exec_result=exec_result)
    if not xml:
        why = "timed out" if exec_result.timed_out else f"exit code {exec_result.exit_code}"
        tail = _trim(exec_result.stderr or exec_result.stdout, MAX_DETAILS_CHARS)
        report.collection_errors.append(f"pytest wrote no JUnit report ({why}): {tail}")
        return report
    if len(xml) > MAX_XML_BYTES:
        report.collection_errors.append(f"JUnit report larger than {MAX_XML_BYTES} bytes")
        return report
    try:
        root = ElementTree.fromstring(xml)
    except Exception as exc:  # defusedxml raises several types for hostile or broken XML
        report.collection_errors.append(f"unreadable JUnit report: {type(exc).__name__}: {exc}")
        return report
    for case in root.iter("testcase"):
        name = case.get("name", "")
        classname = case.get("classname", "")
        outcome, message, details = "passed", "", ""
        for tag in ("error", "failure", "skipped"):
            child = case.find(tag)
            if child is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = child.get("message", "")
                details = child.text or ""
                break
        if outcome == "error" and not classname and "collection failure" in message:
            report.collection_errors.append(_trim(details or message, MAX_DETAILS_CHARS))
            continue
        try:
            duration = float(case.get("time", "0") or 0)
        except ValueError:
            duration = 0.0
        report.tests.append(
            TestCaseResult(
                name=_node_name(classname, name),
                outcome=outcome,
                message=_trim(message, MAX_MESSAGE_CHARS),
                duration_s=duration,
                details=_trim(details, MAX_DETAILS_CHARS),
                program_runs=program_runs(case),
            )
        )
    return report
