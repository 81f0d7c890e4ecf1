"""What every backend shares: the job round trip is backend specific, pytest is not."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping

from codegen.sandbox.files import FileContent
from codegen.sandbox.junit import MAX_XML_BYTES, parse_junit
from codegen.sandbox.protocol import JobExtra
from codegen.sandbox.types import ExecResult, Limits, TestReport


class BaseSandbox:
    backend = "base"

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

    def run(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits | None = None,
    ) -> ExecResult:
        return self._execute(files, command, limits or self.default_limits)[0]

    def run_pytest(
        self, solution_source: str, test_source: str, limits: Limits | None = None
    ) -> TestReport:
        # The report lives outside the work dir, under a name the job cannot guess in advance.
        report = f"/tmp/.codegen-{uuid.uuid4().hex}/junit.xml"
        command = [
            "python3",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir=/work",
            "--tb=short",
            f"--junitxml={report}",
            "test_solution.py",
        ]
        files = {"solution.py": solution_source, "test_solution.py": test_source}
        extra: JobExtra = {"collect": [report], "max_collect_bytes": MAX_XML_BYTES}
        result, collected = self._execute(files, command, limits or self.default_limits, extra)
        return parse_junit(collected.get(report, b""), result)

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
