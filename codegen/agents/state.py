"""A request's typed state: each step's result, and how the request ended.

``CrewState`` holds the request, its options and each step's result once it has run; a
state holding some results can be resumed (``runner.run_steps`` runs only what is missing).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

from codegen.agents.llm import Usage
from codegen.agents.options import CrewOptions
from codegen.agents.pick import Selection
from codegen.agents.records import ContextChunk, Round
from codegen.agents.spec import Spec
from codegen.agents.types import CrewOutcome, Status
from codegen.json_types import JSONObject
from codegen.retrieval.grounding import Grounding
from codegen.sandbox.image import PackageSet
from codegen.sandbox.types import TestReport


@dataclass(frozen=True)
class Ended:
    """How a request ended, decided by the step that ended it."""

    status: Status
    reason: str


@dataclass
class StepResult:
    """What one step produced: its usage, and ``ended`` when it ended the request."""

    usage: Usage = field(default_factory=Usage)
    ended: Ended | None = None


@dataclass
class SpecResult(StepResult):
    spec: Spec | None = None  # None: the step ended the request before a spec was written
    structured_outputs: str = ""  # how the server took the JSON request (StructuredMode)
    # The sandbox's package set the spec's dependencies were checked against; None: unknown.
    packages: PackageSet | None = None


@dataclass
class TestsResult(StepResult):
    tests: str = ""


@dataclass
class ContextResult(StepResult):
    queries: list[str] = field(default_factory=list)
    chunks: list[ContextChunk] = field(default_factory=list)
    # How much of the corpus the index held when it was searched; None: the crew was given
    # no way to tell.
    grounding: Grounding | None = None


@dataclass
class DraftCandidate:
    """One programmer draft (``X-Codegen-Candidate`` index = its position) and its cost."""

    code: str = ""
    problem: str = ""
    usage: Usage = field(default_factory=Usage)


@dataclass
class DraftResult(StepResult):
    code: str = ""  # draft 0 (the only one unless options.candidates > 1)
    problem: str = ""  # a contract violation of the reply, fed back in round 2
    drafts: list[DraftCandidate] = field(default_factory=list)


@dataclass
class SolutionResult(StepResult):
    code: str = ""
    reason: str = ""
    rounds: int = 0
    report: TestReport | None = None
    review: str = ""
    history: list[Round] = field(default_factory=list)
    # With several drafts: each one's test results, the groups, and why the pick won.
    selection: Selection | None = None
    # The suite the pick was refined against (the test designer's, minus suspect tests).
    tests: str = ""


@dataclass(frozen=True)
class HumanVerdict:
    """A person's verdict on one review round (or the timeout's, which rejects)."""

    kind: str  # approve | reject | timeout (see VERDICT_KINDS)
    text: str  # the approval's note, or the rejection's points
    reviewer: str
    decided_at: str  # ISO 8601, UTC
    review_round: int

    def to_dict(self) -> JSONObject:
        return {
            "verdict": self.kind,
            "text": self.text,
            "reviewer": self.reviewer,
            "decided_at": self.decided_at,
            "review_round": self.review_round,
        }

    @classmethod
    def from_dict(cls, data: JSONObject) -> HumanVerdict:
        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        review_round = data.get("review_round")
        return cls(
            kind=text("verdict"),
            text=text("text"),
            reviewer=text("reviewer"),
            decided_at=text("decided_at"),
            review_round=review_round if isinstance(review_round, int) else 0,
        )


VERDICT_KINDS = ("approve", "reject", "timeout")


@dataclass
class ReviewResult(StepResult):
    """The sign-off: the mode, every verdict so far, and the code after a person's rejection
    sent it back through refinement (``revised``; None while the solution step's stands)."""

    mode: str = "agent"
    verdicts: list[HumanVerdict] = field(default_factory=list)
    revised: SolutionResult | None = None
    open_round: int = 0  # the round awaiting a person's verdict (0: none)


@dataclass
class DocsResult(StepResult):
    docs: str = ""


# Marks the CrewState fields that hold a built-in step's result, typed; steps.STEPS names the
# steps (one per field, a test checks the two agree) and a step added there lands in ``added``.
STEP: dict[str, bool] = {"step": True}


@dataclass
class CrewState:
    """One request: its text and options, and each step's result once it has run."""

    request_id: str  # also the X-Codegen-Task tag: a request id, or a benchmark task id
    request: str
    options: CrewOptions = field(default_factory=CrewOptions)
    spec: SpecResult | None = field(default=None, metadata=STEP)
    tests: TestsResult | None = field(default=None, metadata=STEP)
    context: ContextResult | None = field(default=None, metadata=STEP)
    draft: DraftResult | None = field(default=None, metadata=STEP)
    solution: SolutionResult | None = field(default=None, metadata=STEP)
    review: ReviewResult | None = field(default=None, metadata=STEP)
    docs: DocsResult | None = field(default=None, metadata=STEP)
    # Resuming a request that awaits review: the review so far, and the verdict just given.
    review_prior: ReviewResult | None = None
    verdict: HumanVerdict | None = None
    # The results of steps added to ``steps.STEPS`` beyond the fields above, by step name.
    added: dict[str, StepResult] = field(default_factory=dict)

    @property
    def accepted(self) -> SolutionResult | None:
        """The code under review: the refinement's, or its revision after a rejection."""
        if self.review is not None and self.review.revised is not None:
            return self.review.revised
        return self.solution

    def result(self, name: str) -> StepResult | None:
        """Step ``name``'s result: a field above for the built-in steps, else ``added``."""
        if name in STEP_FIELDS:
            return getattr(self, name)
        return self.added.get(name)

    def with_result(self, name: str, result: StepResult | None) -> CrewState:
        """A copy of this state holding ``result`` as step ``name``'s."""
        out = copy.copy(self)
        if name in STEP_FIELDS:
            setattr(out, name, result)
        elif result is not None:
            out.added = {**self.added, name: result}
        return out

    def _names(self) -> tuple[str, ...]:
        return (*STEP_FIELDS, *self.added)

    def merged(self, *others: CrewState) -> CrewState:
        """This state with the results only ``others`` hold (Dagster hands each asset the
        states of its upstream assets; they agree on what they share)."""
        out = self
        for other in others:
            for name in other._names():
                if out.result(name) is None and other.result(name) is not None:
                    out = out.with_result(name, other.result(name))
        return copy.copy(out)

    def ended_at(self, names: tuple[str, ...] | None = None) -> tuple[str, Ended] | None:
        """The first step (of ``names``; None: of all) that ended the request, and how."""
        for name in self._names():
            result = self.result(name)
            if (names is None or name in names) and result is not None and result.ended:
                return name, result.ended
        return None

    def ended(self, names: tuple[str, ...] | None = None) -> Ended | None:
        found = self.ended_at(names)
        return found[1] if found is not None else None

    def usage(self, names: set[str] | None = None) -> Usage:
        total = Usage()
        for name in self._names():
            result = self.result(name)
            if result is not None and (names is None or name in names):
                total = total.merge(result.usage)
        return total

    @property
    def status(self) -> Status | None:
        """The final status; None while the request is still under way."""
        ended = self.ended()
        if ended is not None:
            return ended.status
        return Status.PASSED if self.solution is not None else None

    @property
    def reason(self) -> str:
        ended = self.ended()
        if ended is not None:
            return ended.reason
        return self.solution.reason if self.solution is not None else "under way"

    def outcome(self) -> CrewOutcome:
        solution = self.accepted or SolutionResult()
        return CrewOutcome(
            status=self.status or Status.ERROR,
            reason=self.reason,
            spec=self.spec.spec if self.spec else None,
            solution=solution.code or (self.draft.code if self.draft else ""),
            tests=solution.tests or (self.tests.tests if self.tests else ""),
            docs=self.docs.docs if self.docs else "",
            rounds=solution.rounds,
            test_report=solution.report,
            usage=self.usage(),
            review=solution.review,
            context=self.context.chunks if self.context else [],
            history=solution.history,
            structured_outputs=self.spec.structured_outputs if self.spec else "",
            drafts=[d.code for d in self.draft.drafts]
            if self.draft and len(self.draft.drafts) > 1
            else [],
            selection=self.solution.selection if self.solution else None,
        )


# The step-result fields, in the order STEPS runs them (a test checks the two agree).
STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CrewState) if f.metadata.get("step"))
