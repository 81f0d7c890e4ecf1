"""``codegen generate "REQUEST"``: one request through the crew, as a Dagster run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from codegen import composition
from codegen.agents.llm import request_key
from codegen.agents.options import REVIEW_MODES, BadOptions, RequestOptions, StoredOptions
from codegen.agents.report import RequestReport
from codegen.agents.roles import BadRequest, read_request_file, validate_request
from codegen.agents.types import SPEC_ENDED
from codegen.orchestration.cli.exits import Refused
from codegen.orchestration.cli.outcome import show_outcome, summarize
from codegen.orchestration.instance import configured_instance
from codegen.requests.route import refusal, wait_for_daemon_environment
from codegen.requests.store import TITLE_TAG, RequestStore, artifact_dir, request_title
from codegen.settings import Settings, get_settings

if TYPE_CHECKING:
    from dagster import DagsterEvent, DagsterInstance


class _Progress:
    """Prints the run's step events to stderr while the run executes."""

    def __init__(self, instance: DagsterInstance, request_id: str) -> None:
        self.instance, self.request_id = instance, request_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from dagster import DagsterEventType, RunsFilter

        from codegen.assets.codegen import asset_name

        words = {
            DagsterEventType.STEP_START: "started",
            DagsterEventType.STEP_SUCCESS: "done",
            DagsterEventType.STEP_FAILURE: "FAILED",
            DagsterEventType.STEP_SKIPPED: "skipped",
        }
        spec_asset = asset_name("spec")
        # Set once the spec ended the request (SPEC_ENDED): every later step and check only
        # carries the ending on, so it shows as skipped, with why, instead of started/done.
        skipped_why = ""
        run_id, cursor = None, None
        last = False
        while not last:
            # One more poll once stopped: the run's last step events are shown too.
            last = self.stop.wait(1.0)
            try:
                if run_id is None:
                    runs = self.instance.get_run_records(
                        RunsFilter(tags={"dagster/partition": self.request_id}), limit=1
                    )
                    if not runs:
                        continue
                    run_id = runs[0].dagster_run.run_id
                # Only the new step events since the last poll: the run shares this process.
                kinds = {*words, DagsterEventType.ASSET_MATERIALIZATION}
                page = self.instance.get_records_for_run(run_id, cursor, of_type=kinds)
                cursor = page.cursor
                for record in page.records:
                    entry = record.event_log_entry
                    event = entry.dagster_event
                    step = entry.step_key or ""
                    if event.event_type is DagsterEventType.ASSET_MATERIALIZATION:
                        status = _spec_ending(event, spec_asset)
                        if status:
                            skipped_why = f"the request ended at {spec_asset}: {status}"
                        continue
                    word = words[event.event_type]
                    if skipped_why and not step.startswith(spec_asset):
                        if event.event_type is DagsterEventType.STEP_START:
                            continue
                        if event.event_type is DagsterEventType.STEP_SUCCESS:
                            word = f"skipped ({skipped_why})"
                    click.echo(f"  {step}: {word}", err=True)
            except Exception:  # progress is best effort; the run's result is what counts
                continue

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def _spec_ending(event: DagsterEvent, spec_asset: str) -> str:
    """The status a spec materialization ended the request with (``SPEC_ENDED``), else ""."""
    from dagster import AssetKey

    materialization = event.step_materialization_data.materialization
    if materialization.asset_key != AssetKey(spec_asset):
        return ""
    status = materialization.metadata.get("status")
    value = getattr(status, "value", status)
    return str(value) if value in {s.value for s in SPEC_ENDED} else ""


# A daemon whose sensor and queue heartbeats are older than this is taken as stopped (Dagster's
# own tolerance, 30 minutes, would leave a request waiting on a daemon long gone).
DAEMON_HEARTBEAT_TOLERANCE_S = 60.0
LAUNCH_MODES = ("auto", "queue", "here")


