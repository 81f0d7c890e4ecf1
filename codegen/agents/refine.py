"""The refinement loop: execute the tests, feed failures back, reprogram; review once
they pass. Every failure becomes a ``Status`` and a one-line reason."""

from __future__ import annotations

from collections.abc import Callable

from codegen.agents import prompts
from codegen.agents.llm import BudgetExceeded, Draft, LLMClient, LLMError, Meter
from codegen.agents.records import ContextChunk, Round
from codegen.agents.report import all_pass, counted
from codegen.agents.roles import (
    AgentOutputError,
    BadRequest,
    execute_tests,
    failure_feedback,
    review,
    write_code,
)
from codegen.agents.spec import Spec
from codegen.agents.state import Ended, SolutionResult
from codegen.agents.types import Status
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits, TestReport

Event = Callable[[str], None]


def quiet(_: str) -> None:
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


def _failing(report: TestReport, round_no: int) -> str:
    """Why a round ended with failing tests: how many, the first names, collection errors."""
    failing = [t.name for t in report.tests if t.outcome in ("failed", "error")]
    return (
        f"{report.failed if report.total else 'all'} of {counted(report.total, 'test')} "
        f"failing after {counted(round_no, 'round')}"
        + (f": {', '.join(failing[:5])}" if failing else "")
        + ("; collection errors" if report.collection_errors else "")
        + (f"; {report.time_limit_note}" if report.time_limit_note else "")
    )


def _program_unchecked(spec: Spec, report: TestReport) -> str:
    """Why a passing suite does not vouch for a program spec's code: none of its tests ran
    the program (no worked run in the spec, and the designer's tests never called
    ``program``); "" otherwise."""
    if spec.program is None or not report.ok or any(t.program_runs for t in report.tests):
        return ""
    return (
        f"all {report.total} tests passed but none ran the program "
        f"`{spec.program.name}`: nothing checked what it reads and prints"
    )


def refine(
    llm: LLMClient,
    meter: Meter,
    sandbox: Sandbox,
    spec: Spec,
    tests: str,
    context: list[ContextChunk],
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
) -> SolutionResult:
    """Execute, feed back, reprogram; review once the tests pass. Never raises.

    The result ends the request (``ended``) unless the code passed.

    Round 1 judges the draft; each later round is one more programmer reply. A reviewer
    rejection feeds its points into the next round, like a test failure does. A person's
    rejection re-enters here with ``feedback`` (its points) and ``first_round`` (the next
    round number), so its first round is already a revision. Without ``agent_review`` the
    loop ends once the tests pass (a person reviews instead).
    """
    emit = on_event or quiet
    code, problem = draft, draft_problem
    report: TestReport | None = None
    history: list[Round] = []
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
            entry = Round(round_no)
            history.append(entry)
            if problem:
                entry.problem = problem
                status, reason = Status.NO_CODE, problem
                feedback = f"Your reply broke the format: {problem}."
                continue
            emit(f"round {round_no}: running the tests in the sandbox")
            report = execute_tests(sandbox, code, tests, limits)
            entry.passed, entry.total = report.passed, report.total
            unchecked = _program_unchecked(spec, report)
            if unchecked:  # the suite's fault, not the code's: another round cannot help
                status, reason = Status.FAILED_TESTS, unchecked
                break
            if not report.ok:
                status, reason = Status.FAILED_TESTS, _failing(report, round_no)
                feedback = failure_feedback(report, round_no)
                entry.feedback = feedback[:2000]
                emit(f"round {round_no}: {report.passed}/{report.total} tests passed")
                continue
            if not agent_review:
                status = Status.PASSED
                reason = f"{all_pass(report.total)} (round {round_no}); a person reviews it"
                break
            emit(f"round {round_no}: {all_pass(report.total)}; reviewer reads the code")
            verdict = review(llm, meter, spec, code, report)
            verdict_text = verdict.text
            entry.verdict = "APPROVED" if verdict.approved else "REJECTED"
            if verdict.approved:
                status = Status.PASSED
                reason = f"{all_pass(report.total)} and the reviewer approved (round {round_no})"
                break
            status = Status.REJECTED
            reason = "reviewer rejected: " + " ".join(verdict.reasons.split())[:300]
            feedback = prompts.FEEDBACK_REVIEW.format(reasons=verdict.reasons)
            entry.feedback = feedback[:2000]
    except Exception as exc:  # every failure becomes a status, with the best code so far
        status, reason = classify(exc)
    return SolutionResult(
        ended=None if status is Status.PASSED else Ended(status, reason),
        code=code,
        reason=reason,
        rounds=rounds,
        report=report,
        review=verdict_text,
        history=history,
    )
