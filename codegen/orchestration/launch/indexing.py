"""Index wiring: a job to (re)build the vector index, and the sensor that keeps it current.

The index asset's ``AutomationCondition.eager()`` plus this sensor re-sync the index after
every chunks materialization (the nightly corpus re-index ends there), so unchanged chunks
are never re-embedded and removed ones leave the index without anyone launching anything.
"""

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    define_asset_job,
)

from codegen.assets import index as index_assets
from codegen.orchestration.instance import KIND_CORPUS, kind_tags

index_job = define_asset_job(
    "index_job",
    selection=AssetSelection.assets(index_assets.index),
    description="Embed new chunks, delete removed ones, then run the blocking quality check.",
    tags=kind_tags(KIND_CORPUS),
)

index_automation_sensor = AutomationConditionSensorDefinition(
    "index_automation_sensor",
    target=AssetSelection.assets(index_assets.index),
    default_status=DefaultSensorStatus.RUNNING,
    description="Re-syncs the vector index after the chunks asset updates.",
)

INDEX_JOBS = [index_job]
INDEX_SENSORS = [index_automation_sensor]
