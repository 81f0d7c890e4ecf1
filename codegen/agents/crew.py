"""The crew, defined once: steps over a typed request state, run in this process or as
Dagster assets.

``STEPS`` is the sequence: ``spec -> (tests || context -> draft) -> solution -> review ->
docs``, each
step naming the steps it needs. A step is a plain function of the services (``Crew``), the
``CrewState`` so far and a budget ``Meter``, returning its typed ``StepResult``; ``run_step``
runs one (or carries an earlier step's ending on without work), ``run_steps`` runs whatever
is missing with independent steps in parallel (``run_crew``), and ``codegen/assets/codegen.py`` runs
each step as an asset or op. ``write_report`` is the one writer of ``report.json``.

Every request ends with one ``Status`` and a reason. A state holding some results can be
resumed: ``run_steps`` only runs the steps whose results are missing (a review step that
stops at ``awaiting_review`` fits here).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codegen.agents import prompts
from codegen.agents.context import queries_for, retrieve_context
from codegen.agents.llm import Draft, LLMClient, LLMError
from codegen.agents.roles import (
    AgentOutputError,
    BadRequest,
    analyze,
    design_tests,
    document,
    execute_tests,
    failure_feedback,
    review,
    validate_request,
    write_code,
)
from codegen.agents.selection import (
    EXAMPLE_PREFIX,
    pick,
    rows_of,
    spec_example_tests,
    test_function,
    with_examples,
    without_tests,
)
from codegen.agents.types import BudgetExceeded, CrewOptions, CrewOutcome, Meter, Status, Usage
from codegen.requests.store import new_request_id, write_artifact
from codegen.retrieval.types import Retriever
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits, TestReport

Event = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def classify(exc: BaseException) -> tuple[Status, str]:
    """The status and one-line reason an exception ends a request with."""
    if isinstance(exc, BudgetExceeded):
        return Status.BUDGET_EXCEEDED, str(exc)
    if isinstance(exc, AgentOutputError):  # the model's reply, not the endpoint, failed
        return Status.NO_CODE, str(exc)
    if isinstance(exc, LLMError) and exc.unrecorded:
        return Status.UNRECORDED, str(exc)
    if isinstance(exc, LLMError | BadRequest):
        return Status.ERROR, str(exc)
    return Status.ERROR, f"{type(exc).__name__}: {exc}"


@dataclass
class RefineResult:
    status: Status
    reason: str
    code: str
    rounds: int
    report: TestReport | None
    review: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)


def refine(
    llm: LLMClient,
    meter: Meter,
    sandbox: Sandbox,
    spec: dict[str, Any],
    tests: str,
    context: list[dict[str, Any]],
    draft: str,
    draft_problem: str = "",
    *,
    max_rounds: int = 3,
    limits: Limits | None = None,
    on_event: Event | None = None,
    candidate: int = 0,
    feedback: str = "",
    first_round: int = 1,
    agent_review: bool = True,
) -> RefineResult:
    """Execute, feed back, reprogram; review once the tests pass. Never raises.

    Round 1 judges the draft; each later round is one more programmer reply. A reviewer
    rejection feeds its points into the next round, like a test failure does. A person's
    rejection re-enters here with ``feedback`` (its points) and ``first_round`` (the next
    round number), so its first round is already a revision. Without ``agent_review`` the
    loop ends once the tests pass (a person reviews instead).
    """
    emit = on_event or _quiet
    code, problem = draft, draft_problem
    report: TestReport | None = None
    history: list[dict[str, Any]] = []
    status, reason, verdict_text = Status.ERROR, "no round ran", ""
    rounds = first_round - 1
    revise_first = bool(feedback)
    try:
        for round_no in range(first_round, first_round + max(1, max_rounds)):
            if round_no > first_round or revise_first:
                emit(f"round {round_no}: programmer revises the code")
                code, problem = write_code(
                    llm,
                    meter,
                    spec,
                    context,
                    previous=code,
                    feedback=feedback,
                    draft=Draft(candidate=candidate, round=round_no),
                )
            rounds = round_no
            entry: dict[str, Any] = {"round": round_no}
            history.append(entry)
            if problem:
                entry["problem"] = problem
                status, reason = Status.NO_CODE, problem
                feedback = f"Your reply broke the format: {problem}."
                continue
            emit(f"round {round_no}: running the tests in the sandbox")
            report = execute_tests(sandbox, code, tests, limits)
            entry.update(passed=report.passed, total=report.total)
            if not report.ok:
                failing = [t.name for t in report.tests if t.outcome in ("failed", "error")]
                status = Status.FAILED_TESTS
                reason = (
                    f"{report.failed if report.total else 'all'} of {report.total} tests failing "
                    f"after {round_no} round(s)"
                    + (f": {', '.join(failing[:5])}" if failing else "")
                    + ("; collection errors" if report.collection_errors else "")
                )
                feedback = failure_feedback(report, round_no)
                entry["feedback"] = feedback[:2000]
                emit(f"round {round_no}: {report.passed}/{report.total} tests passed")
                continue
            if not agent_review:
                status = Status.PASSED
                reason = f"all {report.total} tests pass (round {round_no}); a person reviews it"
                break
            emit(f"round {round_no}: all {report.total} tests pass; reviewer reads the code")
            verdict = review(llm, meter, spec, code, report)
            verdict_text = verdict.text
            entry["verdict"] = "APPROVED" if verdict.approved else "REJECTED"
            if verdict.approved:
                status = Status.PASSED
                reason = (
                    f"all {report.total} tests pass and the reviewer approved (round {round_no})"
                )
                break
            status = Status.REJECTED
            reason = "reviewer rejected: " + " ".join(verdict.reasons.split())[:300]
            feedback = prompts.FEEDBACK_REVIEW.format(reasons=verdict.reasons)
            entry["feedback"] = feedback[:2000]
    except Exception as exc:  # every failure becomes a status, with the best code so far
        status, reason = classify(exc)
    return RefineResult(status, reason, code, rounds, report, verdict_text, history)


# -- typed step results and the request state --------------------------------------------
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
    spec: dict[str, Any] = field(default_factory=dict)
    structured_outputs: str = ""  # how the server took the JSON request (StructuredMode)


@dataclass
class TestsResult(StepResult):
    tests: str = ""


@dataclass
class ContextResult(StepResult):
    queries: list[str] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)


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
    history: list[dict[str, Any]] = field(default_factory=list)
    # With several drafts: each one's test results, the groups, and why the pick won.
    selection: dict[str, Any] | None = None
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.kind,
            "text": self.text,
            "reviewer": self.reviewer,
            "decided_at": self.decided_at,
            "review_round": self.review_round,
        }


VERDICT_KINDS = ("approve", "reject", "timeout")


@dataclass
class ReviewResult(StepResult):
    """The sign-off: the mode, every verdict so far, and the code after a person's rejection
    sent it back through refinement (``revised``; None while the solution step's stands)."""

    mode: str = "agent"
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    revised: SolutionResult | None = None


@dataclass
class DocsResult(StepResult):
    docs: str = ""


@dataclass
class CrewState:
    """One request: its text and options, and each step's result once it has run."""

    request_id: str  # also the X-Codegen-Task tag: a request id, or a benchmark task id
    request: str
    options: CrewOptions = field(default_factory=CrewOptions)
    spec: SpecResult | None = None
    tests: TestsResult | None = None
    context: ContextResult | None = None
    draft: DraftResult | None = None
    solution: SolutionResult | None = None
    review: ReviewResult | None = None
    docs: DocsResult | None = None
    # Resuming a request that awaits review: the review so far, and the verdict just given.
    review_prior: ReviewResult | None = None
    verdict: HumanVerdict | None = None

    @property
    def accepted(self) -> SolutionResult | None:
        """The code under review: the refinement's, or its revision after a rejection."""
        if self.review is not None and self.review.revised is not None:
            return self.review.revised
        return self.solution

    def result(self, name: str) -> StepResult | None:
        return getattr(self, STEP_BY_NAME[name].name)

    def merged(self, *others: CrewState) -> CrewState:
        """This state with the results only ``others`` hold (Dagster hands each asset the
        states of its upstream assets; they agree on what they share)."""
        out = copy.copy(self)
        for other in others:
            for step in STEPS:
                if out.result(step.name) is None and other.result(step.name) is not None:
                    setattr(out, step.name, other.result(step.name))
        return out

    def ended(self, names: tuple[str, ...] | None = None) -> Ended | None:
        for step in STEPS:
            result = self.result(step.name)
            if (names is None or step.name in names) and result is not None and result.ended:
                return result.ended
        return None

    def usage(self, names: set[str] | None = None) -> Usage:
        total = Usage()
        for step in STEPS:
            result = self.result(step.name)
            if result is not None and (names is None or step.name in names):
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
            spec=self.spec.spec if self.spec else {},
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
        )

    def report(self, folder: Path) -> dict[str, Any]:
        """report.json: how the request ended. Holds no settings and no secrets."""
        outcome = self.outcome()
        report = outcome.test_report
        files = {
            "spec.json": bool(outcome.spec),
            "test_solution.py": bool(outcome.tests),
            "solution.py": bool(outcome.solution),
            "README.md": bool(outcome.docs),
        }
        return {
            "request_id": self.request_id,
            "status": outcome.status.value,
            "reason": outcome.reason,
            "rounds": outcome.rounds,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "test_report": report.to_dict() if report else None,
            "review": outcome.review,
            "history": outcome.history,
            "context": [c["citation"] for c in outcome.context],
            "structured_outputs": outcome.structured_outputs,
            "candidates": self.solution.selection if self.solution else None,
            "human_review": {
                "mode": self.review.mode if self.review else self.options.review,
                "verdicts": self.review.verdicts if self.review else [],
            },
            "artifacts": {name: str(folder / name) for name, ok in files.items() if ok},
            "usage": outcome.usage.to_dict(),
        }


