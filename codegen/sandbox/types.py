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


class ProgramRunDict(TypedDict):
    stdin: str
    arguments: list[str]
    expected_stdout: str | None
    stdout: str
    expected_exit_code: int | None
    exit_code: int | None
    timed_out: bool
    output_capped: bool
    comparison: str | None


class TestCaseDict(TypedDict):
    name: str
    outcome: str
    message: str
    duration_s: float
    details: str
    program_runs: NotRequired[list[ProgramRunDict]]


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


@dataclass(frozen=True)
class ProgramRun:
    """One run of the program a test made through the in-box ``program`` fixture, for people:
    what went in, what was expected (None: not compared, or ``program.run``), what came out
    (texts cut to ``PROGRAM_RUN_CHARS``; ``exit_code`` None when the run was killed)."""

    stdin: str
    arguments: tuple[str, ...]
    expected_stdout: str | None
    stdout: str
    expected_exit_code: int | None
    exit_code: int | None
    timed_out: bool
    output_capped: bool
    comparison: str | None

    def to_dict(self) -> ProgramRunDict:
        return ProgramRunDict(
            stdin=self.stdin,
            arguments=list(self.arguments),
            expected_stdout=self.expected_stdout,
            stdout=self.stdout,
            expected_exit_code=self.expected_exit_code,
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            output_capped=self.output_capped,
            comparison=self.comparison,
        )

    @classmethod
    def from_dict(cls, data: object) -> ProgramRun:
        """The run ``data`` describes, each text cut to ``PROGRAM_RUN_CHARS``; ValueError when
        it is not one (the in-box side writes it, with the candidate's stdout in it: data)."""
        if not isinstance(data, dict):
            raise ValueError("a program run must be an object")
        texts = {k: _text(data, k, optional=k == "expected_stdout") for k in _RUN_TEXTS}
        arguments = data.get("arguments", [])
        if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
            raise ValueError("a program run's arguments must be a list of strings")
        comparison = data.get("comparison")
        if comparison is not None and not (isinstance(comparison, str) and len(comparison) < 40):
            raise ValueError("a program run's comparison must be a name or null")
        return cls(
            stdin=texts["stdin"] or "",
            arguments=tuple(a[:PROGRAM_RUN_CHARS] for a in arguments[:PROGRAM_RUN_ARGUMENTS]),
            expected_stdout=texts["expected_stdout"],
            stdout=texts["stdout"] or "",
            expected_exit_code=_code(data, "expected_exit_code"),
            exit_code=_code(data, "exit_code"),
            timed_out=_flag(data, "timed_out"),
            output_capped=_flag(data, "output_capped"),
            comparison=comparison,
        )


# A program run's texts as kept (the in-box fixture cuts them the same).
PROGRAM_RUN_CHARS = 2_000
PROGRAM_RUN_ARGUMENTS = 100
_RUN_TEXTS = ("stdin", "expected_stdout", "stdout")


def _text(data: dict[str, object], key: str, *, optional: bool) -> str | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"a program run's {key} must be a string")
    return value[:PROGRAM_RUN_CHARS]


def _code(data: dict[str, object], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 1 << 31:
        raise ValueError(f"a program run's {key} must be an exit code or null")
    return value


def _flag(data: dict[str, object], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"a program run's {key} must be true or false")
    return value


@dataclass
class TestCaseResult:
    name: str  # pytest node name, e.g. "test_solution.py::test_empty"
    outcome: str  # passed | failed | error | skipped
    message: str = ""
    duration_s: float = 0.0
    details: str = ""  # trimmed traceback for failures
    # Each run of the program the test made (the in-box ``program`` fixture), in order.
    program_runs: tuple[ProgramRun, ...] = ()

    def to_dict(self) -> TestCaseDict:
        data = TestCaseDict(
            name=self.name,
            outcome=self.outcome,
            message=self.message,
            duration_s=self.duration_s,
            details=self.details,
        )
        if self.program_runs:
            data["program_runs"] = [run.to_dict() for run in self.program_runs]
        return data


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
