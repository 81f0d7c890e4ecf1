"""The Dagster instance: Postgres when DAGSTER_POSTGRES_URL is set, else SQLite; first use races.

Three ``codegen generate`` started at once on a fresh home used to crash (``UNIQUE constraint
failed: alembic_version.version_num``): each process created the SQLite storage at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg2
import pytest
import yaml
from dagster import DagsterInstance
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.storage.runs import SqliteRunStorage
from dagster_postgres import PostgresRunStorage

from codegen.orchestration.instance import (
    INSTANCE_TEMPLATE,
    KIND_TAG,
    KINDS,
    POSTGRES_URL_ENV,
    configured_instance,
)
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.settings import get_settings
from tests.conftest import fresh_database

CODEGEN = str(Path(sys.executable).parent / "codegen")
REQUEST = "Write a function primes_up_to(n) that returns all primes <= n (a sieve)."


def three_at_once(server: ScriptedOpenAIServer) -> list[dict[str, object]]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CODEGEN_SANDBOX__POOL_SIZE": "1",
    }
    procs = [
        subprocess.Popen(
            [CODEGEN, "generate", f"{REQUEST} (#{i})", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(3)
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
    reports = [json.loads(out) for out, _ in outputs]
    assert [r["status"] for r in reports] == ["passed"] * 3
    assert len({r["request_id"] for r in reports}) == 3
    return reports


@pytest.mark.dagster_instance
def test_instance_follows_the_environment(
    postgres_port: int, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    sqlite = configured_instance(get_settings())
    assert isinstance(sqlite.run_storage, SqliteRunStorage)
    assert (isolated_home / "dagster_home" / "storage" / "history" / "runs.db").exists()

    monkeypatch.setenv(POSTGRES_URL_ENV, fresh_database(postgres_port))
    pg = configured_instance(get_settings())
    assert isinstance(pg.run_storage, PostgresRunStorage)
    # Run workers get the instance by reference: they make the same choice.
    assert isinstance(DagsterInstance.from_ref(pg.get_ref()).run_storage, PostgresRunStorage)
    # The queue ships with the instance: one limit per kind of work, under a global one.
    assert isinstance(pg.run_coordinator, QueuedRunCoordinator)
    runs = yaml.safe_load(INSTANCE_TEMPLATE.read_text())["concurrency"]["runs"]
    assert runs["max_concurrent_runs"] > 0
    limits = {lim["value"]: lim["limit"] for lim in runs["tag_concurrency_limits"]}
    assert {lim["key"] for lim in runs["tag_concurrency_limits"]} == {KIND_TAG}
    assert set(limits) == set(KINDS)
    assert all(0 < n <= runs["max_concurrent_runs"] for n in limits.values())


def test_info_names_the_instance_storage_without_credentials(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codegen.orchestration.cli import main

    monkeypatch.setenv(POSTGRES_URL_ENV, "postgresql://dagster:s3cret-pw@db.example:6543/runs")
    assert main(["info", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["instance_storage"] == "postgres db.example:6543/runs"
    assert "s3cret-pw" not in out
    monkeypatch.delenv(POSTGRES_URL_ENV)
    assert main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instance_storage"] == "sqlite"


def test_every_job_is_a_kind_of_work_the_queue_limits() -> None:
    from codegen.orchestration.definitions import defs

    kinds = {job.name: defs.resolve_job_def(job.name).tags.get(KIND_TAG) for job in defs.jobs or []}
    assert kinds and all(kind in KINDS for kind in kinds.values()), kinds


@pytest.mark.docker
def test_three_concurrent_requests_on_a_fresh_postgres(
    postgres_port: int, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = fresh_database(postgres_port)
    monkeypatch.setenv(POSTGRES_URL_ENV, url)
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        reports = three_at_once(server)
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SELECT run_id, status FROM runs")
        rows = dict(cur.fetchall())
    assert set(rows) == {r["run_id"] for r in reports}
    assert set(rows.values()) == {"SUCCESS"}
    # Nothing of the instance went to SQLite.
    assert not list((isolated_home / "dagster_home").rglob("*.db"))


@pytest.mark.docker
def test_three_concurrent_requests_on_a_fresh_sqlite_home(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    home = isolated_home / "dagster_home"
    home.rmdir()  # as fresh as a new user's: not even the directory exists
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        reports = three_at_once(server)
    instance = configured_instance(get_settings())
    assert isinstance(instance.run_storage, SqliteRunStorage)
    runs = {r.run_id: r for r in instance.get_runs()}
    assert set(runs) == {r["run_id"] for r in reports}
    assert all(run.is_success for run in runs.values())


@pytest.mark.parametrize(
    "earlier_module",
    [
        "orchestration.storage",  # before the move into the codegen package
        "codegen.orchestration.storage",  # before orchestration/ was cut into rooms
    ],
)
def test_a_home_made_before_a_move_of_the_storage_module_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier_module: str
) -> None:
    # The dagster.yaml such a home holds names the storage module by an earlier path.
    home = tmp_path / "dagster_home"
    home.mkdir()
    old = INSTANCE_TEMPLATE.read_text().replace(
        "module: codegen.orchestration.instance.storage", f"module: {earlier_module}"
    )
    assert f"module: {earlier_module}\n" in old
    (home / "dagster.yaml").write_text(old + "# the user's own line\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    instance = configured_instance(get_settings())
    try:
        assert isinstance(instance.run_storage, SqliteRunStorage)
    finally:
        instance.dispose()
    text = (home / "dagster.yaml").read_text()
    assert (
        "module: codegen.orchestration.instance.storage" in text and "# the user's own line" in text
    )