# -- the services the steps use --------------------------------------------------------------
@dataclass
class Crew:
    """The services of one request: a task-tagged LLM client, a way to open a sandbox, the
    retriever, sandbox limits, a progress callback and (optionally) the artifact folder."""

    llm: LLMClient
    sandbox: Callable[[], AbstractContextManager[Sandbox]]
    retriever: Retriever | None = None
    limits: Limits | None = None
    on_event: Event = _quiet
    artifacts: Path | None = None


# -- the steps -----------------------------------------------------------------------------
def _spec_step(crew: Crew, state: CrewState, meter: Meter) -> SpecResult:
    analysis = analyze(crew.llm, meter, validate_request(state.request))
    return SpecResult(spec=analysis.spec, structured_outputs=analysis.structured_outputs)


def _spec(state: CrewState) -> dict[str, Any]:
    assert state.spec is not None  # run_step checked the step's needs
    return state.spec.spec


def _tests_step(crew: Crew, state: CrewState, meter: Meter) -> TestsResult:
    return TestsResult(tests=design_tests(crew.llm, meter, _spec(state)))


def _context_step(crew: Crew, state: CrewState, meter: Meter) -> ContextResult:
    spec = _spec(state)
    chunks = retrieve_context(
        crew.retriever,
        spec,
        top_k=state.options.top_k,
        token_budget=state.options.context_token_budget,
    )
    return ContextResult(queries=queries_for(spec), chunks=chunks)


