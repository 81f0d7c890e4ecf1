"""The SQLite storage dagster.yaml picks without DAGSTER_POSTGRES_URL: Dagster's own, over
connections that stay open (codegen/orchestration/instance/storage.py). What must not change
with it: a live run is followed as its events arrive, another process reads what this one
wrote, and a long-lived process does not keep every run's database open."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from dagster import DagsterInstance, job, op

from codegen.orchestration.instance import POSTGRES_URL_ENV, configured_instance
from codegen.orchestration.instance.storage import (
    OPEN_SHARDS,
    SqliteEventLogStorageOpen,
    SqliteRunStorageOpen,
    _engine,
)
from codegen.settings import get_settings


@op
def noop() -> int:
    return 1


@job
def tiny() -> None:
    noop()


@pytest.fixture
def sqlite_instance(monkeypatch: pytest.MonkeyPatch) -> DagsterInstance:
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    instance = configured_instance(get_settings())
    assert isinstance(instance.event_log_storage, SqliteEventLogStorageOpen)
    assert isinstance(instance.run_storage, SqliteRunStorageOpen)
    return instance


def test_a_watcher_sees_each_event_as_it_is_stored(sqlite_instance: DagsterInstance) -> None:
    # How the webserver follows a live run: a file watcher on the run's database.
    run = sqlite_instance.create_run_for_job(tiny)
    seen: list[str] = []
    arrived = threading.Event()

    def on_event(entry: object, _cursor: str) -> None:
        seen.append(entry.dagster_event.message)  # type: ignore[attr-defined]
        arrived.set()

    sqlite_instance.report_engine_event("before watching", run)
    sqlite_instance.watch_event_logs(run.run_id, None, on_event)
    try:
        for i in range(3):
            arrived.clear()
            sqlite_instance.report_engine_event(f"event {i}", run)
            assert arrived.wait(10), f"the watcher never saw event {i}: {seen}"
        deadline = time.monotonic() + 10
        while "event 2" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [m for m in seen if m.startswith("event")] == ["event 0", "event 1", "event 2"], seen
    finally:
        sqlite_instance.end_watch_event_logs(run.run_id, on_event)


def test_another_process_reads_what_this_one_wrote(sqlite_instance: DagsterInstance) -> None:
    result = tiny.execute_in_process(instance=sqlite_instance)
    assert result.success
    written = len(sqlite_instance.all_logs(result.run_id))
    code = (
        "import sys; from dagster import DagsterInstance; i = DagsterInstance.get(); "
        "r = i.get_run_by_id(sys.argv[1]); "
        "print(r.status.value, len(i.all_logs(sys.argv[1])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, result.run_id],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout.split()
    assert out == ["SUCCESS", str(written)]


def test_a_long_lived_process_keeps_a_bounded_set_of_run_databases_open(
    sqlite_instance: DagsterInstance,
) -> None:
    runs = [sqlite_instance.create_run_for_job(tiny) for _ in range(OPEN_SHARDS + 4)]
    for run in runs:
        sqlite_instance.report_engine_event("hello", run)
    storage = sqlite_instance.event_log_storage
    assert isinstance(storage, SqliteEventLogStorageOpen)
    assert len(storage._open_engines._engines) <= OPEN_SHARDS
    # The runs whose connection was closed read back like the others.
    for run in runs:
        logs = sqlite_instance.all_logs(run.run_id)
        assert [e.dagster_event.message for e in logs if e.dagster_event] == ["hello"]


def test_the_databases_stay_in_dagsters_layout(
    sqlite_instance: DagsterInstance, isolated_home: Path
) -> None:
    # Dagster's own tools (`dagster instance migrate`, a stock dagster.yaml) find them.
    run = sqlite_instance.create_run_for_job(tiny)
    sqlite_instance.report_engine_event("hello", run)
    history = isolated_home / "dagster_home" / "storage" / "history"
    assert (history / "runs.db").exists()
    assert (history / "runs" / f"{run.run_id}.db").exists()
    assert (history / "runs" / "index.db").exists()


def test_each_database_is_in_wal_with_dagsters_stamp_and_new_ones_from_the_start(
    sqlite_instance: DagsterInstance, isolated_home: Path, tmp_path: Path
) -> None:
    # Where stock Dagster ends (WAL, alembic head stamped), but a new database is in WAL before
    # its tables are created, so their creation commits without an fsync per statement.
    run = sqlite_instance.create_run_for_job(tiny)
    sqlite_instance.report_engine_event("hello", run)
    history = isolated_home / "dagster_home" / "storage" / "history"
    for path in (
        history / "runs.db",
        history / "runs" / "index.db",
        history / "runs" / f"{run.run_id}.db",
    ):
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",), path
            assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,), path
    with _engine(f"sqlite:///{tmp_path / 'new.db'}").connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
