"""The Dagster instance: Postgres when ``DAGSTER_POSTGRES_URL`` is set, else SQLite.

Every instance the project makes reads the project's ``dagster.yaml`` (beside this module;
``make run`` installs it into ``DAGSTER_HOME``, the CLI copies it into a fresh home). Its
``storage`` section names ``codegen.orchestration.instance.storage.EnvironmentStorage``, which
picks the backend when the instance loads: dagster-postgres' ``DagsterPostgresStorage`` (runs, event
log, schedules) for ``DAGSTER_POSTGRES_URL=postgresql://user@host:port/db``, else Dagster's
SQLite storage under ``$DAGSTER_HOME/storage``. So ``dagster dev``, the daemon, run workers
and the CLI agree without two copies of the file, and a run worker started by the daemon
(which gets the instance by reference) decides the same way. No Dagster import here: the
CLI imports this module for every command.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from codegen.settings import Settings, default_dagster_home

if TYPE_CHECKING:  # dagster imports slowly, and every CLI command imports this module
    from dagster import DagsterInstance

INSTANCE_TEMPLATE = Path(__file__).resolve().parent / "dagster.yaml"
POSTGRES_URL_ENV = "DAGSTER_POSTGRES_URL"


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_URL_ENV) or None


def sqlalchemy_url(url: str) -> str:
    """``postgresql://...`` with the driver dagster-postgres installs (psycopg2) named.

    SQLAlchemy 2.1 reads a bare ``postgresql://`` as psycopg 3, which is not installed.
    """
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg2://{rest}" if sep and scheme in ("postgresql", "postgres") else url


def storage_overrides() -> dict[str, dict[str, dict[str, str]]]:
    """The ``storage`` section for ``instance_for_test(overrides=...)``: tests that opt in."""
    url = postgres_url()
    return {"storage": {"postgres": {"postgres_url": sqlalchemy_url(url)}}} if url else {}


@contextmanager
def _home_lock(home: Path) -> Iterator[None]:
    """One process at a time creates a home's databases.

    SQLite storage stamps its schema version when it creates a database; three processes
    doing that at once on a fresh home fail with ``UNIQUE constraint failed:
    alembic_version.version_num`` (and Postgres' ``create_all`` races the same way).
    """
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".instance.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The storage line of the project's dagster.yaml, and the lines of copies installed before
# the storage module moved (into the codegen package, then into this room): a home made then
# still loads once its line names the module where the storage lives now.
STORAGE_LINE = f"module: {__package__}.storage"  # storage.py beside this module
_EARLIER_STORAGE_LINES = ("module: orchestration.storage", "module: codegen.orchestration.storage")


def install_instance_yaml(home: Path) -> None:
    """Give ``home`` the project's dagster.yaml, or bring an older copy up to date.

    A copy from before a move of the storage module names it by an old path; that one line is
    rewritten in place (atomically), and nothing else in a user's copy is touched.
    """
    target = home / "dagster.yaml"
    if not target.exists():
        if INSTANCE_TEMPLATE.exists():
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy(INSTANCE_TEMPLATE, target)
        return
    text = target.read_text()
    earlier = [line for line in _EARLIER_STORAGE_LINES if line in text]
    if earlier:
        upgraded = text.replace(earlier[0], STORAGE_LINE)
        partial = target.with_suffix(".yaml.partial")
        partial.write_text(upgraded)
        os.replace(partial, target)


def configured_instance(settings: Settings) -> DagsterInstance:
    """The instance under ``DAGSTER_HOME`` (default ``$CODEGEN_HOME/dagster_home``).

    A fresh home gets the project's dagster.yaml; its storage is created under a lock, so
    concurrent first calls (three ``codegen generate`` at once) all succeed.
    """
    from dagster import DagsterInstance

    home = Path(os.environ.get("DAGSTER_HOME") or default_dagster_home(settings))
    with _home_lock(home):
        install_instance_yaml(home)
        os.environ["DAGSTER_HOME"] = str(home)
        # Loading the instance builds its storages, which create their tables.
        return DagsterInstance.get()