def _draft_step(crew: Crew, state: CrewState, meter: Meter) -> DraftResult:
    chunks = state.context.chunks if state.context else []
    count = max(1, state.options.candidates)

    def one(index: int) -> DraftCandidate:
        own = Meter(meter.budget, prior=meter.total())
        code, problem = write_code(
            crew.llm, own, _spec(state), chunks, draft=Draft(candidate=index, round=1)
        )
        meter.add(own.usage)
        return DraftCandidate(code, problem, own.usage)

    if count == 1:
        drafts = [one(0)]
    else:
        crew.on_event(f"programmer: {count} drafts in parallel")
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="draft") as pool:
            drafts = list(pool.map(one, range(count)))
    meter.check()  # the drafts together may have crossed the budget
    return DraftResult(code=drafts[0].code, problem=drafts[0].problem, drafts=drafts)


def _select(
    crew: Crew, box: Sandbox, state: CrewState, limits: Limits | None
) -> tuple[int, dict[str, Any], str]:
    """Every draft against the suite plus the spec's examples; the pick, why, and the suite
    without suspect tests."""
    assert state.tests is not None and state.draft is not None
    drafts = state.draft.drafts
    examples = spec_example_tests(_spec(state))
    suite = with_examples(state.tests.tests, examples)
    crew.on_event(f"selection: {len(drafts)} drafts against the suite in the sandbox")

    def run(draft: DraftCandidate) -> TestReport | None:
        return execute_tests(box, draft.code, suite, limits) if draft.code else None

    with ThreadPoolExecutor(max_workers=min(4, len(drafts))) as pool:
        reports = list(pool.map(run, drafts))
    names, rows = rows_of([r or TestReport() for r in reports])
    trusted = [test_function(n).startswith(EXAMPLE_PREFIX) for n in names]
    if not names:
        chosen_index, why, groups, suspect = 0, "no test ran for any draft", [], ()
    else:
        chosen = pick(rows, trusted)
        chosen_index, why, suspect = chosen.chosen, chosen.why, chosen.suspect_tests
        groups = [
            {"members": list(g.members), "passes": len(g.passed), "score": g.score}
            for g in chosen.groups
        ]
    suspect_names = [names[t] for t in suspect]
    selection = {
        "rule": "examples_then_agreement",
        "chosen": chosen_index,
        "why": why,
        "groups": groups,
        "suspect_tests": suspect_names,
        "trusted_tests": [n for n, t in zip(names, trusted, strict=True) if t],
        "candidates": [
            {
                "candidate": i,
                "problem": d.problem,
                "passed": r.passed if r else 0,
                "total": r.total if r else 0,
                "outcomes": {n: ok for n, ok in zip(names, rows[i], strict=True)},
                "tokens": d.usage.total_tokens,
                "cost_usd": d.usage.cost_usd,
            }
            for i, (d, r) in enumerate(zip(drafts, reports, strict=True))
        ],
    }
    designer_names = [n for n, t in zip(names, trusted, strict=True) if not t]
    tests = without_tests(state.tests.tests, suspect_names, designer_names)
    crew.on_event(f"selection: draft {chosen_index} picked ({why})")
    return chosen_index, selection, tests


