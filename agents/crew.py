"""The crew as one in-process loop, and the refinement loop the Dagster assets share with it.

``analyze -> (design_tests || retrieve + write_code) -> refine (execute, feed back,
reprogram, review) -> document``. Every run ends with one ``Status`` and a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agents import prompts
from agents.context import retrieve_context
from agents.llm import Draft, LLMClient, LLMError
from agents.requests import new_request_id
from agents.roles import (
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
from agents.types import BudgetExceeded, CrewOptions, CrewOutcome, Meter, Status
from retrieval.types import Retriever
from sandbox.api import Sandbox
from sandbox.types import Limits, TestReport

Event = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def classify(exc: BaseException) -> tuple[Status, str]:
    """The status and one-line reason an exception ends a request with."""
    if isinstance(exc, BudgetExceeded):
        return Status.BUDGET_EXCEEDED, str(exc)
    if isinstance(exc, LLMError | AgentOutputError | BadRequest):
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
) -> RefineResult:
    """Execute, feed back, reprogram; review once the tests pass. Never raises.

    Round 1 judges the draft; each later round is one more programmer reply. A reviewer
    rejection feeds its points into the next round, like a test failure does.
    """
    emit = on_event or _quiet
    code, problem = draft, draft_problem
    report: TestReport | None = None
    history: list[dict[str, Any]] = []
    status, reason, verdict_text = Status.ERROR, "no round ran", ""
    rounds = 0
    feedback = ""
    try:
        for round_no in range(1, max(1, max_rounds) + 1):
            if round_no > 1:
                emit(f"round {round_no}: programmer revises the code")
                code, problem = write_code(
                    llm,
                    meter,
                    spec,
                    context,
                    previous=code,
                    feedback=feedback,
                    draft=Draft(candidate=0, round=round_no),
                )
            rounds = round_no
            entry: dict[str, Any] = {"round": round_no}
            history.append(entry)
            if problem:
                entry["problem"] = problem
                status, reason = Status.ERROR, problem
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


def run_crew(
    request: str,
    *,
    llm: LLMClient,
    sandbox: Sandbox,
    retriever: Retriever | None = None,
    options: CrewOptions | None = None,
    on_event: Event | None = None,
    task_id: str | None = None,
) -> CrewOutcome:
    """Run the whole crew in this process; the Dagster assets run the same functions.

    ``task_id`` tags every request (``X-Codegen-Task``): the benchmark task during an
    evaluation; a fresh request id when None.
    """
    options = options or CrewOptions()
    llm = llm.for_task(task_id or new_request_id())
    emit = on_event or _quiet
    meter = Meter(options.budget)
    outcome = CrewOutcome(status=Status.ERROR, reason="not started")
    try:
        request = validate_request(request)
        emit("analyzer: writing the spec")
        analysis = analyze(llm, meter, request)
        outcome.spec, outcome.structured_outputs = analysis.spec, analysis.structured_outputs
        # The test designer works from the spec alone, in parallel with retrieval + programmer.
        emit("test designer and programmer: working in parallel")
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="crew") as pool:
            tests_future = pool.submit(design_tests, llm, meter, outcome.spec)
            try:
                outcome.context = retrieve_context(
                    retriever,
                    outcome.spec,
                    top_k=options.top_k,
                    token_budget=options.context_token_budget,
                )
                draft, problem = write_code(llm, meter, outcome.spec, outcome.context)
            finally:
                outcome.tests = tests_future.result()
        result = refine(
            llm,
            meter,
            sandbox,
            outcome.spec,
            outcome.tests,
            outcome.context,
            draft,
            problem,
            max_rounds=options.max_rounds,
            limits=options.limits,
            on_event=emit,
        )
        outcome.status, outcome.reason = result.status, result.reason
        outcome.solution, outcome.rounds = result.code, result.rounds
        outcome.test_report, outcome.review = result.report, result.review
        outcome.history = result.history
        if result.status is Status.PASSED:
            emit("documenter: writing the README")
            outcome.docs = document(llm, meter, outcome.spec, outcome.solution)
    except Exception as exc:
        outcome.status, outcome.reason = classify(exc)
    outcome.usage = meter.total()
    emit(f"{outcome.status.value}: {outcome.reason}")
    return outcome
