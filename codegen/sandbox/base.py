"""What every backend shares: the job round trip is backend specific, pytest is not."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import secrets
import threading
from collections.abc import Mapping

from codegen.sandbox.files import FileContent
from codegen.sandbox.junit import MAX_XML_BYTES, parse_junit
from codegen.sandbox.protocol import DRIVER_COMMAND, JobExtra, driver_files, isolation_files
from codegen.sandbox.time_limit import load_1m
from codegen.sandbox.types import CANNOT_ISOLATE, ExecResult, Limits, TestReport


def _driver_report(result: ExecResult, token: str) -> tuple[bytes, dict[str, object], str]:
    """The JUnit XML, the status and what the solution's fence said, as ``pytest_driver``
    printed them under ``token`` (the last such line); empty when it printed none."""
    xml, status, fence = b"", {}, ""
    for line in result.stdout.splitlines():
        if not line.startswith(token + " "):
            continue
        try:
            data = json.loads(line[len(token) + 1 :])
            xml = base64.b64decode(str(data["junit"]), validate=True)
            status = data["status"] if isinstance(data.get("status"), dict) else {}
            fence = str(data.get("fence", ""))[:300]
        except (ValueError, KeyError, TypeError, binascii.Error):
            continue
    return xml, status, fence


class BaseSandbox:
    backend = "base"
    environment = "unknown"  # each backend says which (api.Sandbox.environment)

    def __init__(self, default_limits: Limits | None = None) -> None:
        self.default_limits = default_limits or Limits()
        self._closed = False
        self._close_lock = threading.Lock()

    # Backends implement this: one job, returning the result and any collected files.
    def _execute(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits,
        extra: JobExtra | None = None,
    ) -> tuple[ExecResult, dict[str, bytes]]:
        raise NotImplementedError

    def _job(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits,
        extra: JobExtra | None = None,
    ) -> tuple[ExecResult, dict[str, bytes]]:
        """One job; a run killed at its time limit says which limit, at what load."""
        result, collected = self._execute(files, command, limits, extra)
        if result.timed_out:
            result.time_limit_s, result.load_1m = limits.timeout_s, load_1m()
        return result, collected

    def run(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits | None = None,
    ) -> ExecResult:
        return self._job(files, command, limits or self.default_limits)[0]

    def run_pytest(
        self, solution_source: str, test_source: str, limits: Limits | None = None
    ) -> TestReport:
        """pytest over ``test_source`` with ``solution.py``, decided where the solution cannot
        reach and nowhere else (``pytest_driver``): the solution runs in a process of its own
        behind the file fence (the report's ``fence``), the tests reach it by calls. A test
        whose values cannot cross fails, its message ``cannot_isolate: ...``."""
        limits = limits or self.default_limits
        token = secrets.token_hex(16)
        files = {
            **driver_files("pytest_driver.py"),
            **isolation_files(),
            "solution.py": solution_source,
            "test_solution.py": test_source,
            "token.txt": token,
        }
        room = dataclasses.replace(
            limits, max_output_bytes=max(limits.max_output_bytes, 2 * MAX_XML_BYTES)
        )
        result = self._job(files, DRIVER_COMMAND, room)[0]
        xml, status, fence = _driver_report(result, token)
        report = parse_junit(xml if len(xml) <= MAX_XML_BYTES else xml[: MAX_XML_BYTES + 1], result)
        report.isolated, report.fence = True, fence
        for key, what in (
            ("dead", "the solution's process"),
            ("load_error", "solution.py did not load"),
            ("error", "the test side failed"),
            ("cross", f"{CANNOT_ISOLATE}: a value of the tests' module cannot cross"),
        ):
            if status.get(key):
                report.collection_errors.append(f"{what}: {status[key]}"[:500])
        if xml and status.get("exit") not in (0, 1):
            # interrupted, internal error, no tests: whatever the report holds, not a pass
            report.collection_errors.append(f"pytest ended with status {status.get('exit')}")
        return report

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._shutdown()

    def _shutdown(self) -> None:
        pass

    def __enter__(self) -> BaseSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
