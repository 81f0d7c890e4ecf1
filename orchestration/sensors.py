"""The inbox sensor: one run per new request file, and per request queued from the launchpad.

A factory that takes the job it launches, as in Dagster's ``project_fully_featured``: the
sensor module never imports the jobs module, and ``definitions`` wires the two together.
"""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,  # what define_asset_job returns; not exported by name
)

from agents.inbox import scan_inbox
from agents.requests import RequestStore
from assets.codegen import requests_partitions
from assets.resources import SettingsResource

INBOX_SENSOR = "inbox_sensor"


def build_inbox_sensor(job: UnresolvedAssetJobDefinition) -> SensorDefinition:
    """The sensor that launches ``job`` (the request job) for each new or queued request."""

    @sensor(
        name=INBOX_SENSOR,
        job=job,
        minimum_interval_seconds=10,
        default_status=DefaultSensorStatus.RUNNING,
        description="Picks up request files dropped into $CODEGEN_HOME/inbox/ and queued "
        "requests (the launchpad's and the CLI's when a daemon runs).",
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

    return inbox_sensor
