"""What each request asset shows in the UI (``assets.codegen``): a step's status, usage and
endpoints, and its own results (the spec, tests, context, drafts, code, review, docs) as
Dagster metadata."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from codegen.agents.llm import Usage
from codegen.agents.pick import Selection
from codegen.agents.report import (
    RequestReport,
    grade_line,
    module_lines,
    packages_line,
    program_run_lines,
    program_runs,
)
from codegen.agents.state import CrewState, StepResult
from codegen.requests.store import TITLE_TAG, request_title

OK = "ok"  # metadata of an intermediate step that succeeded; final ones are agents.types.Status

# An asset's metadata here: plain values, or Dagster's rich ones (markdown, JSON, tables, paths).
StepMetadata = dict[str, MetadataValue | str | int | float | bool | None]


def md_code(text: str, lang: str = "python") -> MetadataValue:
    return MetadataValue.md(f"```{lang}\n{text.rstrip()}\n```" if text.strip() else "_(none)_")


def _usage_metadata(usage: Usage) -> StepMetadata:
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


def _usage_and_endpoints(usage: Usage) -> StepMetadata:
    return {
        **_usage_metadata(usage),
        "endpoints": MetadataValue.json(usage.endpoints_by_role()),
        # Tokens and cost per model, over every role and candidate that asked for it.
        "per_model": MetadataValue.json(usage.per_model()),
    }


def _grounding_metadata(state: CrewState) -> StepMetadata:
    grounding = state.context.grounding if state.context else None
    if grounding is None:
        return {"grounding": "unknown"}
    return {
        "grounding": grounding.status,
        "grounding_chunks": grounding.chunks,
        "embedded_fraction": grounding.embedded_fraction,
    }


def _step_metadata(result: StepResult | None) -> StepMetadata:
    """Status and reason of an intermediate step (``ok`` unless it ended the request)."""
    ended = result.ended if result is not None else None
    status = ended.status.value if ended else OK
    return {
        "status": status,
        "reason": ended.reason if ended else "",
        **_usage_and_endpoints(result.usage if result is not None else Usage()),
    }


def _final_metadata(state: CrewState) -> StepMetadata:
    status = state.status
    return {
        **_grounding_metadata(state),
        TITLE_TAG: request_title(state.request),
        "status": status.value if status else "under way",
        "reason": state.reason,
        **_usage_and_endpoints(state.usage()),
    }


def _md_lines(lines: list[str], empty: str) -> MetadataValue:
    return MetadataValue.md("\n".join(f"- `{line}`" for line in lines) if lines else empty)


def _shown_metadata(state: CrewState, folder: Path, after_tests: bool = True) -> StepMetadata:
    """The spec's functions, classes and methods (with their tests' results once tests ran),
    its dependencies and the sandbox's package set, name warnings, and (``after_tests``: the
    steps after the tests) the reviewer's grade, labelled as the reviewer model's opinion."""
    report = RequestReport.of(state, folder)
    shown = report.to_dict()
    tested = after_tests and report.tests_total > 0
    results = shown["methods"] if tested else None
    out: StepMetadata = {
        "module": _md_lines(module_lines(shown["module"], results), "_(no spec)_"),
        "dependencies": packages_line(shown["module"], shown["sandbox_packages"]),
        "warnings": _md_lines(report.warnings, "_(none)_"),
        "warning_count": len(report.warnings),
    }
    if tested:
        rows = [
            TableRecord(
                {
                    "name": m.name or "(calls nothing of the spec)",
                    "passed": m.passed,
                    "total": m.total,
                    "failed": ", ".join(m.failed),
                }
            )
            for m in report.methods
        ]
        schema = TableSchema(
            columns=[
                TableColumn("name", "string"),
                TableColumn("passed", "int"),
                TableColumn("total", "int"),
                TableColumn("failed", "string"),
            ]
        )
        out["per_method"] = MetadataValue.table(rows, schema=schema)
        runs = program_run_lines(program_runs(shown["test_report"]))
        if runs:  # a program's tests: what each run was given and printed
            out["program_runs"] = _md_lines(runs, "_(none)_")
    if after_tests:
        out["reviewer_grade"] = grade_line(shown["reviewer_grade"])
        if report.reviewer_grade is not None:  # the reviewer model's opinion, 1-10
            out["reviewer_grade_value"] = report.reviewer_grade
    return out


# -- per-step metadata ------------------------------------------------------------------------
def spec_metadata(state: CrewState, folder: Path) -> StepMetadata:
    spec = state.spec.spec if state.spec else None
    return {
        **_step_metadata(state.spec),
        **_shown_metadata(state, folder, after_tests=False),
        "request": MetadataValue.md(f"> {state.request[:2000]}"),
        "spec": md_code(json.dumps(spec.model_dump(mode="json") if spec else {}, indent=2), "json"),
        "structured_outputs": state.spec.structured_outputs if state.spec else "",
    }


def tests_metadata(state: CrewState, folder: Path) -> StepMetadata:
    tests = state.tests.tests if state.tests else ""
    return {
        **_step_metadata(state.tests),
        "tests": md_code(tests),
        "test_functions": tests.count("\ndef test_") + tests.startswith("def test_"),
    }


def context_metadata(state: CrewState, folder: Path) -> StepMetadata:
    found = state.context
    chunks = found.chunks if found else []
    return {
        "status": found.ended.status.value if found and found.ended else OK,
        "chunks": len(chunks),
        "tokens": sum(c.tokens for c in chunks),
        "queries": MetadataValue.json(found.queries if found else []),
        "citations": MetadataValue.json([c.citation for c in chunks]),
        **_grounding_metadata(state),
    }


def draft_metadata(state: CrewState, folder: Path) -> StepMetadata:
    draft = state.draft
    return {
        **_step_metadata(draft),
        "drafts": len(draft.drafts) if draft else 0,
        "code": md_code(draft.code if draft else ""),
        "problem": (draft.problem if draft else "") or "",
    }


def solution_metadata(state: CrewState, folder: Path) -> StepMetadata:
    solution = state.solution
    report = solution.report if solution else None
    return {
        **_final_metadata(state),
        "rounds": solution.rounds if solution else 0,
        "tests_passed": report.passed if report else 0,
        "tests_total": report.total if report else 0,
        "code": md_code(solution.code if solution else ""),
        "review": MetadataValue.md((solution.review if solution else "") or "_(not reviewed)_"),
        # With --candidates N: each draft's results, the groups and why the pick won.
        "candidates": MetadataValue.json(
            solution.selection.to_dict() if solution and solution.selection else {"drafts": 1}
        ),
        **_pick_metadata(solution.selection if solution else None),
        **_shown_metadata(state, folder),
        "artifacts": MetadataValue.path(str(folder)),
    }


def _pick_metadata(selection: Selection | None) -> StepMetadata:
    """Which rule decided the pick and the reliability each draft's vote counted with, with
    where it came from (config, history, none)."""
    if selection is None:
        return {}
    used = selection.reliabilities
    return {
        "pick_rule": selection.rule,
        "reliabilities": MetadataValue.json([u.to_dict() for u in used]),
        "reliability_sources": ", ".join(sorted({u.source for u in used})) or "none",
    }


def review_metadata(state: CrewState, folder: Path) -> StepMetadata:
    review, accepted = state.review, state.accepted
    report = accepted.report if accepted else None
    pending = review.open_round if review is not None else 0
    return {
        **_final_metadata(state),
        "review_mode": review.mode if review else state.options.review,
        "review_round": pending,
        "verdicts": MetadataValue.json([v.to_dict() for v in review.verdicts] if review else []),
        "rounds": accepted.rounds if accepted else 0,
        "tests_passed": report.passed if report else 0,
        "tests_total": report.total if report else 0,
        "code": md_code(accepted.code if accepted else ""),
        "agent_review": MetadataValue.md(
            (accepted.review if accepted else "") or "_(not reviewed by the agent)_"
        ),
        **_shown_metadata(state, folder),
        "artifacts": MetadataValue.path(str(folder)),
    }


def docs_metadata(state: CrewState, folder: Path) -> StepMetadata:
    docs = state.docs.docs if state.docs else ""
    return {
        **_final_metadata(state),
        "docs": MetadataValue.md(docs or "_(no docs: the code was not accepted)_"),
        "artifacts": MetadataValue.path(str(folder)),
    }


def default_metadata(state: CrewState, folder: Path) -> StepMetadata:
    return _step_metadata(None)
