"""Jobs of the code location: one request through the crew, and submitting a request; and a
request's job run in this process (``codegen generate`` and ``codegen review`` without a
daemon)."""

from dagster import (
    AssetSelection,
    Config,
    DagsterInstance,
    Failure,
    OpExecutionContext,
    build_reconstructable_job,
    define_asset_job,
    execute_job,
    job,
    op,
)
from pydantic import Field

from codegen.agents.options import BadOptions, RequestOptions
from codegen.agents.roles import BadRequest, validate_request
from codegen.assets.codegen import GROUP, requests_partitions
from codegen.assets.resources import SettingsResource
from codegen.json_types import JSONObject
from codegen.orchestration.instance import KIND_REQUEST, kind_tags
from codegen.orchestration.launch.executor import threaded_in_process_executor
from codegen.requests.store import RequestStore

CODEGEN_JOB = "codegen_request"

# Every request asset and its checks, for one partition (one request).
codegen_request_job = define_asset_job(
    CODEGEN_JOB,
    selection=AssetSelection.groups(GROUP),
    partitions_def=requests_partitions,
    description="Run the crew on one request (a partition of `requests`).",
    # Steps on threads of the run's process: the test designer and the programmer overlap,
    # and no step pays a process start (see codegen/orchestration/launch/executor.py, CHANGELOG.md).
    executor_def=threaded_in_process_executor,
    tags=kind_tags(KIND_REQUEST),
)


class SubmitRequestConfig(RequestOptions, Config):
    """What the UI launchpad asks for: the request text and the request's options, whose
    names, types and ranges are ``RequestOptions``' (the CLI's flags and the inbox's too).
    Every field has a default, so the launchpad opens with a valid config; an empty request is
    refused when the run starts, with the reason, before anything is stored."""

    request: str = Field(
        default="", description="The programming request, in plain words (required)."
    )


@op(description="Store the request; the inbox sensor launches its run on its next tick.")
def submit_request(
    context: OpExecutionContext, config: SubmitRequestConfig, settings: SettingsResource
) -> str:
    try:
        text = validate_request(config.request)
        options = RequestOptions.check(config.model_dump(mode="json", exclude={"request"}))
    except (BadRequest, BadOptions) as exc:
        # One line in the run's failure, nothing stored, nothing retried.
        raise Failure(description=f"request refused: {exc}", allow_retries=False) from exc
    stored = RequestStore(settings.load().requests_dir).add(
        text, options, source="launchpad", state="queued"
    )
    context.log.info(f"request {stored.id} queued")
    return stored.id


@job(
    description="Launchpad entry point: put the request text in the run config.",
    tags=kind_tags(KIND_REQUEST),
)
def submit_request_job() -> None:
    submit_request()


def run_in_this_process(
    instance: DagsterInstance,
    request_id: str,
    job_name: str = "request_job",
    run_config: JSONObject | None = None,
    tags: dict[str, str] | None = None,
) -> tuple[str, bool]:
    """Execute a job of ``codegen.orchestration.definitions`` (``job_name``: its resolving function)
    for the request's partition, in this process."""
    instance.add_dynamic_partitions(requests_partitions.name, [request_id])
    job = build_reconstructable_job("codegen.orchestration.definitions", job_name)
    result = execute_job(
        job,
        instance=instance,
        tags={"dagster/partition": request_id, "codegen/source": "cli", **(tags or {})},
        # Step events go to the instance (and our progress lines, report.json and the one-line
        # outcome); the console gets none of Dagster's log lines, a failed step's included.
        run_config={
            **(run_config or {}),
            "loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
        },
    )
    return result.run_id, result.success
