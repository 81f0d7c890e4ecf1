"""dagster.yaml's storage: Postgres when DAGSTER_POSTGRES_URL is set, else SQLite.

See codegen/orchestration/instance/home.py for how every entry point gets this file.

The SQLite storage is Dagster's own, with one change to how it connects. Stock, every event
of a run opens a new SQLite connection, commits with an fsync and closes, which checkpoints
the write-ahead log with more; on the critical path between model calls, that added up to a
good part of a request's overhead (``benchmarks/crew_overhead.py``). Here each database keeps
its connection open and commits with ``synchronous=NORMAL``, SQLite's documented setting for
WAL mode: a committed event survives a crash of the process; a power cut may roll back the
last few, never corrupt the file (https://www.sqlite.org/pragma.html#pragma_synchronous).
Postgres is the choice for anything beyond one machine.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as db
from dagster import EventLogEntry, Field, StringSource

from codegen.orchestration.dagster_private import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    ConfigurableClass,
    ConfigurableClassData,
    DagsterSqliteStorage,
    DagsterStorage,
    SqliteEventLogStorage,
    SqliteRunStorage,
    SqliteScheduleStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from codegen.orchestration.instance.home import postgres_url, sqlalchemy_url
from codegen.settings import default_dagster_home

if TYPE_CHECKING:
    import sqlite3

    from sqlalchemy.pool import ConnectionPoolEntry


class EnvironmentStorage(DagsterStorage, ConfigurableClass):
    """dagster.yaml's ``storage: custom:`` target: Postgres or SQLite by the environment.

    Never instantiated (a DagsterStorage only for the loader's type check):
    ``from_config_value`` returns Dagster's own storage object, with
    this class's config data attached, so instance references re-run the same choice.
    """

    @classmethod
    def config_type(cls) -> dict[str, Field]:
        return {
            "sqlite_base_dir": Field(
                StringSource,
                is_required=False,
                description="SQLite directory; default $DAGSTER_HOME/storage",
            )
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, str]
    ) -> DagsterStorage:
        url = postgres_url()
        if url:
            from dagster_postgres import DagsterPostgresStorage

            storage = DagsterPostgresStorage(postgres_url=sqlalchemy_url(url), inst_data=inst_data)
            return storage  # type: ignore[return-value]
        base_dir = config_value.get("sqlite_base_dir") or str(
            Path(os.environ.get("DAGSTER_HOME") or default_dagster_home()) / "storage"
        )
        return SqliteStorage.from_local(base_dir, inst_data=inst_data)


# Event-log shards (one database per run) whose connection stays open: enough for the runs a
# process works on at once, few enough for a webserver reading thousands of runs.
OPEN_SHARDS = 16


def _engine(conn_string: str) -> db.Engine:
    """An engine whose connections stay open between uses and commit without an fsync."""
    engine = db.create_engine(
        conn_string,
        pool_size=1,
        max_overflow=4,  # schema checks open a second connection while the first is out
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )

    @db.event.listens_for(engine, "connect")
    def _tune(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        if dbapi_connection.execute("PRAGMA page_count").fetchone()[0] == 0:
            # A new database (each run's event-log shard): Dagster creates its tables, then
            # switches it to WAL. In WAL from the start, the dozens of CREATE statements commit
            # without an fsync each (0.1-0.3 s per run before the first step, on a quiet disk).
            dbapi_connection.execute("PRAGMA journal_mode=WAL")

    return engine


class _Engines:
    """This process's open engines by database, least recently used closed first.

    Keyed by process: a forked child opens its own instead of sharing its parent's files.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pid = os.getpid()
        self._engines: OrderedDict[str, db.Engine] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conn_string: str) -> db.Engine:
        with self._lock:
            if self._pid != os.getpid():
                self._engines.clear()  # the parent's: never closed here, never reused
                self._pid = os.getpid()
            engine = self._engines.get(conn_string)
            if engine is None:
                engine = self._engines[conn_string] = _engine(conn_string)
                if len(self._engines) > self.limit:
                    _, oldest = self._engines.popitem(last=False)
                    oldest.dispose()
            self._engines.move_to_end(conn_string)
            return engine

    def dispose(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


class SqliteEventLogStorageOpen(SqliteEventLogStorage):
    """Dagster's SQLite event log over connections that stay open (see the module docstring).

    Dagster's webserver follows a live run by watching its database file for changes, and a
    commit that stays in the write-ahead log leaves the file as it was: after each event the
    file's timestamp is touched, which the watcher sees as a change.
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._open_engines = _Engines(OPEN_SHARDS)
        self._tables_present: set[str] = set()
        super().__init__(base_dir, inst_data)

    def has_table(self, table_name: str) -> bool:
        # Stock, each call builds an engine and a connection, and Dagster asks whether the
        # dynamic partitions table exists for every input a partitioned step loads (19 per
        # request). A table once there stays (migrations add tables, never drop them).
        if table_name in self._tables_present:
            return True
        # Not through _connect: Dagster calls this while storing an event, inside _db_lock.
        engine = self._open_engines.get(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            present = bool(conn.dialect.has_table(conn, table_name))
        if present:
            self._tables_present.add(table_name)
        return present

    @contextmanager
    def _connect(self, shard: str) -> Iterator[db.Connection]:
        with self._db_lock:
            engine = self._open_engines.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def store_event(self, event: EventLogEntry) -> None:
        super().store_event(event)
        if event.run_id:
            # Only after writes: a touch on a read would wake the watcher that is reading.
            os.utime(self.path_for_shard(event.run_id))

    def dispose(self) -> None:
        super().dispose()
        self._open_engines.dispose()


class SqliteRunStorageOpen(SqliteRunStorage):
    """Dagster's SQLite run storage over a connection that stays open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._open_engines = _Engines(1)

    @contextmanager
    def connect(self) -> Iterator[db.Connection]:
        with self._open_engines.get(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._open_engines.dispose()


class SqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage with the run and event-log storages above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        # DagsterSqliteStorage.__init__ with the two classes swapped (it takes no classes).
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorageOpen.from_local(_runs_directory(base_dir))
        self._event_log_storage = SqliteEventLogStorageOpen(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)
