"""Resources per environment, chosen in this one place by ``CODEGEN_ENV``.

local       embedded defaults: SQLite instance, filesystem IO manager, data under CODEGEN_HOME
production  GCS IO manager (dagster-gcp) when ``storage.gcs_bucket`` is set; Postgres and
            Weaviate are chosen through dagster.yaml and ``codegen.retrieval.vector_store``
"""

from __future__ import annotations

from typing import Any

from codegen.assets.resources import (
    LLMResource,
    SandboxResource,
    SettingsResource,
    VectorIndexResource,
)
from codegen.orchestration.io_managers import RefusingFilesystemIOManager
from codegen.settings import Environment, Settings


def resources_for(settings: Settings) -> dict[str, Any]:
    common: dict[str, Any] = {
        "settings": SettingsResource(home=str(settings.home)),
        "llm": LLMResource.from_settings(settings),
        "sandbox": SandboxResource.from_settings(settings),
        # One index, two keys: the index asset's and the crew's (the Programmer's context).
        "vector_index": VectorIndexResource(home=str(settings.home)),
        "retriever": VectorIndexResource.for_crew(settings),
    }
    return {**common, "io_manager": io_manager_for(settings)}


def io_manager_for(settings: Settings) -> Any:
    if settings.env is Environment.PRODUCTION and settings.storage.gcs_bucket:
        # Imported here: google-cloud is slow to import and only production needs it.
        from dagster_gcp import GCSResource

        from codegen.orchestration.gcs_io_manager import RefusingGCSPickleIOManager

        return RefusingGCSPickleIOManager(
            gcs=GCSResource(project=settings.storage.gcs_project),
            gcs_bucket=settings.storage.gcs_bucket,
            gcs_prefix=settings.storage.gcs_prefix,
        )
    return RefusingFilesystemIOManager(base_dir=str(settings.home / "storage"))
