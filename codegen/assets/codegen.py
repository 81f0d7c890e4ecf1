"""Code-generation assets: every request is one partition of the ``requests`` dynamic partitions.

``request_spec -> (test_suite || retrieved_context -> solution_code[draft]) ->
solution_code[refine] -> human_review -> documentation``, with a blocking sandbox check and a
bandit check on ``solution_code``. ``human_review`` passes agent-mode requests straight on; in
human and both modes it ends the run in ``awaiting_review`` until the ``review_request`` job
rematerializes it (and ``documentation``) with a person's verdict as run config. The
sequence is ``codegen.agents.crew.STEPS``, the one the in-process ``run_crew`` runs too: each asset
(or op) merges its upstream ``CrewState`` values, runs its step with ``codegen.agents.crew.advance``
and returns the new state. Failures never raise: a step after an ending carries it on, and
``report.json`` (written by ``codegen.agents.crew.write_report`` alone) always says how the request
ended.
"""

import json
import subprocess
import sys
import warnings
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    Config,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    Out,
    Output,
    PreviewWarning,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
    asset_check,
    graph_asset,
    op,
)

from codegen.agents import prompts
from codegen.agents.crew import Crew, CrewState, StepResult, Verification, advance, write_report
from codegen.agents.llm import LLMRoute
from codegen.agents.roles import execute_tests
from codegen.agents.types import SPEC_JSON_SCHEMA, Status, Usage, is_outage
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.requests.review import ReviewError, ReviewStore
from codegen.requests.store import TITLE_TAG, RequestStore, artifact_dir, request_title
from codegen.retrieval.grounding import Grounding
from codegen.settings import Settings

requests_partitions = DynamicPartitionsDefinition(name="requests")

GROUP = "codegen"
OK = "ok"  # metadata of an intermediate step that succeeded; final ones are agents.types.Status

_SCHEMA = json.dumps(SPEC_JSON_SCHEMA, sort_keys=True)
SPEC_VERSION = prompts.prompt_version("analyzer", extra=_SCHEMA)
TESTS_VERSION = prompts.prompt_version("test_designer")
CODE_VERSION = prompts.prompt_version("programmer", "reviewer")
DOCS_VERSION = prompts.prompt_version("documenter")
CONTEXT_VERSION = "1"


# -- helpers ---------------------------------------------------------------------------------
def _folder(settings: Settings, request_id: str) -> Path:
    return artifact_dir(settings.artifacts_dir, request_id)


def _crew(
    context: AssetExecutionContext | OpExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource | None = None,
    retriever: RetrieverResource | None = None,
) -> Crew:
    """The services of this request's step, tagged with its request id (the partition), on
    the LLM route the request was queued with (its caller's endpoint and models), if any."""
    request_id = context.partition_key
    try:
        stored = RequestStore(settings.load().requests_dir).get(request_id).route
    except KeyError:
        stored = None
    route = LLMRoute.from_dict(stored) if stored else None
    return Crew(
        llm=llm.client(route).for_task(request_id),
        sandbox=sandbox.open if sandbox is not None else _no_sandbox,
        retriever=retriever.get_retriever() if retriever is not None else None,
        grounding=retriever.grounding if retriever is not None else None,
        limits=sandbox.limits() if sandbox is not None else None,
        on_event=context.log.info,
        artifacts=_folder(settings.load(), request_id),
    )


def _fail_on_outage(settings: SettingsResource, state: CrewState, name: str) -> CrewState:
    """``state`` when step ``name`` did not end in an outage; else report.json says so and the
    step fails (red in the UI, nothing materialized; a re-run retries, nothing was cached)."""
    result = state.result(name)
    ended = result.ended if result is not None else None
    if ended is not None and is_outage(ended.status):
        write_report(_folder(settings.load(), state.request_id), state)
        raise Failure(description=f"{ended.status.value}: {ended.reason}", allow_retries=True)
    return state


def _no_sandbox() -> Any:
    raise RuntimeError("this step has no sandbox")


def _md_code(text: str, lang: str = "python") -> MetadataValue:
    return MetadataValue.md(f"```{lang}\n{text.rstrip()}\n```" if text.strip() else "_(none)_")


