"""The sandbox's public contract: limits in, structured results out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from codegen.sandbox.time_limit import decided_by

# The verdict of a test whose values have no form to cross between the test side and the
# candidate's process: a failure (there is no other place to decide it), its message saying
# what could not cross. The in-box drivers write the same word.
CANNOT_ISOLATE = "cannot_isolate"


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0
    memory_mb: int = 512  # memory and memory+swap: no swap escape
    pids: int = 128
    cpus: float = 1.0
    workdir_mb: int = 64
    max_output_bytes: int = 1_000_000  # per stream; the rest is discarded while streaming


class ExecResultDict(TypedDict):
    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    stdout: str
    stderr: str
    truncated: bool
    duration_s: float
    backend: str
    time_limit_s: NotRequired[float | None]
    load_1m: NotRequired[float | None]
    memory_limit: NotRequired[str]


class TestCaseDict(TypedDict):
    name: str
    outcome: str
    message: str
    duration_s: float
    details: str


class TestReportDict(TypedDict):
    isolated: NotRequired[bool | None]
    fence: NotRequired[str]
    tests: list[TestCaseDict]
    collection_errors: list[str]
    exec_result: ExecResultDict | None
    total: int
    passed: int
    failed: int
    ok: bool


@dataclass
class ExecResult:
    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    stdout: str
    stderr: str
    truncated: bool
    duration_s: float
    backend: str = ""
    # Killed at its time limit: that limit, and the host's 1-minute load average when the run
    # came back (``time_limit``: a busy machine turns a slow run into a timeout). None else.
    time_limit_s: float | None = None
    load_1m: float | None = None
    # The memory limit and what it covers: "512 MB for the whole job (...)" or "... for each
    # process on its own (RLIMIT_AS ...)"; "" where no sandbox said.
    memory_limit: str = ""

    def to_dict(self) -> ExecResultDict:
        return ExecResultDict(
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            oom_killed=self.oom_killed,
            stdout=self.stdout,
            stderr=self.stderr,
            truncated=self.truncated,
            duration_s=self.duration_s,
            backend=self.backend,
            time_limit_s=self.time_limit_s,
            load_1m=self.load_1m,
            memory_limit=self.memory_limit,
        )


@dataclass
class TestCaseResult:
    name: str  # pytest node name, e.g. "test_solution.py::test_empty"
    outcome: str  # passed | failed | error | skipped
    message: str = ""
    duration_s: float = 0.0
    details: str = ""  # trimmed traceback for failures

    def to_dict(self) -> TestCaseDict:
        return TestCaseDict(
            name=self.name,
            outcome=self.outcome,
            message=self.message,
            duration_s=self.duration_s,
            details=self.details,
        )


@dataclass
class TestReport:
    tests: list[TestCaseResult] = field(default_factory=list)
    collection_errors: list[str] = field(default_factory=list)
    exec_result: ExecResult | None = None
    # Decided with the solution in a process of its own (``run_pytest``: always, there is no
    # other way); None: not run by it. ``fence``: what the solution's process could write and
    # read (``landlock``, or ``none: <why>``: kept off every search path only).
    isolated: bool | None = None
    fence: str = ""

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def passed(self) -> int:
        return sum(t.outcome == "passed" for t in self.tests)

    @property
    def failed(self) -> int:
        return sum(t.outcome in ("failed", "error") for t in self.tests)

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total and not self.collection_errors

    @property
    def time_limit_note(self) -> str:
        """``the test run was stopped by the 30 s time limit at load 6.2``; "" when the time
        limit did not end it."""
        run = self.exec_result
        if run is None or not run.timed_out:
            return ""
        return "the test run was stopped " + decided_by([run.time_limit_s], [run.load_1m])

    def to_dict(self) -> TestReportDict:
        return {
            "tests": [t.to_dict() for t in self.tests],
            "collection_errors": list(self.collection_errors),
            "exec_result": self.exec_result.to_dict() if self.exec_result else None,
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "ok": self.ok,
            "isolated": self.isolated,
            "fence": self.fence,
        }
