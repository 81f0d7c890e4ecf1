"""Code-generation assets: every request is one partition of the ``requests`` dynamic partitions.

``request_spec -> (test_suite || retrieved_context -> solution_code[draft]) ->
solution_code[refine] -> documentation``, with a blocking sandbox check and a bandit check on
``solution_code``. Each body calls the same agent functions as ``agents.crew.run_crew``.
Failures never raise: an asset materializes with its status and reason, downstream assets
carry that status on, and ``report.json`` in the request's artifact folder always says how the
request ended.
"""

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    DynamicPartitionsDefinition,
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

from agents import prompts
from agents.context import queries_for, retrieve_context
from agents.crew import classify, refine
from agents.requests import RequestStore, artifact_dir, write_artifact
from agents.roles import (
    analyze,
    design_tests,
    document,
    execute_tests,
    validate_request,
    write_code,
)
from agents.types import SPEC_JSON_SCHEMA, Budget, Meter, Status, Usage
from assets.resources import LLMResource, RetrieverResource, SandboxResource, SettingsResource
from settings import Settings

requests_partitions = DynamicPartitionsDefinition(name="requests")

GROUP = "codegen"
OK = "ok"  # an intermediate asset that succeeded; final statuses are agents.types.Status

_SCHEMA = json.dumps(SPEC_JSON_SCHEMA, sort_keys=True)
SPEC_VERSION = prompts.prompt_version("analyzer", extra=_SCHEMA)
TESTS_VERSION = prompts.prompt_version("test_designer")
CODE_VERSION = prompts.prompt_version("programmer", "reviewer")
DOCS_VERSION = prompts.prompt_version("documenter")
CONTEXT_VERSION = "1"


# -- helpers ---------------------------------------------------------------------------------
def _folder(settings: Settings, request_id: str) -> Path:
    return artifact_dir(settings.artifacts_dir, request_id)


def _meter(llm: LLMResource, options: dict[str, Any], *upstream: dict[str, Any]) -> Meter:
    """The request's budget, with what upstream assets already spent counted against it."""
    crew = llm.crew_options(options)
    prior = Usage()
    for value in upstream:
        prior = prior.merge(Usage.from_dict(value.get("usage")))
    return Meter(Budget(tokens=crew.budget_tokens, usd=crew.budget_usd), prior=prior)


def _carry(upstream: dict[str, Any]) -> dict[str, Any]:
    """Downstream of a failure: no work, same status and reason."""
    return {"status": upstream["status"], "reason": upstream["reason"], "usage": Usage().to_dict()}


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


def _status_metadata(value: dict[str, Any]) -> dict[str, Any]:
    return {"status": value["status"], "reason": value.get("reason") or ""}