def _usage_metadata(usage: Usage) -> dict[str, Any]:
    rows = [
        TableRecord(
            {
                "agent": role,
                "calls": a.calls,
                "prompt_tokens": a.prompt_tokens,
                "completion_tokens": a.completion_tokens,
                "latency_s": round(a.latency_s, 3),
                "cache_hits": a.cache_hits,
                "cost_usd": "unknown" if a.cost_usd is None else f"{a.cost_usd:.6f}",
            }
        )
        for role, a in sorted(usage.per_agent.items())
    ]
    schema = TableSchema(
        columns=[
            TableColumn("agent", "string"),
            TableColumn("calls", "int"),
            TableColumn("prompt_tokens", "int"),
            TableColumn("completion_tokens", "int"),
            TableColumn("latency_s", "float"),
            TableColumn("cache_hits", "int"),
            TableColumn("cost_usd", "string"),
        ]
    )
    return {
        "tokens": usage.total_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        # An unknown price is shown as unknown, never as 0.
        "cost_usd": "unknown" if usage.cost_usd is None else round(usage.cost_usd, 6),
        "cache_hits": usage.cache_hits,
        "cache_misses": usage.cache_misses,
        "per_agent": MetadataValue.table(rows, schema=schema),
    }


def _usage_and_endpoints(usage: Usage) -> dict[str, Any]:
    return {
        **_usage_metadata(usage),
        "endpoints": MetadataValue.json(usage.endpoints_by_role()),
    }


def _step_metadata(result: StepResult | None) -> dict[str, Any]:
    """Status and reason of an intermediate step (``ok`` unless it ended the request)."""
    ended = result.ended if result is not None else None
    status = ended.status.value if ended else OK
    return {
        "status": status,
        "reason": ended.reason if ended else "",
        **_usage_and_endpoints(result.usage if result is not None else Usage()),
    }


def _grounding_metadata(state: CrewState) -> dict[str, Any]:
    grounding = state.context.grounding if state.context else None
    if grounding is None:
        return {"grounding": "unknown"}
    return {
        "grounding": grounding["status"],
        "grounding_chunks": grounding["chunks"],
        "embedded_fraction": grounding["embedded_fraction"],
    }


def _final_metadata(state: CrewState) -> dict[str, Any]:
    status = state.status
    return {
        **_grounding_metadata(state),
        TITLE_TAG: request_title(state.request),
        "status": status.value if status else "under way",
        "reason": state.reason,
        **_usage_and_endpoints(state.usage()),
    }


# -- assets ----------------------------------------------------------------------------------
@asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=SPEC_VERSION,
    description="The Requirements Analyzer's JSON spec of the request (Structured Outputs).",
)
def request_spec(
    context: AssetExecutionContext, settings: SettingsResource, llm: LLMResource
) -> MaterializeResult:
    stored = RequestStore(settings.load().requests_dir).get(context.partition_key)
    # The review mode's default is [review] mode; the request's own options override it.
    options = llm.crew_options({"review": settings.load().review.mode, **stored.options})
    start = CrewState(request_id=stored.id, request=stored.text, options=options)
    state = _fail_on_outage(settings, advance("spec", _crew(context, settings, llm), start), "spec")
    spec = state.spec.spec if state.spec else {}
    return MaterializeResult(
        value=state,
        metadata={
            **_step_metadata(state.spec),
            "request": MetadataValue.md(f"> {stored.text[:2000]}"),
            "spec": _md_code(json.dumps(spec, indent=2), "json"),
            "structured_outputs": state.spec.structured_outputs if state.spec else "",
        },
    )


@asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=TESTS_VERSION,
    description="The Test Designer's pytest module, written from the spec alone (never code).",
)
def test_suite(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    request_spec: CrewState,
) -> MaterializeResult:
    state = _fail_on_outage(
        settings, advance("tests", _crew(context, settings, llm), request_spec), "tests"
    )
    tests = state.tests.tests if state.tests else ""
    return MaterializeResult(
        value=state,
        metadata={
            **_step_metadata(state.tests),
            "tests": _md_code(tests),
            "test_functions": tests.count("\ndef test_") + tests.startswith("def test_"),
        },
    )


@asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=CONTEXT_VERSION,
    description="Corpus chunks for the programmer: spec to queries, deduplicated, cited, budgeted.",
)
def retrieved_context(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    retriever: RetrieverResource,
    request_spec: CrewState,
) -> MaterializeResult:
    crew = _crew(context, settings, llm, retriever=retriever)
    state = _fail_on_outage(settings, advance("context", crew, request_spec), "context")
    found = state.context
    chunks = found.chunks if found else []
    return MaterializeResult(
        value=state,
        metadata={
            "status": found.ended.status.value if found and found.ended else OK,
            "chunks": len(chunks),
            "tokens": sum(c["tokens"] for c in chunks),
            "queries": MetadataValue.json(found.queries if found else []),
            "citations": MetadataValue.json([c["citation"] for c in chunks]),
            **_grounding_metadata(state),
        },
    )


@op(code_version=CODE_VERSION, description="Programmer: the first draft of solution.py.")
def programmer_draft(
    context: OpExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    request_spec: CrewState,
    retrieved_context: CrewState,
) -> CrewState:
    upstream = request_spec.merged(retrieved_context)
    return _fail_on_outage(
        settings, advance("draft", _crew(context, settings, llm), upstream), "draft"
    )


@op(
    code_version=CODE_VERSION,
    description="Test Executor, Programmer and Reviewer: execute, feed back, reprogram, review.",
    out=Out(CrewState),
)
def refine_solution(
    context: OpExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    request_spec: CrewState,
    test_suite: CrewState,
    retrieved_context: CrewState,
    draft: CrewState,
) -> Output:
    upstream = request_spec.merged(test_suite, retrieved_context, draft)
    crew = _crew(context, settings, llm, sandbox=sandbox)
    state = _fail_on_outage(settings, advance("solution", crew, upstream), "solution")
    solution = state.solution
    report = solution.report if solution else None
    code = solution.code if solution else ""
    return Output(
        state,
        metadata={
            **_final_metadata(state),
            "rounds": solution.rounds if solution else 0,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "code": _md_code(code),
            "review": MetadataValue.md((solution.review if solution else "") or "_(not reviewed)_"),
            # With --candidates N: each draft's results, the groups and why the pick won.
            "candidates": MetadataValue.json(
                (solution.selection if solution else None) or {"drafts": 1}
            ),
            "artifacts": MetadataValue.path(str(_folder(settings.load(), context.partition_key))),
        },
    )


@graph_asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=CODE_VERSION,
    ins={
        "request_spec": AssetIn("request_spec"),
        "test_suite": AssetIn("test_suite"),
        "retrieved_context": AssetIn("retrieved_context"),
    },
    description=(
        "solution.py after the refinement loop. The draft op needs no tests, so it runs in "
        "parallel with the test designer."
    ),
)
def solution_code(
    request_spec: CrewState, test_suite: CrewState, retrieved_context: CrewState
) -> CrewState:
    draft = programmer_draft(request_spec, retrieved_context)
    return refine_solution(request_spec, test_suite, retrieved_context, draft)


# The job that brings a verdict (codegen/orchestration/review.py); named here so the asset can tell
# it.
REVIEW_JOB = "review_request"


class ReviewVerdictConfig(Config):
    """A person's verdict (the ``review_request`` job's run config). Empty: no verdict yet,
    so in human and both modes the request waits (``awaiting_review``)."""

    verdict: str = ""  # approve | reject ("" in the request job: wait for one)
    note: str = ""  # the approval's note, or the rejection's points (required to reject)
    reviewer: str = ""  # who decided; the launchpad's default is "launchpad"
    claim: str = ""  # set by `codegen review`, which claimed the round already
    review_round: int = 0  # the round the verdict is for (0: the open one)


@asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=CODE_VERSION,
    description="The sign-off on code whose tests pass: the Reviewer agent's (mode agent), or "
    "a person's (human, both: the request waits in awaiting_review, holding no run, until the "
    "review_request job brings a verdict; a rejection revises the code).",
)
def human_review(
    context: AssetExecutionContext,
    config: ReviewVerdictConfig,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    solution_code: CrewState,
) -> MaterializeResult:
    request_id = context.partition_key
    reviews = ReviewStore(settings.load().requests_dir)
    state = solution_code
    token = config.claim
    if not config.verdict and context.job_name == REVIEW_JOB:
        # Without a verdict this would restart the review and drop a rejection's revision.
        raise Failure(
            description="the review_request job needs a verdict: ops.human_review.config."
            "verdict approve or reject (with note: the points)",
            allow_retries=False,
        )
    if config.verdict:
        try:
            if not token:  # the launchpad: this run claims the round itself
                reviewer = config.reviewer or "launchpad"
                token = reviews.claim(
                    request_id, config.verdict, config.note, reviewer, config.review_round
                ).token
            verdict, prior = reviews.claimed(request_id, token)
        except ReviewError as exc:
            # Nothing is materialized: the stored request and its artifacts stay as they were.
            raise Failure(description=str(exc), allow_retries=False) from exc
        state = replace(state, review_prior=prior, verdict=verdict)
    try:
        crew = _crew(context, settings, llm, sandbox=sandbox)
        state = _fail_on_outage(settings, advance("review", crew, state), "review")
    except BaseException:
        if token:  # the verdict was not applied: its round awaits one again
            reviews.release(request_id, token)
        raise
    review = state.review
    pending = None
    if state.status is Status.AWAITING_REVIEW and review is not None:
        pending = reviews.open_round(request_id, review)
        context.log.warning(f"request {request_id} awaits review (round {pending})")
    elif review is not None and review.mode != "agent":
        reviews.close(request_id)
    accepted = state.accepted
    report = accepted.report if accepted else None
    return MaterializeResult(
        value=state,
        metadata={
            **_final_metadata(state),
            "review_mode": review.mode if review else state.options.review,
            "review_round": pending or 0,
            "verdicts": MetadataValue.json(review.verdicts if review else []),
            "rounds": accepted.rounds if accepted else 0,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "code": _md_code(accepted.code if accepted else ""),
            "agent_review": MetadataValue.md(
                (accepted.review if accepted else "") or "_(not reviewed by the agent)_"
            ),
            "artifacts": MetadataValue.path(str(_folder(settings.load(), request_id))),
        },
    )


@asset(
    partitions_def=requests_partitions,
    group_name=GROUP,
    kinds={"python"},
    code_version=DOCS_VERSION,
    description="The Documentation Generator's README for accepted code; completes report.json.",
)
def documentation(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    human_review: CrewState,
) -> MaterializeResult:
    state = _fail_on_outage(
        settings, advance("docs", _crew(context, settings, llm), human_review), "docs"
    )
    docs = state.docs.docs if state.docs else ""
    return MaterializeResult(
        value=state,
        metadata={
            **_final_metadata(state),
            "docs": MetadataValue.md(docs or "_(no docs: the code was not accepted)_"),
            "artifacts": MetadataValue.path(str(_folder(settings.load(), context.partition_key))),
        },
    )


# -- checks ----------------------------------------------------------------------------------
# Checks on a dynamically partitioned asset need a partitions_def on the check, which Dagster
# 1.13 marks as preview; it is deliberate here, so the warning is not repeated on every load.
warnings.filterwarnings(
    "ignore", category=PreviewWarning, message=".*partitions_def on an AssetCheckSpec.*"
)


