"""Typed values the crew passes around: the spec, usage accounting, options and the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from codegen.agents.llm import Usage
from codegen.agents.pick import Selection
from codegen.agents.records import ContextChunk, Round
from codegen.agents.spec import Spec
from codegen.json_types import JSONObject
from codegen.sandbox.types import TestReport


class Status(StrEnum):
    PASSED = "passed"
    FAILED_TESTS = "failed_tests"
    REJECTED = "rejected"
    BUDGET_EXCEEDED = "budget_exceeded"
    # The model ended it: no usable code after the re-asks (or a reply breaking the wire
    # contract). Scored 0 and cached, like failed_tests: a weak model's score, not an outage.
    NO_CODE = "no_code"
    # A replay server's answer for a turn it never recorded (UNRECORDED_CODE): the end of the
    # recording, scored with the code so far.
    UNRECORDED = "unrecorded"
    # The spec needs a distribution the sandbox's package set lacks: ended before the
    # programmer, not the model's fault nor an outage; a changed setting and a sandbox build
    # fix it. Scored 0 and cached, like the model's endings.
    MISSING_DEPENDENCY = "missing_dependency"
    # The spec answers another request: it defines none of the names the request asks for
    # (agents.names.off_target). Ended before the programmer: refining code for the wrong
    # request cannot help. The analyzer's ending, scored 0 and cached like the model's others.
    OFF_TARGET = "off_target"
    # An outage (endpoint down, any other HTTP error, sandbox down): not a score, retried.
    ERROR = "error"
    # Not an ending: the tests pass and a person's verdict is awaited (no run holds it).
    AWAITING_REVIEW = "awaiting_review"


# Statuses the model ended a request with (not passed, not an outage): `codegen generate`
# exits 3 for them (off_target 7), and an evaluation scores and caches them.
MODEL_ENDED = frozenset(
    {
        Status.FAILED_TESTS,
        Status.REJECTED,
        Status.NO_CODE,
        Status.BUDGET_EXCEEDED,
        Status.UNRECORDED,
        Status.OFF_TARGET,
    }
)


# Statuses the settings ended a request with (the request needs what they leave out):
# `codegen generate` exits 2, the code of settings that do not fit; an evaluation scores them.
SETTINGS_ENDED = frozenset({Status.MISSING_DEPENDENCY})

# Statuses the spec step ends a request with, before any code or test is written: the steps
# after it do nothing (shown as skipped) and the sandbox check has nothing to run.
SPEC_ENDED = frozenset({Status.MISSING_DEPENDENCY, Status.OFF_TARGET})


def is_outage(status: Status) -> bool:
    """Whether an ending is an outage (endpoint, transport or sandbox down: ``error``) rather
    than the model's doing. An outage is no result: Dagster fails the step and the run, nothing
    is materialized, a re-run retries. Every other ending (``failed_tests``, ``rejected``,
    ``budget_exceeded``, and the model-failure statuses such as ``no_code`` or ``unrecorded``)
    is the request's result: materialized, with a failing check."""
    return status is Status.ERROR


@dataclass
class Verdict:
    approved: bool
    text: str

    @property
    def reasons(self) -> str:
        lines = self.text.strip().splitlines()
        body = "\n".join(lines[1:]).strip() if lines else ""
        return body or self.text.strip() or "(no reasons given)"


@dataclass
class CrewOutcome:
    status: Status
    reason: str
    spec: Spec | None = None
    solution: str = ""
    tests: str = ""
    docs: str = ""
    rounds: int = 0
    test_report: TestReport | None = None
    usage: Usage = field(default_factory=Usage)
    review: str = ""
    context: list[ContextChunk] = field(default_factory=list)
    history: list[Round] = field(default_factory=list)
    structured_outputs: str = ""  # how the analyzer's server took the JSON request
    # With several drafts: each one's code (candidate order) and how the pick was made.
    drafts: list[str] = field(default_factory=list)
    selection: Selection | None = None

    def to_dict(self) -> JSONObject:
        report = self.test_report
        return {
            "status": self.status.value,
            "reason": self.reason,
            "spec": self.spec.model_dump(mode="json") if self.spec else {},
            "solution": self.solution,
            "tests": self.tests,
            "docs": self.docs,
            "rounds": self.rounds,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "test_report": report.to_dict() if report else None,
            "usage": self.usage.to_dict(),
            "review": self.review,
            "context": [c.to_dict() for c in self.context],
            "history": [r.to_dict() for r in self.history],
            "structured_outputs": self.structured_outputs,
        }