def _solution_step(crew: Crew, state: CrewState, meter: Meter) -> SolutionResult:
    assert state.tests is not None and state.draft is not None and state.context is not None
    limits = state.options.limits or crew.limits
    drafts = state.draft.drafts or [DraftCandidate(state.draft.code, state.draft.problem)]
    selection: dict[str, Any] | None = None
    tests = state.tests.tests
    chosen = drafts[0]
    try:
        with crew.sandbox() as box:
            if len(drafts) > 1:
                index, selection, tests = _select(crew, box, state, limits)
                chosen = drafts[index]
            result = refine(
                crew.llm,
                meter,
                box,
                _spec(state),
                tests,
                state.context.chunks,
                chosen.code,
                chosen.problem,
                max_rounds=state.options.max_rounds,
                limits=limits,
                on_event=crew.on_event,
                candidate=drafts.index(chosen),
                # In human mode a person signs off instead of the Reviewer agent.
                agent_review=state.options.review != "human",
            )
    except Exception as exc:  # e.g. no sandbox backend: still a status and a report
        status, reason = classify(exc)
        return SolutionResult(ended=Ended(status, f"sandbox: {reason}"), code=chosen.code)
    ended = None if result.status is Status.PASSED else Ended(result.status, result.reason)
    return SolutionResult(
        ended=ended,
        code=result.code,
        reason=result.reason,
        rounds=result.rounds,
        report=result.report,
        review=result.review,
        history=result.history,
        selection=selection,
        tests=tests,
    )


