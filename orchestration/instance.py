"""The Dagster instance the CLI works on: ``DAGSTER_HOME`` if set, else one under CODEGEN_HOME.

A fresh home gets the project's ``orchestration/dagster.yaml`` (no telemetry, pools, quiet
step-worker logs), the same file ``make run`` installs, so CLI runs and UI runs share one
instance and look alike.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from orchestration.config import PROJECT_ROOT, Settings, default_dagster_home

INSTANCE_TEMPLATE = PROJECT_ROOT / "orchestration" / "dagster.yaml"


def configured_instance(settings: Settings) -> Any:  # DagsterInstance; dagster imports slowly
    from dagster import DagsterInstance

    if not os.environ.get("DAGSTER_HOME"):
        home = default_dagster_home(settings)
        home.mkdir(parents=True, exist_ok=True)
        if not (home / "dagster.yaml").exists() and INSTANCE_TEMPLATE.exists():
            shutil.copy(INSTANCE_TEMPLATE, home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()