def write_report(settings: Settings, request_id: str, report: dict[str, Any]) -> Path:
    return write_artifact(_folder(settings, request_id), "report.json", report)


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
    cfg = settings.load()
    stored = RequestStore(cfg.requests_dir).get(context.partition_key)
    meter = _meter(llm, stored.options)
    value: dict[str, Any] = {"request_id": stored.id, "options": stored.options}
    try:
        analysis = analyze(
            llm.client().for_task(context.partition_key), meter, validate_request(stored.text)
        )
        spec = analysis.spec
        value.update(
            status=OK,
            reason="spec written",
            spec=spec,
            structured_outputs=analysis.structured_outputs,
        )
        write_artifact(_folder(cfg, stored.id), "spec.json", spec)
    except Exception as exc:
        status, reason = classify(exc)
        value.update(status=status.value, reason=reason, spec={})
    value["usage"] = meter.usage.to_dict()
    return MaterializeResult(
        value=value,
        metadata={
            **_status_metadata(value),
            "request": MetadataValue.md(f"> {stored.text[:2000]}"),
            "spec": _md_code(json.dumps(value["spec"], indent=2), "json"),
            "structured_outputs": value.get("structured_outputs", ""),
            **_usage_metadata(meter.usage),
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
    request_spec: dict[str, Any],
) -> MaterializeResult:
    cfg = settings.load()
    if request_spec["status"] != OK:
        value = {**_carry(request_spec), "tests": ""}
    else:
        meter = _meter(llm, request_spec["options"], request_spec)
        try:
            tests = design_tests(
                llm.client().for_task(context.partition_key), meter, request_spec["spec"]
            )
            value = {"status": OK, "reason": "tests written", "tests": tests}
            write_artifact(_folder(cfg, context.partition_key), "test_solution.py", tests)
        except Exception as exc:
            status, reason = classify(exc)
            value = {"status": status.value, "reason": reason, "tests": ""}
        value["usage"] = meter.usage.to_dict()
    usage = Usage.from_dict(value["usage"])
    return MaterializeResult(
        value=value,
        metadata={
            **_status_metadata(value),
            "tests": _md_code(value["tests"]),
            "test_functions": value["tests"].count("\ndef test_")
            + value["tests"].startswith("def test_"),
            **_usage_metadata(usage),
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
    llm: LLMResource,
    retriever: RetrieverResource,
    request_spec: dict[str, Any],
) -> MaterializeResult:
    if request_spec["status"] != OK:
        value: dict[str, Any] = {"status": request_spec["status"], "queries": [], "chunks": []}
    else:
        crew = llm.crew_options(request_spec["options"])
        spec = request_spec["spec"]
        chunks = retrieve_context(
            retriever.get_retriever(),
            spec,
            top_k=crew.top_k,
            token_budget=crew.context_token_budget,
        )
        value = {"status": OK, "queries": queries_for(spec), "chunks": chunks}
    return MaterializeResult(
        value=value,
        metadata={
            "chunks": len(value["chunks"]),
            "tokens": sum(c["tokens"] for c in value["chunks"]),
            "queries": MetadataValue.json(value["queries"]),
            "citations": MetadataValue.json([c["citation"] for c in value["chunks"]]),
        },
    )


@op(code_version=CODE_VERSION, description="Programmer: the first draft of solution.py.")
def programmer_draft(
    context: OpExecutionContext,
    llm: LLMResource,
    request_spec: dict[str, Any],
    retrieved_context: dict[str, Any],
) -> dict[str, Any]:
    if request_spec["status"] != OK:
        return {**_carry(request_spec), "code": "", "problem": ""}
    meter = _meter(llm, request_spec["options"], request_spec)
    try:
        code, problem = write_code(
            llm.client().for_task(context.partition_key),
            meter,
            request_spec["spec"],
            retrieved_context["chunks"],
        )
        value = {"status": OK, "reason": "draft written", "code": code, "problem": problem}
    except Exception as exc:
        status, reason = classify(exc)
        value = {"status": status.value, "reason": reason, "code": "", "problem": ""}
    value["usage"] = meter.usage.to_dict()
    return value


@op(
    code_version=CODE_VERSION,
    description="Test Executor, Programmer and Reviewer: execute, feed back, reprogram, review.",
    out=Out(dict),
)
def refine_solution(
    context: OpExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    request_spec: dict[str, Any],
    test_suite: dict[str, Any],
    retrieved_context: dict[str, Any],
    draft: dict[str, Any],
) -> Output:
    cfg = settings.load()
    request_id = context.partition_key
    upstream = (request_spec, test_suite, draft)
    meter = _meter(llm, request_spec["options"], *upstream)
    failed = next((v for v in upstream if v["status"] != OK), None)
    value: dict[str, Any] = {"code": "", "rounds": 0, "report": None, "review": "", "history": []}
    if failed is not None:
        value.update(status=failed["status"], reason=failed["reason"])
    else:
        crew = llm.crew_options(request_spec["options"])
        try:
            with sandbox.open() as box:
                result = refine(
                    llm.client().for_task(context.partition_key),
                    meter,
                    box,
                    request_spec["spec"],
                    test_suite["tests"],
                    retrieved_context["chunks"],
                    draft["code"],
                    draft["problem"],
                    max_rounds=crew.max_rounds,
                    limits=crew.limits or sandbox.limits(),
                    on_event=context.log.info,
                )
            value.update(
                status=result.status.value,
                reason=result.reason,
                code=result.code,
                rounds=result.rounds,
                report=result.report.to_dict() if result.report else None,
                review=result.review,
                history=result.history,
            )
        except Exception as exc:  # e.g. no sandbox backend: still a status and a report
            status, reason = classify(exc)
            value.update(status=status.value, reason=f"sandbox: {reason}", code=draft["code"])
    folder = _folder(cfg, request_id)
    if value["code"]:
        write_artifact(folder, "solution.py", value["code"])
    total = meter.total()
    value["usage"] = meter.usage.to_dict()
    value["usage_total"] = total.to_dict()
    report = value["report"] or {}
    write_report(
        cfg,
        request_id,
        _report(request_spec, test_suite, retrieved_context, value, total, folder, docs=False),
    )
    return Output(
        value,
        metadata={
            **_status_metadata(value),
            "rounds": value["rounds"],
            "tests_passed": report.get("passed", 0),
            "tests_total": report.get("total", 0),
            "code": _md_code(value["code"]),
            "review": MetadataValue.md(value["review"] or "_(not reviewed)_"),
            "artifacts": MetadataValue.path(str(folder)),
            **_usage_metadata(total),
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
    request_spec: dict[str, Any], test_suite: dict[str, Any], retrieved_context: dict[str, Any]
) -> dict[str, Any]:
    draft = programmer_draft(request_spec, retrieved_context)
    return refine_solution(request_spec, test_suite, retrieved_context, draft)


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
    request_spec: dict[str, Any],
    test_suite: dict[str, Any],
    retrieved_context: dict[str, Any],
    solution_code: dict[str, Any],
) -> MaterializeResult:
    cfg = settings.load()
    request_id = context.partition_key
    folder = _folder(cfg, request_id)
    final = dict(solution_code)
    meter = Meter(
        llm.crew_options(request_spec["options"]).budget,
        prior=Usage.from_dict(solution_code["usage_total"]),
    )
    docs = ""
    if final["status"] == Status.PASSED.value:
        try:
            docs = document(
                llm.client().for_task(context.partition_key),
                meter,
                request_spec["spec"],
                final["code"],
            )
            write_artifact(folder, "README.md", docs)
        except Exception as exc:
            status, reason = classify(exc)
            final.update(status=status.value, reason=f"documenter: {reason}")
    total = meter.total()
    report = _report(
        request_spec, test_suite, retrieved_context, final, total, folder, docs=bool(docs)
    )
    previous = folder / "report.json"
    if previous.exists():  # keep the blocking check's verification note
        verification = json.loads(previous.read_text()).get("verification")
        if verification is not None:
            report["verification"] = verification
    write_report(cfg, request_id, report)
    value = {
        "status": final["status"],
        "reason": final["reason"],
        "docs": docs,
        "usage": meter.usage.to_dict(),
        "usage_total": total.to_dict(),
    }
    return MaterializeResult(
        value=value,
        metadata={
            **_status_metadata(value),
            "docs": MetadataValue.md(docs or "_(no docs: the code was not accepted)_"),
            "artifacts": MetadataValue.path(str(folder)),
            **_usage_metadata(total),
        },
    )


def _report(
    request_spec: dict[str, Any],
    test_suite: dict[str, Any],
    retrieved_context: dict[str, Any],
    final: dict[str, Any],
    usage: Usage,
    folder: Path,
    *,
    docs: bool,
) -> dict[str, Any]:
    """report.json: how the request ended. Holds no settings and no secrets."""
    test_report = final.get("report") or {}
    files = {
        "spec.json": request_spec.get("status") == OK,
        "test_solution.py": bool(test_suite.get("tests")),
        "solution.py": bool(final.get("code")),
        "README.md": docs,
    }
    return {
        "request_id": request_spec.get("request_id"),
        "status": final["status"],
        "reason": final["reason"],
        "rounds": final.get("rounds", 0),
        "tests_passed": test_report.get("passed", 0),
        "tests_total": test_report.get("total", 0),
        "test_report": test_report or None,
        "review": final.get("review", ""),
        "history": final.get("history", []),
        "context": [c["citation"] for c in retrieved_context.get("chunks", [])],
        "artifacts": {name: str(folder / name) for name, ok in files.items() if ok},
        "usage": usage.to_dict(),
    }


def _record_verification(folder: Path, ok: bool, passed: int, total: int) -> None:
    """Note the re-run in report.json; a 'passed' request whose re-run fails is not passed."""
    path = folder / "report.json"
    if not path.exists():
        return
    report = json.loads(path.read_text())
    report["verification"] = {"passed": ok, "tests_passed": passed, "tests_total": total}
    if not ok and report.get("status") == Status.PASSED.value:
        report["status"] = Status.FAILED_TESTS.value
        report["reason"] = f"the verification re-run failed: {passed} of {total} tests passed"
    write_artifact(folder, "report.json", report)


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
    _record_verification(folder, report.ok, report.passed, report.total)
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
