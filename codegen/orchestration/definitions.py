"""The code location: one Definitions object wiring assets, checks, jobs, sensors, resources.

Jobs and sensors are built in their own modules and only meet here (sensor factories take
the job they launch), so no module below imports this one.
"""

from __future__ import annotations

import contextlib
from functools import cache

from dagster import (
    AssetChecksDefinition,
    Definitions,
    JobDefinition,
    load_asset_checks_from_modules,
    load_assets_from_modules,
)

from codegen.assets import codegen, codegen_checks, corpus, evaluation, index
from codegen.evaluation.benchmarks import registered
from codegen.orchestration.launch import (
    CODEGEN_JOB,
    CORPUS_JOBS,
    CORPUS_SCHEDULES,
    CORPUS_SENSORS,
    INDEX_JOBS,
    INDEX_SENSORS,
    REVIEW_JOB,
    build_inbox_sensor,
    build_review_sensor,
    codegen_request_job,
    eval_jobs,
    review_request_job,
    submit_request_job,
)
from codegen.orchestration.resources import resources_for
from codegen.settings import get_settings

ASSET_MODULES = [corpus, codegen, codegen_checks, index]


def build_definitions() -> Definitions:
    settings = get_settings()
    benchmarks = registered(settings.eval.benchmarks)
    # One family of evaluation assets per registered benchmark, and one for task files.
    evaluations = evaluation.evaluation_definitions(benchmarks)
    # The README's inbox command works as soon as the code location has loaded.
    with contextlib.suppress(OSError):  # a read-only home still loads
        settings.inbox_dir.mkdir(parents=True, exist_ok=True)
    return Definitions(
        # The request assets are built from STEPS (a dict, which module loading does not see).
        assets=[
            *load_assets_from_modules(ASSET_MODULES),
            *codegen.REQUEST_ASSETS.values(),
            *(d for d in evaluations if not isinstance(d, AssetChecksDefinition)),
        ],
        asset_checks=[
            *load_asset_checks_from_modules(ASSET_MODULES),
            *(d for d in evaluations if isinstance(d, AssetChecksDefinition)),
        ],
        resources=resources_for(settings),
        jobs=[
            codegen_request_job,
            submit_request_job,
            review_request_job,
            *CORPUS_JOBS,
            *INDEX_JOBS,
            *eval_jobs(benchmarks),
        ],
        schedules=[*CORPUS_SCHEDULES],
        sensors=[
            build_inbox_sensor(codegen_request_job),
            build_review_sensor(review_request_job),
            *CORPUS_SENSORS,
            *INDEX_SENSORS,
        ],
    )


defs = build_definitions()


@cache
def request_job() -> JobDefinition:
    """The resolved request job, for ``build_reconstructable_job`` (the CLI's own runs)."""
    return defs.resolve_job_def(CODEGEN_JOB)


@cache
def review_job() -> JobDefinition:
    """The resolved review job, for ``build_reconstructable_job`` (``codegen review``)."""
    return defs.resolve_job_def(REVIEW_JOB)