def daemon_running(instance: DagsterInstance) -> bool:
    """Whether a dagster-daemon serves this instance: its sensors and its run queue beat."""
    from codegen.orchestration.dagster_private import get_daemon_statuses

    statuses = get_daemon_statuses(
        instance,
        ["SENSOR", "QUEUED_RUN_COORDINATOR"],
        ignore_errors=True,
        heartbeat_tolerance_seconds=DAEMON_HEARTBEAT_TOLERANCE_S,
    )
    return all(status.healthy for status in statuses.values())


# How long a failed run may go without Dagster's retry verdict before the failure is final.
RETRY_VERDICT_WAIT_S = 60.0


def _wait_for_queued_run(
    instance: DagsterInstance,
    request_id: str,
    poll_s: float = 1.0,
    retry_verdict_wait_s: float = RETRY_VERDICT_WAIT_S,
) -> tuple[str, bool]:
    """Wait while the daemon's inbox sensor launches the request's run and the queue runs it.

    A run lost with its container is failed and then retried by the instance's run retries
    (codegen/deploy/docker), so a failure is final only once Dagster has said it will not retry.
    Dagster stores the FAILURE status first and its ``will_retry`` verdict just after, so a
    failed run without the verdict is waited on (the retry daemon adds the verdict itself if
    the process that failed the run died first), for at most ``retry_verdict_wait_s``.
    """
    from dagster import DagsterRunStatus, RunsFilter

    from codegen.orchestration.dagster_private import WILL_RETRY_TAG

    finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    shown: DagsterRunStatus | None = None
    unjudged_since: dict[str, float] = {}  # failed run id -> when it was first seen failed
    while True:
        records = instance.get_run_records(
            RunsFilter(tags={"dagster/partition": request_id}), limit=1
        )
        if records:
            run = records[0].dagster_run
            if run.status != shown:
                shown = run.status
                click.echo(f"  run {run.run_id}: {run.status.value.lower()}", err=True)
            verdict = run.tags.get(WILL_RETRY_TAG)
            if run.status is DagsterRunStatus.FAILURE and verdict is None:
                first_seen = unjudged_since.setdefault(run.run_id, time.monotonic())
                if instance.run_retries_enabled and (
                    time.monotonic() - first_seen < retry_verdict_wait_s
                ):
                    time.sleep(poll_s)
                    continue
            if run.status in finished and verdict != "true":
                return run.run_id, run.status is DagsterRunStatus.SUCCESS
        time.sleep(poll_s)


def run_request(
    settings: Settings,
    text: str,
    options: StoredOptions,
    launch: str = "auto",
    record_to: Path | None = None,
) -> tuple[str, RequestReport]:
    """Store the request, run the request job, return the run's id and the request's report.

    ``launch``: ``here`` executes the run in this process, outside the instance's run queue
    (nothing else is needed: this is how the CLI works without a daemon); ``queue`` hands the
    request to the daemon (its inbox sensor launches the run, the queue's limits apply) and
    waits for the run; ``auto`` queues when a daemon serves the instance, else runs here.
    A route this process or the daemon cannot call is ``Refused`` before anything is stored.
    ``record_to`` (``--record``, runs here only): the run's crew records every reply to that
    file, with the response cache off (``recording_here``: this process's run only).
    """
    # The caller's endpoint and models go with the request, so whichever process runs it calls
    # them; a daemon with another key than the caller's is refused the request (route.py).
    route = composition.llm_route(settings)
    unset = composition.unset_key_envs(route)  # a candidate's key this shell does not have
    if unset:
        raise Refused(unset)
    instance = configured_instance(settings)
    say_if_building(settings, instance)
    if launch == "auto":
        launch = "queue" if daemon_running(instance) else "here"
    store = RequestStore(settings.requests_dir)
    if launch == "queue" and not daemon_running(instance):
        # A daemon started later might hold another key: nothing can check it now.
        raise Refused(
            f"no daemon serves this instance to run the request on {route.base_url} with this "
            "shell's key: start `make run`, or run it here with --launch here"
        )
    if launch == "queue":
        problem = refusal(settings.home, route, wait_for_daemon_environment(settings.home))
        if problem:
            raise Refused(problem)
        stored = store.add(text, options, source="cli", state="queued", route=route.to_dict())
        click.echo(f"request {stored.id}: queued for the daemon's run queue", err=True)
        with _Progress(instance, stored.id):
            run_id, success = _wait_for_queued_run(instance, stored.id)
    else:
        stored = store.add(text, options, source="cli", route=route.to_dict())
        click.echo(f"request {stored.id}: running the crew through Dagster", err=True)
        tags = {TITLE_TAG: request_title(text)}
        with _Progress(instance, stored.id):
            from codegen.assets.resources import recording_here  # Dagster's: loaded to run
            from codegen.orchestration.launch import run_in_this_process

            with recording_here(stored.id, record_to):
                run_id, success = run_in_this_process(instance, stored.id, tags=tags)
    folder = artifact_dir(settings.artifacts_dir, stored.id)
    report = RequestReport.load(folder)
    if report is None:
        raise click.ClickException(
            f"run {run_id} for request {stored.id} ended without a report "
            f"(run {'succeeded' if success else 'failed'}; see the Dagster UI)"
        )
    return run_id, report


