"""Shared fixtures: an isolated data directory per test and daemon probes for skips.

Postgres: with DAGSTER_POSTGRES_URL set when pytest starts (CI's second pass, over the
``dagster_instance`` tests), every test gets a fresh database on that server as its
DAGSTER_POSTGRES_URL; without it, no test sees the variable and instances are SQLite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import codegen.settings as config
from codegen.orchestration import postgres
from codegen.orchestration.instance import POSTGRES_URL_ENV

# The server the session was pointed at, if any (read before any test changes the variable).
SESSION_POSTGRES_URL = os.environ.get(POSTGRES_URL_ENV)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own CODEGEN_HOME and never reads the developer's config file."""
    home = tmp_path / "codegen_home"
    home.mkdir()
    monkeypatch.setenv("CODEGEN_HOME", str(home))
    monkeypatch.setenv("CODEGEN_ENV", "local")
    monkeypatch.setenv("CODEGEN_CONFIG", str(home / "codegen.toml"))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    (home / "dagster_home").mkdir()
    if SESSION_POSTGRES_URL:
        port = urlsplit(SESSION_POSTGRES_URL).port or 5432
        monkeypatch.setenv(POSTGRES_URL_ENV, fresh_database(port))
    else:
        monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    config.get_settings.cache_clear()
    yield home
    config.get_settings.cache_clear()


def fresh_database(port: int) -> str:
    return postgres.create_database(port, f"test_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def postgres_port() -> Iterator[int]:
    """A PostgreSQL server's port: the session's DAGSTER_POSTGRES_URL, else one started here."""
    if SESSION_POSTGRES_URL:
        yield urlsplit(SESSION_POSTGRES_URL).port or 5432
        return
    try:
        postgres.pg_bin_dir()
    except postgres.PostgresError as exc:
        if os.environ.get("CODEGEN_REQUIRE_POSTGRES"):
            raise
        pytest.skip(str(exc))
    # Outside pytest's private temp tree: the server runs as the postgres user, which must
    # reach its directory.
    base = Path(tempfile.mkdtemp(prefix="codegen-test-postgres-"))
    base.chmod(0o755)
    try:
        url = postgres.start(base / "data")
        yield urlsplit(url).port or 5432
    finally:
        postgres.stop(base / "data")
        shutil.rmtree(base, ignore_errors=True)


def docker_daemon_reason() -> str | None:
    """None when a Docker daemon answers, else why not (shown in the skip reason)."""
    if shutil.which("docker") is None and not os.path.exists("/var/run/docker.sock"):
        return "no docker client or socket on this machine"
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        return f"no Docker daemon answers: {exc}"
    return None


def bwrap_reason() -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(
        [exe, "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.strip()}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    docker_reason = docker_daemon_reason() if any("docker" in i.keywords for i in items) else None
    bwrap_why = bwrap_reason() if any("bwrap" in i.keywords for i in items) else None
    # CI provisions both; there a missing one is a failure, never a quiet skip.
    if docker_reason and os.environ.get("CODEGEN_REQUIRE_DOCKER"):
        raise pytest.UsageError(f"CODEGEN_REQUIRE_DOCKER is set but {docker_reason}")
    if bwrap_why and os.environ.get("CODEGEN_REQUIRE_BWRAP"):
        raise pytest.UsageError(f"CODEGEN_REQUIRE_BWRAP is set but {bwrap_why}")
    for item in items:
        if docker_reason and "docker" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=docker_reason))
        if bwrap_why and "bwrap" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=bwrap_why))
