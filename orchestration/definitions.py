"""The code location: one Definitions object wiring assets, checks, jobs and resources."""

from __future__ import annotations

from dagster import Definitions, load_asset_checks_from_modules, load_assets_from_modules

from assets import corpus
from orchestration.config import get_settings
from orchestration.resources import resources_for

ASSET_MODULES = [corpus]


def build_definitions() -> Definitions:
    settings = get_settings()
    return Definitions(
        assets=load_assets_from_modules(ASSET_MODULES),
        asset_checks=load_asset_checks_from_modules(ASSET_MODULES),
        resources=resources_for(settings),
    )


defs = build_definitions()
