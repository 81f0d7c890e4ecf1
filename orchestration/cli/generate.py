"""``codegen generate "REQUEST"``: one request through the crew, as a Dagster run."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import click

from agents.requests import RequestStore, artifact_dir
from agents.roles import BadRequest, validate_request
from orchestration.instance import configured_instance
from settings import Settings, get_settings

# Exit status when the run completed but the request did not pass (failed_tests, rejected,
# budget_exceeded, error): distinct from 1 (codegen itself failed) and 2 (usage).
NOT_PASSED_EXIT = 3


class _Progress:
    """Prints the run's step events to stderr while the run executes."""

    def __init__(self, instance: Any, request_id: str) -> None:
        self.instance, self.request_id = instance, request_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from dagster import DagsterEventType, RunsFilter

        words = {
            DagsterEventType.STEP_START: "started",
            DagsterEventType.STEP_SUCCESS: "done",
            DagsterEventType.STEP_FAILURE: "FAILED",
            DagsterEventType.STEP_SKIPPED: "skipped",
        }
        shown = 0
        while not self.stop.wait(1.0):
            try:
                runs = self.instance.get_run_records(
                    RunsFilter(tags={"dagster/partition": self.request_id}), limit=1
                )
                if not runs:
                    continue
                entries = [
                    e
                    for e in self.instance.all_logs(runs[0].dagster_run.run_id)
                    if e.dagster_event is not None and e.dagster_event.event_type in words
                ]
                for entry in entries[shown:]:
                    word = words[entry.dagster_event.event_type]
                    click.echo(f"  {entry.step_key}: {word}", err=True)
                shown = len(entries)
            except Exception:  # progress is best effort; the run's result is what counts
                continue

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def run_request(settings: Settings, text: str, options: dict[str, Any]) -> dict[str, Any]:
    """Store the request, add its partition, run the request job, return report.json."""
    from dagster import build_reconstructable_job, execute_job

    stored = RequestStore(settings.requests_dir).add(text, options, source="cli")
    instance = configured_instance(settings)
    from assets.codegen import requests_partitions

    instance.add_dynamic_partitions(requests_partitions.name, [stored.id])
    click.echo(f"request {stored.id}: running the crew through Dagster", err=True)
    job = build_reconstructable_job("orchestration.definitions", "request_job")
    with _Progress(instance, stored.id):
        result = execute_job(
            job,
            instance=instance,
            tags={"dagster/partition": stored.id},
            # Step events go to the instance (and our progress lines); the console gets warnings.
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
    folder = artifact_dir(settings.artifacts_dir, stored.id)
    report_path = folder / "report.json"
    if not report_path.exists():
        raise click.ClickException(
            f"run {result.run_id} for request {stored.id} ended without a report "
            f"(run {'succeeded' if result.success else 'failed'}; see the Dagster UI)"
        )
    report = json.loads(report_path.read_text())
    report["run_id"] = result.run_id
    report["artifact_dir"] = str(folder)
    return report


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    usage = report.get("usage") or {}
    return {
        "request_id": report["request_id"],
        "status": report["status"],
        "reason": report["reason"],
        "tests_passed": report.get("tests_passed", 0),
        "tests_total": report.get("tests_total", 0),
        "rounds": report.get("rounds", 0),
        "artifact_dir": report["artifact_dir"],
        "artifacts": report.get("artifacts", {}),
        "tokens": usage.get("total_tokens", 0),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
        "cost_usd": usage.get("cost_usd"),
        "cache_hits": usage.get("cache_hits", 0),
        "run_id": report.get("run_id"),
    }


@click.command()
@click.argument("request")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--max-rounds", type=click.IntRange(1, 20), help="Refinement rounds (default 3).")
@click.option(
    "--candidates",
    type=click.IntRange(1, 20),
    help="Programmer drafts, one picked by execution (default: [llm] candidates).",
)
@click.option("--budget-tokens", type=click.IntRange(1), help="Stop after this many tokens.")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Dollar budget.")
def generate(
    request: str,
    as_json: bool,
    max_rounds: int | None,
    candidates: int | None,
    budget_tokens: int | None,
    budget_usd: float | None,
) -> None:
    """Turn REQUEST into tested, documented code (a partition of the `requests` assets).

    REQUEST is the text itself, or @FILE to read it from a file. Exit status 0 when the
    request passed, 3 when it ended otherwise (failed_tests, rejected, budget_exceeded, error).
    """
    if request.startswith("@"):
        path = Path(request[1:])
        try:
            request = path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise click.UsageError(f"cannot read {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"{path} is not UTF-8 text") from exc
    try:
        text = validate_request(request)
    except BadRequest as exc:
        raise click.UsageError(str(exc)) from exc
    options = {
        k: v
        for k, v in {
            "max_rounds": max_rounds,
            "candidates": candidates,
            "budget_tokens": budget_tokens,
            "budget_usd": budget_usd,
        }.items()
        if v is not None
    }
    summary = _summary(run_request(get_settings(), text, options))
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        cost = summary["cost_usd"]
        click.echo(f"request    {summary['request_id']}")
        click.echo(f"status     {summary['status']}: {summary['reason']}")
        click.echo(f"tests      {summary['tests_passed']}/{summary['tests_total']} passed")
        click.echo(f"rounds     {summary['rounds']}")
        click.echo(
            f"tokens     {summary['tokens']} ({summary['prompt_tokens']} in, "
            f"{summary['completion_tokens']} out, {summary['cache_hits']} cached calls)"
        )
        click.echo(f"cost       {'unknown' if cost is None else f'${cost:.6f}'}")
        click.echo(f"artifacts  {summary['artifact_dir']}")
        for name in summary["artifacts"]:
            click.echo(f"           {name}")
    sys.stdout.flush()
    if summary["status"] != "passed":
        raise click.exceptions.Exit(NOT_PASSED_EXIT)
