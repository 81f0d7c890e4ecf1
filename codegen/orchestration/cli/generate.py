"""``codegen generate "REQUEST"``: one request through the crew, as a Dagster run."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from codegen.agents.roles import BadRequest, validate_request
from codegen.agents.types import REVIEW_MODES
from codegen.orchestration.instance import configured_instance
from codegen.requests.store import RequestStore, artifact_dir
from codegen.settings import Settings, get_settings

# Exit status when the run completed but the request did not pass (failed_tests, rejected,
# budget_exceeded, error): distinct from 1 (codegen itself failed) and 2 (usage).
NOT_PASSED_EXIT = 3
# Exit status when the tests pass and the request waits for a person (`codegen review`).
AWAITING_REVIEW_EXIT = 4


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
        run_id, cursor = None, None
        while not self.stop.wait(1.0):
            try:
                if run_id is None:
                    runs = self.instance.get_run_records(
                        RunsFilter(tags={"dagster/partition": self.request_id}), limit=1
                    )
                    if not runs:
                        continue
                    run_id = runs[0].dagster_run.run_id
                # Only the new step events since the last poll: the run shares this process.
                page = self.instance.get_records_for_run(run_id, cursor, of_type=set(words))
                cursor = page.cursor
                for record in page.records:
                    entry = record.event_log_entry
                    word = words[entry.dagster_event.event_type]
                    click.echo(f"  {entry.step_key}: {word}", err=True)
            except Exception:  # progress is best effort; the run's result is what counts
                continue

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


# A daemon whose sensor and queue heartbeats are older than this is taken as stopped (Dagster's
# own tolerance, 30 minutes, would leave a request waiting on a daemon long gone).
DAEMON_HEARTBEAT_TOLERANCE_S = 60.0
LAUNCH_MODES = ("auto", "queue", "here")


def daemon_running(instance: Any) -> bool:
    """Whether a dagster-daemon serves this instance: its sensors and its run queue beat."""
    from codegen.orchestration.dagster_private import get_daemon_statuses

    statuses = get_daemon_statuses(
        instance,
        ["SENSOR", "QUEUED_RUN_COORDINATOR"],
        ignore_errors=True,
        heartbeat_tolerance_seconds=DAEMON_HEARTBEAT_TOLERANCE_S,
    )
    return all(status.healthy for status in statuses.values())


def run_in_this_process(
    instance: Any,
    request_id: str,
    job_name: str = "request_job",
    run_config: dict[str, Any] | None = None,
) -> tuple[str, bool]:
    """Execute a job of ``codegen.orchestration.definitions`` (``job_name``: its resolving function)
    for the request's partition, in this process."""
    from dagster import build_reconstructable_job, execute_job

    from codegen.assets.codegen import requests_partitions

    instance.add_dynamic_partitions(requests_partitions.name, [request_id])
    job = build_reconstructable_job("codegen.orchestration.definitions", job_name)
    result = execute_job(
        job,
        instance=instance,
        tags={"dagster/partition": request_id, "codegen/source": "cli"},
        # Step events go to the instance (and our progress lines); the console gets warnings.
        run_config={
            **(run_config or {}),
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        },
    )
    return result.run_id, result.success


def _wait_for_queued_run(instance: Any, request_id: str, poll_s: float = 1.0) -> tuple[str, bool]:
    """Wait while the daemon's inbox sensor launches the request's run and the queue runs it."""
    from dagster import DagsterRunStatus, RunsFilter

    from codegen.orchestration.dagster_private import WILL_RETRY_TAG

    finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    shown: DagsterRunStatus | None = None
    while True:
        records = instance.get_run_records(
            RunsFilter(tags={"dagster/partition": request_id}), limit=1
        )
        if records:
            run = records[0].dagster_run
            if run.status != shown:
                shown = run.status
                click.echo(f"  run {run.run_id}: {run.status.value.lower()}", err=True)
            # A run lost with its container is failed and then retried by the instance's run
            # retries (codegen/deploy/docker): wait for the retry instead of reporting the loss.
            if run.status in finished and run.tags.get(WILL_RETRY_TAG) != "true":
                return run.run_id, run.status is DagsterRunStatus.SUCCESS
        time.sleep(poll_s)


