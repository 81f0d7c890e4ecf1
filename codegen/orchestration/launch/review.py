"""Human review in Dagster: the ``review_request`` job that applies a verdict, and the sensor
that shows waiting reviews and ends forgotten ones (``[review] timeout_hours``).

A request awaiting review holds no run: its code, tests and reviews sit in the assets'
metadata and artifacts, its open round in ``codegen.agents.review.ReviewStore``. The verdict is the
run config of ``human_review`` (``ReviewVerdictConfig``); the job rematerializes
``human_review`` and ``documentation`` for the request's partition. The sensor is a factory
taking the job, like the inbox sensor.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import (
    AssetSelection,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from codegen.assets.codegen import REQUEST_ASSETS, REVIEW_JOB, requests_partitions
from codegen.assets.resources import SettingsResource
from codegen.orchestration.dagster_private import UnresolvedAssetJobDefinition
from codegen.orchestration.instance import KIND_REQUEST, kind_tags
from codegen.orchestration.launch.executor import threaded_in_process_executor
from codegen.requests.review import ReviewError, ReviewStore

REVIEW_SENSOR = "review_sensor"

review_request_job = define_asset_job(
    REVIEW_JOB,
    selection=AssetSelection.assets(REQUEST_ASSETS["review"], REQUEST_ASSETS["docs"]),
    partitions_def=requests_partitions,
    description="Give a person's verdict on a request awaiting review (pick its partition; "
    "config ops.human_review.config: verdict approve|reject, note: the note or the points). "
    "Approval writes the docs; rejection revises the code and waits for review again.",
    executor_def=threaded_in_process_executor,
    tags=kind_tags(KIND_REQUEST),
)


def verdict_run_config(
    verdict: str, note: str, reviewer: str, claim: str = ""
) -> dict[str, dict[str, dict[str, dict[str, str]]]]:
    """The run config of a ``review_request`` run carrying this (claimed) verdict."""
    config = {"verdict": verdict, "note": note, "reviewer": reviewer, "claim": claim}
    return {"ops": {REQUEST_ASSETS["review"].node_def.name: {"config": config}}}


def build_review_sensor(job: UnresolvedAssetJobDefinition) -> SensorDefinition:
    """The sensor that lists waiting reviews and ends those past ``[review] timeout_hours``."""

    @sensor(
        name=REVIEW_SENSOR,
        job=job,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description="Warns about requests awaiting a person's review (with how long each has "
        "waited) and rejects those waiting longer than [review] timeout_hours.",
    )
    def review_sensor(context: SensorEvaluationContext, settings: SettingsResource) -> SensorResult:
        cfg = settings.load()
        reviews = ReviewStore(cfg.requests_dir)
        timeout = cfg.review.timeout_hours
        now = datetime.now(UTC)
        runs: list[RunRequest] = []
        waiting: list[str] = []
        for pending in reviews.awaiting():
            hours = pending.waited_hours(now)
            if timeout is not None and hours >= timeout:
                reason = f"no verdict within {timeout:g} hours"
                try:
                    claim = reviews.claim(pending.request_id, "timeout", reason, "codegen")
                except ReviewError:  # a person's verdict came first
                    continue
                runs.append(
                    RunRequest(
                        partition_key=pending.request_id,
                        run_key=f"{pending.request_id}-review-{pending.review_round}",
                        run_config=verdict_run_config("timeout", reason, "codegen", claim.token),
                        tags={"codegen/source": "review-timeout"},
                    )
                )
                continue
            line = f"{pending.request_id} (round {pending.review_round}, waiting {hours:.2f} h)"
            context.log.warning(f"awaiting review: {line}")
            waiting.append(line)
        if runs:
            return SensorResult(run_requests=runs)
        if waiting:
            return SensorResult(
                skip_reason=SkipReason(f"{len(waiting)} awaiting review: " + "; ".join(waiting))
            )
        return SensorResult(skip_reason=SkipReason("no request awaits review"))

    return review_sensor