def say_if_building(settings: Settings, instance: DagsterInstance) -> None:
    """A progress line when a corpus build runs (the first build of a fresh home, say): the
    crew then searches only what is embedded so far."""
    from codegen.assets.corpus_builds import build_in_progress
    from codegen.assets.resources import VectorIndexResource
    from codegen.retrieval.grounding import FULL

    if build_in_progress(instance) is None:
        return
    grounding = VectorIndexResource.for_crew(settings).grounding()  # what the run's search sees
    if grounding.status != FULL:
        click.echo(
            f"  index: {grounding.while_building().describe()}; the crew searches what is "
            "embedded when it gets there",
            err=True,
        )


def _bounds(name: str) -> dict[str, float | bool]:
    return RequestOptions.bounds(name)


def _help(name: str) -> str:
    return RequestOptions.model_fields[name].description or ""


@click.command()
@click.argument("request")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
# Names, types, ranges and help come from RequestOptions, as do the inbox's and launchpad's.
@click.option(
    "--max-rounds", type=click.IntRange(**_bounds("max_rounds")), help=_help("max_rounds")
)
@click.option(
    "--candidates", type=click.IntRange(**_bounds("candidates")), help=_help("candidates")
)
@click.option(
    "--budget-tokens", type=click.IntRange(**_bounds("budget_tokens")), help=_help("budget_tokens")
)
@click.option(
    "--budget-usd", type=click.FloatRange(**_bounds("budget_usd")), help=_help("budget_usd")
)
@click.option("--review", type=click.Choice(REVIEW_MODES), help=_help("review"))
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
    help="Record every model reply of this run to this file (no response cache; appended to "
    "an existing recording); `codegen replay serve FILE` then answers the same request text. "
    "Runs here, not through the daemon's queue.",
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
    request passed, else one per ending, 2 when refused before anything was stored (all of
    them: docs/cli.md, "Exit codes").
    """
    if request.startswith("@"):
        path = Path(request[1:])
        try:
            request = read_request_file(path).decode("utf-8")  # capped: never read whole
        except OSError as exc:
            raise click.UsageError(f"cannot read {path}: {exc.strerror}") from exc
        except BadRequest as exc:
            raise click.UsageError(f"{path}: {exc}") from exc
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
    try:
        options = RequestOptions.check(options)
    except BadOptions as exc:
        raise click.UsageError(str(exc)) from exc
    settings = get_settings()
    if record_path is None:
        run_id, report = run_request(settings, text, options, launch)
        show_outcome(
            summarize(report, run_id, artifact_dir(settings.artifacts_dir, report.request_id)),
            as_json,
        )
        return
    # The recording is this shell's file: the run is this process's, never the daemon's.
    if launch == "queue":
        raise click.UsageError("--record runs the request here: drop --launch queue")
    from codegen.orchestration.cli.replay import RecordingRun

    with RecordingRun(record_path) as recording:
        run_id, report = run_request(settings, text, options, "here", recording.path)
        recording.outcome = {
            "status": report.status.value,
            "reason": report.reason,
            "request_id": report.request_id,
            "request": request_key(text),
        }
        show_outcome(
            summarize(report, run_id, artifact_dir(settings.artifacts_dir, report.request_id)),
            as_json,
        )