def _review_step(crew: Crew, state: CrewState, meter: Meter) -> ReviewResult:
    """Agent mode: the refinement's reviewer already signed off. Human and both: wait for a
    person (``awaiting_review``); a verdict resumes here: approval accepts the code, a
    rejection sends it back through refinement with the points, then it waits again."""
    mode = state.options.review
    if mode == "agent":
        return ReviewResult(mode=mode)
    prior = state.review_prior or ReviewResult(mode=mode)
    # Earlier review rounds count against the budget too, and stay in the usage.
    meter.prior = meter.prior.merge(prior.usage)
    result = ReviewResult(
        usage=prior.usage, mode=mode, verdicts=list(prior.verdicts), revised=prior.revised
    )
    verdict = state.verdict
    if verdict is None:
        return _awaiting(result, len(result.verdicts) + 1)
    result.verdicts.append(verdict.to_dict())
    if verdict.kind == "approve":
        return result
    if verdict.kind == "timeout":
        result.ended = Ended(Status.REJECTED, f"review timed out: {verdict.text}")
        return result
    current = result.revised or state.solution
    assert current is not None and state.tests is not None and state.context is not None
    # The suite the code was refined against (suspect tests dropped), as in the solution step.
    tests = current.tests or state.tests.tests
    crew.on_event(f"review round {verdict.review_round}: rejected; programmer revises")
    with crew.sandbox() as box:
        again = refine(
            crew.llm,
            meter,
            box,
            _spec(state),
            tests,
            state.context.chunks,
            current.code,
            max_rounds=state.options.max_rounds,
            limits=state.options.limits or crew.limits,
            on_event=crew.on_event,
            feedback=prompts.FEEDBACK_HUMAN.format(points=verdict.text),
            first_round=current.rounds + 1,
            agent_review=mode == "both",
        )
    result.revised = SolutionResult(
        code=again.code,
        reason=again.reason,
        rounds=again.rounds,
        report=again.report or current.report,
        review=again.review or current.review,
        history=[*current.history, *again.history],
        selection=current.selection,
        tests=tests,
    )
    if again.status is not Status.PASSED:
        result.ended = Ended(again.status, again.reason)
        return result
    return _awaiting(result, len(result.verdicts) + 1)


def _awaiting(result: ReviewResult, review_round: int) -> ReviewResult:
    result.ended = Ended(
        Status.AWAITING_REVIEW, f"the tests pass; awaiting a person's review (round {review_round})"
    )
    return result


def _docs_step(crew: Crew, state: CrewState, meter: Meter) -> DocsResult:
    accepted = state.accepted
    assert accepted is not None
    return DocsResult(docs=document(crew.llm, meter, _spec(state), accepted.code))


StepFn = Callable[[Crew, CrewState, Meter], StepResult]


@dataclass(frozen=True)
class Step:
    name: str  # the CrewState field it fills
    needs: tuple[str, ...]
    run: StepFn
    result_type: type[StepResult]
    doing: str  # progress line when it starts


STEPS: tuple[Step, ...] = (
    Step("spec", (), _spec_step, SpecResult, "analyzer: writing the spec"),
    # The test designer works from the spec alone, in parallel with retrieval + programmer.
    Step("tests", ("spec",), _tests_step, TestsResult, "test designer: writing the tests"),
    Step("context", ("spec",), _context_step, ContextResult, "retrieving context"),
    Step("draft", ("spec", "context"), _draft_step, DraftResult, "programmer: first draft"),
    Step(
        "solution",
        ("spec", "tests", "context", "draft"),
        _solution_step,
        SolutionResult,
        "refinement: test, feed back, revise, review",
    ),
    Step("review", ("solution",), _review_step, ReviewResult, "review: the code's sign-off"),
    Step("docs", ("spec", "review"), _docs_step, DocsResult, "documenter: writing the README"),
)
STEP_BY_NAME: dict[str, Step] = {s.name: s for s in STEPS}