def run_request(
    settings: Settings, text: str, options: dict[str, Any], launch: str = "auto"
) -> dict[str, Any]:
    """Store the request, run the request job, return report.json.

    ``launch``: ``here`` executes the run in this process, outside the instance's run queue
    (nothing else is needed: this is how the CLI works without a daemon); ``queue`` hands the
    request to the daemon (its inbox sensor launches the run, the queue's limits apply) and
    waits for the run; ``auto`` queues when a daemon serves the instance, else runs here.
    """
    instance = configured_instance(settings)
    if launch == "auto":
        launch = "queue" if daemon_running(instance) else "here"
    elif launch == "queue" and not daemon_running(instance):
        click.echo("codegen: warning: no daemon serves this instance; the request waits", err=True)
    store = RequestStore(settings.requests_dir)
    if launch == "queue":
        stored = store.add(text, options, source="cli", state="queued")
        click.echo(f"request {stored.id}: queued for the daemon's run queue", err=True)
        with _Progress(instance, stored.id):
            run_id, success = _wait_for_queued_run(instance, stored.id)
    else:
        stored = store.add(text, options, source="cli")
        click.echo(f"request {stored.id}: running the crew through Dagster", err=True)
        with _Progress(instance, stored.id):
            run_id, success = run_in_this_process(instance, stored.id)
    folder = artifact_dir(settings.artifacts_dir, stored.id)
    report_path = folder / "report.json"
    if not report_path.exists():
        raise click.ClickException(
            f"run {run_id} for request {stored.id} ended without a report "
            f"(run {'succeeded' if success else 'failed'}; see the Dagster UI)"
        )
    report = json.loads(report_path.read_text())
    report["run_id"] = run_id
    report["artifact_dir"] = str(folder)
    return report


def summarize(report: dict[str, Any]) -> dict[str, Any]:
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
        "human_review": report.get("human_review"),
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
@click.option(
    "--review",
    type=click.Choice(REVIEW_MODES),
    help="Who signs off once the tests pass: the reviewer agent, a person (`codegen review`), "
    "or both (default: [review] mode, itself agent).",
)
@click.option(
    "--launch",
    type=click.Choice(LAUNCH_MODES),
    default="auto",
    show_default=True,
    help="queue: through the daemon's run queue; here: in this process, outside the queue; "
    "auto: queue when a daemon serves the instance, else here.",
)
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the crew's LLM traffic to this recording (codegen replay serve replays it); "
    "runs here, not through the daemon's queue.",
)
def generate(
    request: str,
    as_json: bool,
    max_rounds: int | None,
    candidates: int | None,
    budget_tokens: int | None,
    budget_usd: float | None,
    review: str | None,
    launch: str,
    record_path: Path | None = None,
) -> None:
    """Turn REQUEST into tested, documented code (a partition of the `requests` assets).

    REQUEST is the text itself, or @FILE to read it from a file. Exit status 0 when the
    request passed, 4 when it awaits a person's review (--review human|both), 3 when it ended
    otherwise (failed_tests, rejected, budget_exceeded, error).
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
            "review": review,
        }.items()
        if v is not None
    }
    settings = get_settings()
    if record_path is not None:
        # Runs the daemon launches never see this process's environment, hence the recorder.
        if launch == "queue":
            raise click.UsageError("--record runs the request here: drop --launch queue")
        from codegen.orchestration.cli.replay import recording_settings

        settings = recording_settings(settings, record_path)
        launch = "here"
    show_outcome(summarize(run_request(settings, text, options, launch)), as_json)


def show_outcome(summary: dict[str, Any], as_json: bool) -> None:
    """Print a request's outcome; exit 0 passed, 4 awaiting review, 3 anything else."""
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
    if summary["status"] == "awaiting_review":
        click.echo(
            f"codegen: awaiting review: codegen review {summary['request_id']} "
            '--approve [--note TEXT] | --reject "POINTS"',
            err=True,
        )
        raise click.exceptions.Exit(AWAITING_REVIEW_EXIT)
    if summary["status"] != "passed":
        raise click.exceptions.Exit(NOT_PASSED_EXIT)
