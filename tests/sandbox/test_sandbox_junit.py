"""JUnit parsing: real pytest output on the host (trusted sample tests), and hostile XML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codegen.sandbox.junit import MAX_XML_BYTES, parse_junit
from codegen.sandbox.types import ExecResult


def _result(**overrides: object) -> ExecResult:
    base = dict(
        exit_code=1,
        timed_out=False,
        oom_killed=False,
        stdout="",
        stderr="",
        truncated=False,
        duration_s=0.1,
    )
    base.update(overrides)
    return ExecResult(**base)  # type: ignore[arg-type]


def test_real_pytest_xml_with_params_and_long_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "test_solution.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_param(n):\n    assert n == 1\n\n"
        "def test_long():\n    assert 'x' * 5000 == 'y'\n"
    )
    xml = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"],
        cwd=tmp_path,
        capture_output=True,
    )
    report = parse_junit(xml.read_bytes(), _result())
    outcomes = {t.name: t.outcome for t in report.tests}
    assert outcomes == {
        "test_solution.py::test_param[1]": "passed",
        "test_solution.py::test_param[2]": "failed",
        "test_solution.py::test_long": "failed",
    }
    long = next(t for t in report.tests if t.name.endswith("test_long"))
    assert len(long.details) <= 2_010 and len(long.message) <= 510  # trimmed


def test_hostile_and_broken_xml_become_collection_errors() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        b"<testsuite><testcase name='a' classname='test_solution'>&lol2;</testcase></testsuite>"
    )
    for xml in (bomb, b"<testsuite><testcase", b"\x00\xff binary", b"x" * (MAX_XML_BYTES + 1)):
        report = parse_junit(xml, _result())
        assert report.tests == [] and len(report.collection_errors) == 1
        assert not report.ok


def test_missing_report_says_why() -> None:
    report = parse_junit(b"", _result(exit_code=None, timed_out=True, stderr="killed"))
    assert report.collection_errors == ["pytest wrote no JUnit report (timed out): killed"]
