"""Resources per environment, chosen in this one place by ``CODEGEN_ENV``.

local       embedded defaults: SQLite instance, local IO manager, data under CODEGEN_HOME
test        the same wiring, pointed at whatever CODEGEN_HOME the test set up
production  the same resources; scale-out pieces (Postgres, GCS, Weaviate) are chosen
            through settings and dagster.yaml rather than different code
"""

from __future__ import annotations

from typing import Any

from assets.resources import LLMResource, SandboxResource, SettingsResource, VectorIndexResource
from orchestration.config import Environment, Settings


def resources_for(settings: Settings) -> dict[str, Any]:
    common: dict[str, Any] = {
        "settings": SettingsResource(home=str(settings.home)),
        "llm": LLMResource.from_settings(settings),
        "sandbox": SandboxResource.from_settings(settings),
        # One index, two keys: the index asset's and the crew's (the Programmer's context).
        "vector_index": VectorIndexResource(home=str(settings.home)),
        "retriever": VectorIndexResource(home=str(settings.home)),
    }
    if settings.env is Environment.PRODUCTION:
        return common
    if settings.env is Environment.TEST:
        return common
    return common
