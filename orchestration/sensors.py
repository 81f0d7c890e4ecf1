"""The inbox sensor: one run per new request file, and per request queued from the launchpad."""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from agents.inbox import scan_inbox
from agents.requests import RequestStore
from assets.codegen import requests_partitions
from assets.resources import SettingsResource
from orchestration.jobs import codegen_request_job


@sensor(
    job=codegen_request_job,
    minimum_interval_seconds=10,
    default_status=DefaultSensorStatus.RUNNING,
    description="Picks up request files dropped into $CODEGEN_HOME/inbox/ and queued requests.",
)
def inbox_sensor(context: SensorEvaluationContext, settings: SettingsResource) -> SensorResult:
    cfg = settings.load()
    store = RequestStore(cfg.requests_dir)
    scan = scan_inbox(cfg.inbox_dir, store)
    for name, reason in scan.rejected:
        context.log.warning(f"inbox: {name} moved to rejected/: {reason}")
    queued = store.with_state("queued")
    for req in queued:
        store.set_state(req.id, "launched")
    launch = [*scan.accepted, *queued]
    if not launch:
        return SensorResult(skip_reason=SkipReason("no new requests"))
    ids = [r.id for r in launch]
    return SensorResult(
        run_requests=[
            RunRequest(partition_key=r.id, run_key=r.id, tags={"codegen/source": r.source})
            for r in launch
        ],
        dynamic_partitions_requests=[requests_partitions.build_add_request(ids)],
    )
