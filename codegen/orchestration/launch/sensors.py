"""The inbox sensor: one run per new request file, and per request queued from the launchpad.

Crash-safe by construction: request files are taken in steps that are safe to repeat
(``codegen.requests.inbox.scan_inbox``), a request leaves the ``queued`` state only once a later
tick's
cursor shows that Dagster recorded its run request, and the run key is the request id.

A factory that takes the job it launches, as in Dagster's ``project_fully_featured``: the
sensor module never imports the jobs module, and ``definitions`` wires the two together.
"""

import json

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from codegen.agents.artifacts import is_request_id
from codegen.assets.codegen import requests_partitions
from codegen.assets.resources import SettingsResource
from codegen.orchestration.dagster_private import UnresolvedAssetJobDefinition
from codegen.requests.inbox import scan_inbox
from codegen.requests.route import publish_daemon_environment
from codegen.requests.store import TITLE_TAG, RequestStore, request_title

INBOX_SENSOR = "inbox_sensor"


def _requested(context: SensorEvaluationContext) -> list[str]:
    """The request ids in the cursor; a cursor edited into anything else is ignored (those
    requests stay queued and are asked for again, which the run key makes harmless)."""
    try:
        ids = json.loads(context.cursor or "[]")
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(i, str) and is_request_id(i) for i in ids):
        context.log.warning("inbox: ignoring a cursor that is not a list of request ids")
        return []
    return ids


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
        # This process has the daemon's environment: say which endpoint and key (hashed) its
        # runs have, so `codegen generate` can tell whether the daemon may run its request.
        publish_daemon_environment(
            cfg.home,
            cfg.llm.base_url,
            [c.api_key_env for c in cfg.llm.candidate_entries() if c.api_key_env],
            cfg.llm.allowed_base_urls,
        )
        store = RequestStore(cfg.requests_dir)
        # The cursor names the requests of the last tick that Dagster finished, so it holds
        # their run requests now; a tick cut short leaves its requests queued for the next.
        for request_id in _requested(context):
            store.set_state(request_id, "launched")
        scan = scan_inbox(cfg.inbox_dir, store)
        for name, reason in scan.rejected:
            context.log.warning(f"inbox: {name} moved to rejected/: {reason}")
        launch = store.with_state("queued")
        if not launch:
            return SensorResult(skip_reason=SkipReason("no new requests"), cursor="[]")
        ids = [r.id for r in launch]
        return SensorResult(
            # run_key = request id: Dagster never starts a second run for a request asked twice.
            run_requests=[
                RunRequest(
                    partition_key=r.id,
                    run_key=r.id,
                    tags={"codegen/source": r.source, TITLE_TAG: request_title(r.text)},
                )
                for r in launch
            ],
            dynamic_partitions_requests=[requests_partitions.build_add_request(ids)],
            cursor=json.dumps(ids),
        )

    return inbox_sensor