@asset_check(
    asset=solution_code,
    blocking=True,
    partitions_def=requests_partitions,
    description="Re-runs the stored test suite against the stored code in the sandbox.",
)
def solution_passes_tests(
    context: AssetCheckExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> AssetCheckResult:
    folder = _folder(settings.load(), context.partition_key)
    code_path, tests_path = folder / "solution.py", folder / "test_solution.py"
    if not (code_path.exists() and tests_path.exists()):
        report_path = folder / "report.json"
        ended = json.loads(report_path.read_text()) if report_path.exists() else {}
        return AssetCheckResult(
            passed=False,
            description=f"no stored code and tests to run ({ended.get('status', 'unknown')}: "
            f"{ended.get('reason', '')})",
        )
    with sandbox.open() as box:
        report = execute_tests(box, code_path.read_text(), tests_path.read_text(), sandbox.limits())
    write_report(folder, verification=Verification(report.ok, report.passed, report.total))
    rows = [
        TableRecord(
            {
                "test": t.name,
                "outcome": t.outcome,
                "duration_s": round(t.duration_s, 4),
                "message": t.message[:300],
            }
        )
        for t in report.tests
    ]
    schema = TableSchema(
        columns=[
            TableColumn("test", "string"),
            TableColumn("outcome", "string"),
            TableColumn("duration_s", "float"),
            TableColumn("message", "string"),
        ]
    )
    return AssetCheckResult(
        passed=report.ok,
        metadata={
            "passed": report.passed,
            "total": report.total,
            "failed": report.failed,
            "collection_errors": MetadataValue.json(report.collection_errors),
            "tests": MetadataValue.table(rows, schema=schema),
        },
    )


@asset_check(
    asset=solution_code,
    partitions_def=requests_partitions,
    description="bandit static security scan of solution.py (warning severity).",
)
def solution_bandit(
    context: AssetCheckExecutionContext, settings: SettingsResource
) -> AssetCheckResult:
    code_path = _folder(settings.load(), context.partition_key) / "solution.py"
    if not code_path.exists():
        return AssetCheckResult(
            passed=False, severity=AssetCheckSeverity.WARN, description="no stored code"
        )
    # bandit reads the code, it never runs it, so it needs no sandbox.
    proc = subprocess.run(
        [sys.executable, "-m", "bandit", "-q", "-f", "json", str(code_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        issues = json.loads(proc.stdout).get("results", [])
    except ValueError:
        return AssetCheckResult(
            passed=False,
            severity=AssetCheckSeverity.WARN,
            description=f"bandit failed: {proc.stderr.strip()[:300]}",
        )
    findings = [
        {
            "test_id": i.get("test_id"),
            "severity": i.get("issue_severity"),
            "confidence": i.get("issue_confidence"),
            "line": i.get("line_number"),
            "text": i.get("issue_text"),
        }
        for i in issues
    ]
    return AssetCheckResult(
        passed=not findings,
        severity=AssetCheckSeverity.WARN,
        metadata={"issues": len(findings), "findings": MetadataValue.json(findings)},
    )


@asset_check(
    asset=human_review,
    partitions_def=requests_partitions,
    description="Warns while the request awaits a person's review, with how long it has waited.",
)
def review_not_pending(
    context: AssetCheckExecutionContext, settings: SettingsResource
) -> AssetCheckResult:
    pending = ReviewStore(settings.load().requests_dir).get(context.partition_key)
    if pending is None or pending.status == "closed":
        return AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN)
    waited = pending.waited_hours(datetime.now(UTC))
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.WARN,
        description=f"awaiting review (round {pending.review_round}) since "
        f"{pending.since.isoformat()} ({waited:.2f} h); give the verdict with "
        f"`codegen review {context.partition_key} --approve | --reject POINTS` or the "
        "review_request job",
        metadata={"review_round": pending.review_round, "waited_hours": round(waited, 3)},
    )


@asset_check(
    asset=retrieved_context,
    partitions_def=requests_partitions,
    description="Warns when the code was written with no index or a partial one (grounding "
    "none or partial): the programmer saw less of the corpus than it could.",
)
def context_grounded(
    context: AssetCheckExecutionContext, retrieved_context: CrewState
) -> AssetCheckResult:
    grounding = retrieved_context.context.grounding if retrieved_context.context else None
    if grounding is None:
        return AssetCheckResult(
            passed=False, severity=AssetCheckSeverity.WARN, description="grounding unknown"
        )
    described = Grounding(**grounding).describe() if grounding else ""
    return AssetCheckResult(
        passed=grounding["status"] == "full",
        severity=AssetCheckSeverity.WARN,
        description=f"grounding {described}",
        metadata=dict(grounding),
    )
