"""The code location: one Definitions object wiring assets, checks, jobs and resources."""

from __future__ import annotations

from dagster import Definitions, load_asset_checks_from_modules, load_assets_from_modules

from assets import codegen, corpus, evaluation, index
from orchestration.config import get_settings
from orchestration.corpus import CORPUS_JOBS, CORPUS_SCHEDULES, CORPUS_SENSORS
from orchestration.evaluation import eval_jobs
from orchestration.indexing import INDEX_JOBS, INDEX_SENSORS
from orchestration.jobs import codegen_request_job, submit_request_job
from orchestration.resources import resources_for
from orchestration.sensors import inbox_sensor

ASSET_MODULES = [corpus, evaluation, codegen, index]


def build_definitions() -> Definitions:
    settings = get_settings()
    return Definitions(
        assets=load_assets_from_modules(ASSET_MODULES),
        asset_checks=load_asset_checks_from_modules(ASSET_MODULES),
        resources=resources_for(settings),
        jobs=[codegen_request_job, submit_request_job, *CORPUS_JOBS, *INDEX_JOBS, *eval_jobs()],
        schedules=[*CORPUS_SCHEDULES],
        sensors=[inbox_sensor, *CORPUS_SENSORS, *INDEX_SENSORS],
    )


defs = build_definitions()