def upstream(name: str) -> set[str]:
    """Every step ``name`` depends on, directly or not."""
    out: set[str] = set()
    todo = list(STEP_BY_NAME[name].needs)
    while todo:
        need = todo.pop()
        if need not in out:
            out.add(need)
            todo.extend(STEP_BY_NAME[need].needs)
    return out


def run_step(name: str, crew: Crew, state: CrewState) -> StepResult:
    """One step over ``state``; never raises. A step after the request ended does no work and
    carries the ending on; the budget counts what every upstream step spent."""
    step = STEP_BY_NAME[name]
    missing = [n for n in step.needs if state.result(n) is None]
    if missing:
        raise ValueError(f"step {name} needs {', '.join(missing)} first")
    before = upstream(name)
    ended = state.ended(tuple(before))
    if ended is not None:
        return step.result_type(ended=ended)
    crew.on_event(step.doing)
    meter = Meter(state.options.budget, prior=state.usage(before))
    try:
        result = step.run(crew, state, meter)
    except Exception as exc:
        status, reason = classify(exc)
        result = step.result_type(ended=Ended(status, reason))
    # A step may carry usage of its own earlier rounds (a resumed review).
    result.usage = result.usage.merge(meter.usage)
    return result


def advance(name: str, crew: Crew, state: CrewState) -> CrewState:
    """``state`` with step ``name`` run, and its artifacts stored when the crew has a folder."""
    new = replace(state, **{name: run_step(name, crew, state)})
    if crew.artifacts is not None:
        store_artifacts(crew.artifacts, name, new)
    return new


def run_steps(crew: Crew, state: CrewState) -> CrewState:
    """Every step whose result is missing, each as soon as the steps it needs are done, so
    independent steps (the test designer and the programmer) run in parallel."""
    pending = [s for s in STEPS if state.result(s.name) is None]
    running: dict[Future[CrewState], Step] = {}
    with ThreadPoolExecutor(max_workers=len(STEPS), thread_name_prefix="crew") as pool:
        while pending or running:
            for step in list(pending):
                if all(state.result(n) is not None for n in step.needs):
                    running[pool.submit(advance, step.name, crew, state)] = step
                    pending.remove(step)
            if not running:
                raise ValueError(f"steps cannot run: {[s.name for s in pending]}")
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                step = running.pop(future)
                setattr(state, step.name, future.result().result(step.name))
    return state


# -- artifacts and the one report.json writer -------------------------------------------------
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


# -- the in-process path ------------------------------------------------------------------
def run_crew(
    request: str,
    *,
    llm: LLMClient,
    sandbox: Sandbox,
    retriever: Retriever | None = None,
    options: CrewOptions | None = None,
    on_event: Event | None = None,
    task_id: str | None = None,
    artifacts: Path | None = None,
) -> CrewOutcome:
    """Run the whole crew in this process: the same steps the Dagster assets run.

    ``task_id`` tags every request (``X-Codegen-Task``): the benchmark task during an
    evaluation; a fresh request id when None. ``artifacts``: a folder for the request's files.
    """
    options = options or CrewOptions()
    emit = on_event or _quiet
    state = CrewState(request_id=task_id or new_request_id(), request=request, options=options)
    crew = Crew(
        llm=llm.for_task(state.request_id),
        sandbox=lambda: nullcontext(sandbox),
        retriever=retriever,
        limits=options.limits,
        on_event=emit,
        artifacts=artifacts,
    )
    outcome = run_steps(crew, state).outcome()
    emit(f"{outcome.status.value}: {outcome.reason}")
    return outcome
