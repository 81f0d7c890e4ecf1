"""dagster.yaml's storage: Postgres when DAGSTER_POSTGRES_URL is set, else SQLite.

See orchestration/instance.py for how every entry point gets this file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import Field, StringSource
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClass, ConfigurableClassData

from orchestration.instance import postgres_url, sqlalchemy_url
from settings import default_dagster_home


class EnvironmentStorage(DagsterStorage, ConfigurableClass):
    """dagster.yaml's ``storage: custom:`` target: Postgres or SQLite by the environment.

    Never instantiated (a DagsterStorage only for the loader's type check):
    ``from_config_value`` returns Dagster's own storage object, with
    this class's config data attached, so instance references re-run the same choice.
    """

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            "sqlite_base_dir": Field(
                StringSource,
                is_required=False,
                description="SQLite directory; default $DAGSTER_HOME/storage",
            )
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> DagsterStorage:
        url = postgres_url()
        if url:
            from dagster_postgres import DagsterPostgresStorage

            storage = DagsterPostgresStorage(postgres_url=sqlalchemy_url(url), inst_data=inst_data)
            return storage  # type: ignore[return-value]
        base_dir = config_value.get("sqlite_base_dir") or str(
            Path(os.environ.get("DAGSTER_HOME") or default_dagster_home()) / "storage"
        )
        return DagsterSqliteStorage.from_local(base_dir, inst_data=inst_data)
