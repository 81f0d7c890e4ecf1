"""Jobs of the code location: one request through the crew, and submitting a request."""

from dagster import (
    AssetSelection,
    Config,
    OpExecutionContext,
    define_asset_job,
    job,
    op,
)

from codegen.agents.roles import BadRequest, validate_request
from codegen.agents.types import CrewOptions
from codegen.assets.codegen import GROUP, requests_partitions
from codegen.assets.resources import SettingsResource
from codegen.orchestration.executor import threaded_in_process_executor
from codegen.orchestration.run_queue import KIND_REQUEST, kind_tags
from codegen.requests.store import RequestStore

CODEGEN_JOB = "codegen_request"

# Every request asset and its checks, for one partition (one request).
codegen_request_job = define_asset_job(
    CODEGEN_JOB,
    selection=AssetSelection.groups(GROUP),
    partitions_def=requests_partitions,
    description="Run the crew on one request (a partition of `requests`).",
    # Steps on threads of the run's process: the test designer and the programmer overlap,
    # and no step pays a process start (see codegen/orchestration/executor.py, docs/benchmarks.md).
    executor_def=threaded_in_process_executor,
    tags=kind_tags(KIND_REQUEST),
)


class SubmitRequestConfig(Config):
    """What the UI launchpad asks for: the request text and optional crew options."""

    request: str
    max_rounds: int | None = None
    candidates: int | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    review: str | None = None  # agent | human | both; default: [review] mode


@op(description="Store the request; the inbox sensor launches its run on its next tick.")
def submit_request(
    context: OpExecutionContext, config: SubmitRequestConfig, settings: SettingsResource
) -> str:
    text = validate_request(config.request)
    options = {
        k: v
        for k, v in config.model_dump().items()
        if k in CrewOptions.__dataclass_fields__ and v is not None
    }
    try:
        CrewOptions.from_dict(options)  # e.g. an unknown review mode
    except TypeError as exc:
        raise BadRequest(f"bad options: {exc}") from exc
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
