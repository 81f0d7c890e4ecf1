"""What a request's outcome looks like to its caller: the summary ``--json`` prints, the lines
a person reads, and the exit code its status gives (``exits.py``). ``codegen generate`` and
``codegen review`` end with it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from codegen.agents.report import (
    RequestReport,
    counted,
    grade_line,
    grounding_from_json,
    module_lines,
    packages_line,
    program_run_lines,
    program_runs,
)
from codegen.agents.types import Status
from codegen.json_types import JSONObject, JSONValue
from codegen.orchestration.cli.exits import (
    AWAITING_REVIEW_EXIT,
    MISSING_DEPENDENCY_EXIT,
    NOT_PASSED_EXIT,
    OFF_TARGET_EXIT,
    OUTAGE_EXIT,
)


def summarize(report: RequestReport, run_id: str | None, folder: Path) -> JSONObject:
    """What the CLI shows of a request's report (``--json``: this object)."""
    usage = report.usage
    shown = report.to_dict()
    return {
        "request_id": report.request_id,
        "status": report.status.value,
        "reason": report.reason,
        "tests_passed": report.tests_passed,
        "tests_total": report.tests_total,
        "rounds": report.rounds,
        "artifact_dir": str(folder),
        "artifacts": dict[str, JSONValue](report.artifacts),
        "tokens": usage.total_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": None if usage.cost_usd is None else round(usage.cost_usd, 8),
        "cache_hits": usage.cache_hits,
        "run_id": run_id,
        "human_review": report.human_review.to_dict(),
        "endpoints": report.endpoints,
        # none | partial | full: how much of the corpus the programmer's search could find.
        "grounding": report.grounding.to_dict() if report.grounding else None,
        # The spec's functions, classes and methods (each with its tests' results), its
        # dependencies and the sandbox's package set, name warnings, the reviewer's grade.
        **{
            key: shown[key]
            for key in ("module", "methods", "sandbox_packages", "warnings", "reviewer_grade")
        },
        # Each run of the program the tests made: stdin, expected and actual stdout and exit
        # code (a function or class request: none).
        "program_runs": list[JSONValue](program_runs(shown["test_report"])),
    }


def grounding_line(grounding: JSONValue) -> str:
    if not isinstance(grounding, dict) or not grounding:
        return "unknown (the request ended before retrieval)"
    return grounding_from_json(grounding).describe()


def endpoint_lines(endpoints: JSONObject) -> list[str]:
    """One line per base URL and model: the roles that called it (calls, cached replies)."""
    used: dict[tuple[str, str], list[str]] = {}
    for role, entries in endpoints.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            name = role if "candidate" not in entry else f"{role}[{entry['candidate']}]"
            used.setdefault((entry["base_url"], entry["model"]), []).append(name)
    if not used:
        return ["none: no model reply was received"]
    return [f"{model} at {url}: {', '.join(roles)}" for (url, model), roles in used.items()]


def show_outcome(summary: JSONObject, as_json: bool) -> None:
    """Print a request's outcome; exit with its status's code (``exits.py``)."""
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        cost = summary["cost_usd"]
        click.echo(f"request    {summary['request_id']}")
        warnings = summary.get("warnings") or []
        assert isinstance(warnings, list)  # summarize's own list
        noted = f" ({counted(len(warnings), 'warning')} below)" if warnings else ""
        click.echo(f"status     {summary['status']}: {summary['reason']}{noted}")
        for warning in warnings:
            click.echo(f"warning    {warning}")
        tested = summary.get("methods") if summary.get("tests_total") else None
        for i, line in enumerate(module_lines(summary.get("module"), tested)):
            click.echo(f"{'module' if i == 0 else '':<10} {line}")
        click.echo(
            f"needs      {packages_line(summary.get('module'), summary.get('sandbox_packages'))}"
        )
        click.echo(f"tests      {summary['tests_passed']}/{summary['tests_total']} passed")
        for line in program_run_lines(summary.get("program_runs")):
            click.echo(f"{'run':<10} {line}")
        click.echo(f"grade      {grade_line(summary.get('reviewer_grade'))}")
        click.echo(f"rounds     {summary['rounds']}")
        click.echo(
            f"tokens     {summary['tokens']} ({summary['prompt_tokens']} in, "
            f"{summary['completion_tokens']} out, {summary['cache_hits']} cached calls)"
        )
        click.echo(f"cost       {'unknown' if cost is None else f'${cost:.6f}'}")
        click.echo(f"grounding  {grounding_line(summary['grounding'])}")
        for line in endpoint_lines(summary["endpoints"]):
            click.echo(f"endpoint   {line}")
        click.echo(f"artifacts  {summary['artifact_dir']}")
        for name in summary["artifacts"]:
            click.echo(f"           {name}")
    sys.stdout.flush()
    if summary["status"] == "awaiting_review":
        click.echo(
            f"codegen: awaiting review: codegen review {summary['request_id']} "
            '--approve [--note TEXT] | --reject "POINTS"',
            err=True,
        )
        raise click.exceptions.Exit(AWAITING_REVIEW_EXIT)
    if summary["status"] == "error":
        raise click.exceptions.Exit(OUTAGE_EXIT)
    if summary["status"] == Status.MISSING_DEPENDENCY.value:
        # The reason names the setting and the build command.
        raise click.exceptions.Exit(MISSING_DEPENDENCY_EXIT)
    if summary["status"] == Status.OFF_TARGET.value:
        # A model's ending with a code of its own: a script must not take it for a weak answer.
        raise click.exceptions.Exit(OFF_TARGET_EXIT)
    if summary["status"] != "passed":
        raise click.exceptions.Exit(NOT_PASSED_EXIT)
