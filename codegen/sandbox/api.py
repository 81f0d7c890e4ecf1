"""The sandbox entry points the rest of the platform calls.

Callers hold a ``Sandbox`` (from ``open_sandbox``) for as long as they run executions, so a
warm pool can be reused, and close it when done (or use it as a context manager). Sandboxes
are safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from codegen.sandbox.types import ExecResult, Limits, TestReport


class Sandbox(Protocol):
    backend: str
    # What the code under test runs on and can import: the image tag (its package set), the
    # bubblewrap root's directory, or the host. A verdict holds for this environment only.
    environment: str

    def run(
        self, files: Mapping[str, str | bytes], command: list[str], limits: Limits | None = None
    ) -> ExecResult:
        """Run ``command`` with ``files`` (relative path -> content) as the working directory."""
        ...

    def run_pytest(
        self, solution_source: str, test_source: str, limits: Limits | None = None
    ) -> TestReport:
        """Run ``test_solution.py`` against ``solution.py``; results come from JUnit XML."""
        ...

    def close(self) -> None: ...

    # Every sandbox is also a context manager that closes itself.
    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...
