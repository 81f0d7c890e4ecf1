"""The five agents and the test executor, each one plain function.

The in-process loop (``codegen.agents.crew``) and the Dagster assets call these same functions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from codegen.agents import prompts
from codegen.agents.llm import Draft, LLMClient, Meter
from codegen.agents.records import ContextChunk
from codegen.agents.replies import (
    AgentOutputError,
    ParsedCode,
    extract_json,
    extract_module,
    extract_program,
    extract_tests,
    strip_reasoning,
)
from codegen.agents.spec import SPEC_JSON_SCHEMA, Analysis, Spec
from codegen.agents.types import Verdict
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits, TestReport
from codegen.untrusted import TooLarge, read_capped

# Requests beyond this size are refused: no real request needs it and it guards the budget.
MAX_REQUEST_CHARS = 20_000
# A request file (``codegen generate @FILE``) is read up to this many bytes and no further: the
# longest request in UTF-8 (4 bytes a character) plus room for blank lines around it.
MAX_REQUEST_FILE_BYTES = 4 * MAX_REQUEST_CHARS + 64 * 1024
# Feedback to the programmer is trimmed so a huge traceback cannot blow the context window.
MAX_FEEDBACK_CHARS = 6_000
MAX_TRACE_LINES = 25


class BadRequest(ValueError):
    """The request text itself is unusable (empty, binary, huge)."""


def read_request_file(path: Path) -> bytes:
    """The bytes of a request file, never reading past MAX_REQUEST_FILE_BYTES (a huge file, a
    device or a FIFO is refused, not read whole); BadRequest past it, OSError as raised."""
    try:
        return read_capped(path, MAX_REQUEST_FILE_BYTES)
    except TooLarge:
        raise BadRequest(
            f"the file is larger than {MAX_REQUEST_FILE_BYTES} bytes; a request is at most "
            f"{MAX_REQUEST_CHARS} characters"
        ) from None


def validate_request(text: str) -> str:
    if not isinstance(text, str):
        raise BadRequest("the request must be text")
    if "\x00" in text:
        raise BadRequest("the request contains NUL bytes (binary input?)")
    stripped = text.strip()
    if not stripped:
        raise BadRequest("the request is empty")
    if len(stripped) > MAX_REQUEST_CHARS:
        raise BadRequest(
            f"the request is {len(stripped)} characters long; the limit is {MAX_REQUEST_CHARS}"
        )
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in stripped)
    if printable < 0.95 * len(stripped):
        raise BadRequest("the request is mostly unprintable characters (binary input?)")
    return stripped


def spec_json(spec: Spec) -> str:
    """The spec as the agents are shown it (a function-only spec reads as it always did:
    recorded replies match it)."""
    return json.dumps(spec.shown(), indent=2, ensure_ascii=False)


def system_prompt(base: str, program_part: str, spec: Spec) -> str:
    """A role's system prompt for ``spec``: ``base``, and for a program ``program_part`` after
    it (a spec without a program gets ``base`` unchanged: recorded replies still match it)."""
    if spec.program is None:
        return base
    return f"{base}\n\n{program_part.format(comparison=spec.program.comparison)}"


# -- parsing the wire conventions -------------------------------------------------------------
def parse_verdict(text: str) -> Verdict:
    """APPROVED only when it is the reply's first word (``<think>`` reasoning dropped first);
    anything else is a rejection."""
    text = strip_reasoning(text)
    first = re.match(r"\s*[*_#>`\s]*([A-Za-z]+)", text)
    return Verdict(approved=bool(first and first.group(1) == "APPROVED"), text=text.strip())


# -- agents ------------------------------------------------------------------------------
def analyze(llm: LLMClient, meter: Meter, request: str) -> Analysis:
    """Requirements Analyzer: request -> spec (Structured Outputs where the server has them,
    else JSON mode or plain prompting; one re-ask when the spec is invalid)."""
    messages = [
        {"role": "system", "content": prompts.ANALYZER_SYSTEM},
        {"role": "user", "content": prompts.ANALYZER_USER.format(request=request)},
    ]
    error = ""
    for attempt in range(2):
        reply, mode = llm.complete_structured(
            "analyzer", messages, meter, name="spec", schema=SPEC_JSON_SCHEMA
        )
        try:
            spec = Spec.model_validate_json(extract_json(reply.content))
            return Analysis(spec=spec, structured_outputs=mode.value)
        except AgentOutputError as exc:
            error = str(exc)
        except ValidationError as exc:
            error = _validation_summary(exc)
        if attempt == 0:
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content[:4000]},
                {"role": "user", "content": prompts.ANALYZER_REASK.format(error=error)},
            ]
    raise AgentOutputError(f"analyzer: invalid spec after one re-ask: {error}")


def _validation_summary(exc: ValidationError) -> str:
    errors = exc.errors()
    if errors and errors[0].get("type") == "json_invalid":
        return "the reply is not valid JSON"
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errors[:5]]
    return "; ".join(parts)


def design_tests(llm: LLMClient, meter: Meter, spec: Spec) -> str:
    """Test Designer: spec -> ``test_solution.py``. It only ever sees the spec, never code.

    A reply with no usable test module is told what was wrong and asked once more.
    """
    messages = [
        {
            "role": "system",
            "content": system_prompt(
                prompts.TEST_DESIGNER_SYSTEM, prompts.TEST_DESIGNER_PROGRAM, spec
            ),
        },
        {"role": "user", "content": prompts.TEST_DESIGNER_USER.format(spec_json=spec_json(spec))},
    ]
    problem = ""
    for attempt in range(2):
        reply = llm.complete("test_designer", messages, meter)
        try:
            return extract_tests(reply.content).code
        except AgentOutputError as exc:
            problem = str(exc)
        if attempt == 0:
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content[:4000]},
                {"role": "user", "content": prompts.FORMAT_REASK.format(problem=problem)},
            ]
    raise AgentOutputError(f"test_designer: no usable test module after one re-ask: {problem}")


def format_context(chunks: list[ContextChunk]) -> str:
    if not chunks:
        return prompts.PROGRAMMER_NO_CONTEXT
    parts = [f"# {c.citation}\n{c.text.rstrip()}" for c in chunks]
    return prompts.PROGRAMMER_CONTEXT.format(chunks="\n\n".join(parts))


def write_code(
    llm: LLMClient,
    meter: Meter,
    spec: Spec,
    context: list[ContextChunk],
    *,
    previous: str | None = None,
    feedback: str | None = None,
    draft: Draft | None = None,
) -> tuple[str, str]:
    """Programmer: spec + context (+ previous code and feedback) -> ``solution.py``.

    Returns (code, problem): a reply with no usable code (see ``codegen.agents.replies``) yields the
    previous code and the problem, so the loop can feed the contract violation back next round.
    """
    user = prompts.PROGRAMMER_USER.format(
        spec_json=spec_json(spec), context=format_context(context)
    )
    messages = [
        {
            "role": "system",
            "content": system_prompt(prompts.PROGRAMMER_SYSTEM, prompts.PROGRAMMER_PROGRAM, spec),
        },
        {"role": "user", "content": user},
    ]
    if previous is not None and feedback:
        revise = prompts.PROGRAMMER_REVISE.format(code=previous.rstrip(), feedback=feedback)
        messages.append({"role": "user", "content": revise})
    reply = llm.complete("programmer", messages, meter, draft=draft or Draft())
    try:
        return read_solution(reply.content, spec).code, ""
    except AgentOutputError as exc:
        return previous or "", f"programmer: {exc}"


def read_solution(text: str, spec: Spec) -> ParsedCode:
    """``solution.py`` from a programmer reply, read against the spec's functions and
    classes (each with its constructor and methods); for a spec with a program, as a program
    (its top-level statements kept: ``agents.replies.program``)."""
    functions = [(f.name, f.signature) for f in spec.functions]
    classes = {c.name: ["__init__", *(m.name for m in c.methods)] for c in spec.classes}
    read = extract_program if spec.program is not None else extract_module
    return read(text, functions, classes)


def review(llm: LLMClient, meter: Meter, spec: Spec, code: str, report: TestReport) -> Verdict:
    """Reviewer: APPROVED only when the reply starts with it."""
    user = prompts.REVIEWER_USER.format(
        spec_json=spec_json(spec), code=code.rstrip(), passed=report.passed, total=report.total
    )
    messages = [
        {
            "role": "system",
            "content": system_prompt(prompts.REVIEWER_SYSTEM, prompts.REVIEWER_PROGRAM, spec),
        },
        {"role": "user", "content": user},
    ]
    return parse_verdict(llm.complete("reviewer", messages, meter).content)


def document(llm: LLMClient, meter: Meter, spec: Spec, code: str) -> str:
    """Documentation Generator: README.md (usage + API reference) for the accepted code."""
    messages = [
        {
            "role": "system",
            "content": system_prompt(prompts.DOCUMENTER_SYSTEM, prompts.DOCUMENTER_PROGRAM, spec),
        },
        {
            "role": "user",
            "content": prompts.DOCUMENTER_USER.format(
                spec_json=spec_json(spec), code=code.rstrip()
            ),
        },
    ]
    text = llm.complete("documenter", messages, meter).content.strip()
    if not text:
        raise AgentOutputError("documenter: empty reply")
    # A reply wrapped in one ```markdown fence is unwrapped; the README is the Markdown itself.
    fenced = re.fullmatch(r"```(?:markdown|md)?\s*\n(.*?)\n```", text, re.S)
    return (fenced.group(1) if fenced else text).strip() + "\n"


# -- test executor ---------------------------------------------------------------------------
def execute_tests(sandbox: Sandbox, code: str, tests: str, limits: Limits | None) -> TestReport:
    """Test Executor: runs the suite against the code in the sandbox."""
    return sandbox.run_pytest(code, tests, limits)


def failure_feedback(report: TestReport, round_no: int) -> str:
    """Failing tests' names, assertion messages and trimmed tracebacks, for the programmer."""
    lines: list[str] = []
    for err in report.collection_errors:
        lines.append(
            f"Collection error (the test module could not import solution.py):\n{_trim(err)}"
        )
    for case in report.tests:
        if case.outcome in ("failed", "error"):
            lines.append(f"FAILED {case.name}: {case.message.strip()}")
            if case.details:
                lines.append(_trim(case.details))
    if report.total == 0 and not report.collection_errors:
        exec_result = report.exec_result
        if exec_result is not None and exec_result.timed_out:
            lines.append("The test run timed out (an infinite loop or very slow code?).")
        elif exec_result is not None and exec_result.oom_killed:
            lines.append("The test run was killed for using too much memory.")
        else:
            tail = (exec_result.stdout + exec_result.stderr)[-1500:] if exec_result else ""
            lines.append(f"No test ran. Output:\n{tail}")
    text = prompts.FEEDBACK_TESTS.format(
        round=round_no,
        failed=report.failed if report.total else "all",
        total=report.total or "the",
        details="\n".join(lines),
    )
    return text[:MAX_FEEDBACK_CHARS]


def _trim(text: str) -> str:
    rows = text.strip().splitlines()
    if len(rows) > MAX_TRACE_LINES:
        rows = ["...", *rows[-MAX_TRACE_LINES:]]
    return "\n".join(rows)
