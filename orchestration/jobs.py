"""Jobs of the code location: one request through the crew, and submitting a request."""

from dagster import (
    AssetSelection,
    Config,
    JobDefinition,
    OpExecutionContext,
    define_asset_job,
    job,
    multiprocess_executor,
    op,
)

from agents.requests import RequestStore
from agents.roles import validate_request
from agents.types import CrewOptions
from assets.codegen import GROUP, requests_partitions
from assets.resources import SettingsResource

CODEGEN_JOB = "codegen_request"

# Every request asset and its checks, for one partition (one request).
codegen_request_job = define_asset_job(
    CODEGEN_JOB,
    selection=AssetSelection.groups(GROUP),
    partitions_def=requests_partitions,
    description="Run the crew on one request (a partition of `requests`).",
    # forkserver with the code location preloaded: each step's process starts in well under
    # a second instead of re-importing Dagster and the platform (measured: ~10 s per step
    # on the 2-core CI machine with spawn).
    executor_def=multiprocess_executor.configured(
        {"start_method": {"forkserver": {"preload_modules": ["orchestration.definitions"]}}}
    ),
)


class SubmitRequestConfig(Config):
    """What the UI launchpad asks for: the request text and optional crew options."""

    request: str
    max_rounds: int | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None


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
    stored = RequestStore(settings.load().requests_dir).add(
        text, options, source="launchpad", state="queued"
    )
    context.log.info(f"request {stored.id} queued")
    return stored.id


@job(description="Launchpad entry point: put the request text in the run config.")
def submit_request_job() -> None:
    submit_request()


def codegen_job_for_cli() -> JobDefinition:
    """The resolved request job, for ``build_reconstructable_job`` (the CLI's runs)."""
    from orchestration.definitions import defs

    return defs.resolve_job_def(CODEGEN_JOB)
