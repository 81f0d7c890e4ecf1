"""What the evaluation summaries show in the UI: their figures as Dagster metadata (tables of
failures and tasks, the report and the history's plot inline)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TypeAlias

from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from codegen.evaluation.report import Summary, summary_markdown
from codegen.evaluation.session import EvalSession
from codegen.evaluation.shapes import shape_named
from codegen.evaluation.tasks import TaskSet

# What these assets put in their materialization metadata.
Metadata: TypeAlias = dict[str, MetadataValue | str | int | float]


def failures_table(summary: Summary) -> MetadataValue:
    schema = TableSchema(
        columns=[
            TableColumn("category", "string"),
            TableColumn("samples", "int"),
            TableColumn("tasks", "string"),
        ]
    )
    records = []
    for category, count in summary.failures_by_category.items():
        tasks = [r.key for r in summary.rows if r.categories.get(category)]
        shown = ", ".join(tasks[:20]) + (" …" if len(tasks) > 20 else "")
        records.append(TableRecord({"category": category, "samples": count, "tasks": shown}))
    return MetadataValue.table(records=records, schema=schema)


def tasks_table(summary: Summary) -> MetadataValue:
    """One row per scored task: the per-task outcomes behind the pass@k."""
    schema = TableSchema(
        columns=[
            TableColumn("task", "string"),
            TableColumn("passed", "int"),
            TableColumn("n", "int"),
            TableColumn("failures", "string"),
            TableColumn("crew", "string"),
            TableColumn("tokens", "int"),
            TableColumn("cost_usd", "string"),
            TableColumn("latency_s", "float"),
        ]
    )
    records = [
        TableRecord(
            {
                "task": r.key,
                "passed": r.c,
                "n": r.n,
                "failures": ", ".join(f"{k} {v}" for k, v in sorted(r.categories.items())),
                "crew": ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items())),
                "tokens": r.tokens,
                "cost_usd": "unknown" if r.cost_usd is None else f"{r.cost_usd:.6f}",
                "latency_s": r.latency_s,
            }
        )
        for r in summary.rows
    ]
    return MetadataValue.table(records=records, schema=schema)


def inline_plot(plot: Path, caption: str) -> str:
    encoded = base64.b64encode(plot.read_bytes()).decode()
    return f"\n\n![{caption}](data:image/png;base64,{encoded})"


def task_set_metadata(task_set: TaskSet) -> Metadata:
    """Which set a summary is about (a registered benchmark's name says it already)."""
    if task_set.builtin:
        return {}
    return {"task_set": task_set.name, "task_set_digest": task_set.digest}


def shape_figures(session: EvalSession, keys: list[str], prefix: str = "") -> Metadata:
    """Each task shape's own figures of ``session`` over ``keys`` (ClassEval's class, method
    and test-class success, as ``codegen eval classeval`` prints them), by ``prefix`` and the
    shape's name."""
    found = session.shape_figures(keys)
    return {
        prefix + name: MetadataValue.json(shape_named(name).metadata(figures))
        for name, figures in found.items()
    }


def summary_metadata(
    crew_session: EvalSession, crew: Summary, canon_session: EvalSession, canon: Summary
) -> Metadata:
    """The crew's and the canonical solutions' figures of one task set."""
    metadata: Metadata = {
        "canonical_passed": canon.passed_samples,
        "canonical_scored": canon.tasks_scored,
        "crew_config_id": crew_session.config.config_id,
        "crew_tasks_scored": crew.tasks_scored,
        "crew_tokens": crew.prompt_tokens + crew.completion_tokens,
        "crew_cost_usd": MetadataValue.float(crew.cost_usd)
        if crew.cost_usd is not None
        else MetadataValue.text("unknown"),
        "failures_by_category": failures_table(crew),
        "tasks": tasks_table(crew),
        "summary": MetadataValue.json(crew.to_dict(with_rows=False)),
        **task_set_metadata(crew_session.tasks),
    }
    if not crew_session.tasks.builtin:
        metadata["canonical_config_id"] = canon_session.config.config_id
        metadata["canonical_summary"] = MetadataValue.json(canon.to_dict(with_rows=False))
        for name, value in canon.pass_at_k.items():
            metadata[f"canonical {name}"] = value
    keys = crew_session.tasks.keys()
    if crew.tasks_scored:
        metadata.update(shape_figures(crew_session, keys))
    metadata.update(shape_figures(canon_session, keys, "canonical_"))
    if crew.picks is not None:
        # Drafts from several models: the figures are the learned pick's; the first pick
        # (as the crew made it during the run) and the reliability estimates beside them.
        metadata["picks"] = MetadataValue.json(crew.picks)
    if crew.precision is not None and crew.precision.precision is not None:
        # How far the crew's own `passed` can be trusted against the hidden tests.
        metadata["precision_of_passed"] = crew.precision.precision
    if crew.precision is not None and crew.precision.recall is not None:
        metadata["recall_of_passed"] = crew.precision.recall
    if crew.reviewer_grade is not None and crew.reviewer_grade.mean is not None:
        # The reviewer model's opinion (1-10), over the samples it graded.
        metadata["reviewer_grade_mean"] = crew.reviewer_grade.mean
    for name, value in crew.pass_at_k.items():
        metadata[name] = value
    for prefix, found in (("plus ", crew), ("canonical plus ", canon)):
        for name, value in (found.plus.pass_at_k if found.plus else {}).items():
            metadata[prefix + name] = value  # HumanEval+: the plus tests' pass@k
    return metadata


def file_summary_metadata(session: EvalSession, summary: Summary) -> Metadata:
    """A samples file's figures over the tasks it holds."""
    samples = session.samples_file
    assert samples is not None
    metadata: Metadata = {
        "config_id": session.config.config_id,
        "samples_file": str(samples.path),
        "tasks_in_file": len(samples.modules),
        "tasks_scored": summary.tasks_scored,
        "tasks_not_in_file": len(samples.missing()),
        "solved_tasks": summary.solved_tasks,
        "failures_by_category": failures_table(summary),
        "tasks": tasks_table(summary),
        "summary": MetadataValue.json(summary.to_dict(with_rows=False)),
        "report": MetadataValue.md(summary_markdown(summary)),
        **task_set_metadata(session.tasks),
    }
    metadata.update(shape_figures(session, list(samples.modules)))
    for name, value in summary.pass_at_k.items():
        metadata[name] = value
    return metadata
