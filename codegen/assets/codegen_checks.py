"""The checks on the request assets (``assets.codegen``): the spec fits the request (red when
the spec ended it: ``off_target``, ``missing_dependency``), the stored tests re-run against the
stored code in the sandbox (blocking; not run, a warning, when the spec ended the request), a
bandit scan of the code, a warning while a request awaits a person's review, and one when the
code was written with no index or a partial one."""

import json
import subprocess
import sys
import warnings
from datetime import UTC, datetime

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    MetadataValue,
    PreviewWarning,
    TableColumn,
    TableRecord,
    TableSchema,
    asset_check,
)

from codegen.agents.report import RequestReport, Verification, write_report
from codegen.agents.roles import execute_tests
from codegen.agents.state import ContextResult, SpecResult
from codegen.agents.types import SPEC_ENDED
from codegen.assets.codegen import REQUEST_ASSETS, artifacts_folder, requests_partitions
from codegen.assets.resources import SandboxResource, SettingsResource
from codegen.requests.review import ReviewStore

# Checks on a dynamically partitioned asset need a partitions_def on the check, which Dagster
# 1.13 marks as preview; it is deliberate here, so the warning is not repeated on every load.
warnings.filterwarnings(
    "ignore", category=PreviewWarning, message=".*partitions_def on an AssetCheckSpec.*"
)


def spec_check_result(spec: SpecResult) -> AssetCheckResult:
    """Red (ERROR) when the spec ended the request: it answers another request or needs what
    the sandbox's package set lacks; green otherwise."""
    ended = spec.ended
    if ended is None or ended.status not in SPEC_ENDED:
        return AssetCheckResult(passed=True)
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.ERROR,
        description=f"{ended.status.value}: {ended.reason}",
        metadata={"status": ended.status.value},
    )


@asset_check(
    asset=REQUEST_ASSETS["spec"],
    partitions_def=requests_partitions,
    description="Fails (red) when the spec ends the request before any code: it defines none "
    "of the names the request asks for (off_target) or needs a distribution the sandbox's "
    "package set lacks (missing_dependency).",
)
def spec_fits_request(
    context: AssetCheckExecutionContext, request_spec: SpecResult
) -> AssetCheckResult:
    return spec_check_result(request_spec)


@asset_check(
    asset=REQUEST_ASSETS["solution"],
    blocking=True,
    partitions_def=requests_partitions,
    description="Re-runs the stored test suite against the stored code in the sandbox.",
)
def solution_passes_tests(
    context: AssetCheckExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> AssetCheckResult:
    folder = artifacts_folder(settings.load(), context.partition_key)
    code_path, tests_path = folder / "solution.py", folder / "test_solution.py"
    if not (code_path.exists() and tests_path.exists()):
        ended = RequestReport.load(folder)
        if ended is not None and ended.status in SPEC_ENDED:
            # Nothing was written to test; spec_fits_request is the red one, with the reason.
            return AssetCheckResult(
                passed=False,
                severity=AssetCheckSeverity.WARN,
                description=f"not run: the request ended at its spec, before any code or "
                f"test was written ({ended.status.value}: {ended.reason})",
            )
        return AssetCheckResult(
            passed=False,
            description="no stored code and tests to run ("
            + (f"{ended.status.value}: {ended.reason})" if ended else "unknown: )"),
        )
    with sandbox.open() as box:
        report = execute_tests(box, code_path.read_text(), tests_path.read_text(), sandbox.limits())
    verification = Verification(report.ok, report.passed, report.total, report.time_limit_note)
    write_report(folder, verification=verification)
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
        description=report.time_limit_note or None,
        metadata={
            "passed": report.passed,
            "total": report.total,
            "failed": report.failed,
            "collection_errors": MetadataValue.json(report.collection_errors),
            "tests": MetadataValue.table(rows, schema=schema),
        },
    )


@asset_check(
    asset=REQUEST_ASSETS["solution"],
    partitions_def=requests_partitions,
    description="bandit static security scan of solution.py (warning severity).",
)
def solution_bandit(
    context: AssetCheckExecutionContext, settings: SettingsResource
) -> AssetCheckResult:
    code_path = artifacts_folder(settings.load(), context.partition_key) / "solution.py"
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
    asset=REQUEST_ASSETS["review"],
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
    asset=REQUEST_ASSETS["context"],
    partitions_def=requests_partitions,
    description="Warns when the code was written with no index or a partial one (grounding "
    "none or partial): the programmer saw less of the corpus than it could.",
)
def context_grounded(
    context: AssetCheckExecutionContext, retrieved_context: ContextResult
) -> AssetCheckResult:
    grounding = retrieved_context.grounding
    if grounding is None:
        return AssetCheckResult(
            passed=False, severity=AssetCheckSeverity.WARN, description="grounding unknown"
        )
    return AssetCheckResult(
        passed=grounding.status == "full",
        severity=AssetCheckSeverity.WARN,
        description=f"grounding {grounding.describe()}",
        metadata=grounding.to_dict(),
    )
