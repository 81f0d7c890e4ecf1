"""A local PostgreSQL server for the Dagster instance (``make postgres``, CI, tests).

Debian's ``postgresql`` package provides the binaries; the cluster lives in a directory of
ours (default ``$CODEGEN_HOME/postgres``), listens on 127.0.0.1 only, and runs as the
``postgres`` user when started by root (PostgreSQL refuses to run as root), else as the
calling user. Loopback connections are trusted: this is a developer's or CI's server, not a
production one (point DAGSTER_POSTGRES_URL at a managed server there).

    python -m codegen.orchestration.postgres start [--data DIR] [--port N]   # prints the URL line
    python -m codegen.orchestration.postgres stop [--data DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import pwd
import re
import socket
import subprocess
import sys
from pathlib import Path

from codegen.settings import default_home

SERVER_USER = "postgres"  # Debian's package creates it
DATABASE = "dagster"


class PostgresError(RuntimeError):
    """A one-line reason the local server could not be started or reached."""


def default_data_dir() -> Path:
    return default_home() / "postgres"


def pg_bin_dir() -> Path:
    """The newest installed server's binaries (``PG_BIN`` overrides)."""
    explicit = os.environ.get("PG_BIN")
    candidates = [explicit] if explicit else glob.glob("/usr/lib/postgresql/*/bin")
    found = [Path(c) for c in candidates if c and (Path(c) / "pg_ctl").exists()]
    if not found:
        raise PostgresError(
            "no PostgreSQL server binaries (apt-get install postgresql, or set PG_BIN)"
        )
    return max(found, key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)] or [0])


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise PostgresError(f"running as root but there is no {SERVER_USER!r} user") from exc
    return ["runuser", "-u", SERVER_USER, "--", *command]


def _run(command: list[str]) -> str:
    proc = subprocess.run(_as_server_user(command), capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["(no output)"]
        raise PostgresError(f"{Path(command[0]).name} failed: {lines[-1]}")
    return proc.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def configured_port(data_dir: Path) -> int:
    """The port written into the cluster's config at creation (the last ``port =`` line)."""
    ports = re.findall(r"^port = (\d+)", (data_dir / "postgresql.conf").read_text(), re.M)
    if not ports:
        raise PostgresError(f"{data_dir} has no port in postgresql.conf")
    return int(ports[-1])


def _initdb(data_dir: Path, port: int) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        user = pwd.getpwnam(SERVER_USER)
        os.chown(data_dir, user.pw_uid, user.pw_gid)
    data_dir.chmod(0o700)
    bin_dir = pg_bin_dir()
    _run(
        [
            str(bin_dir / "initdb"),
            "--pgdata",
            str(data_dir),
            "--username",
            SERVER_USER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--no-instructions",
        ]
    )
    settings = (
        "\n# multiagent-codegen (codegen/orchestration/postgres.py)\n"
        "listen_addresses = '127.0.0.1'\n"
        f"port = {port}\n"
        f"unix_socket_directories = '{data_dir}'\n"
        # Each Dagster process keeps a few connections; a burst of runs needs more than 100.
        "max_connections = 300\n"
    )
    with open(data_dir / "postgresql.conf", "a") as conf:
        conf.write(settings)


def url_for(port: int, database: str = DATABASE) -> str:
    return f"postgresql://{SERVER_USER}@127.0.0.1:{port}/{database}"


def is_running(data_dir: Path) -> bool:
    if not (data_dir / "PG_VERSION").exists():
        return False
    command = [str(pg_bin_dir() / "pg_ctl"), "status", "--pgdata", str(data_dir)]
    return subprocess.run(_as_server_user(command), capture_output=True).returncode == 0


def create_database(port: int, name: str) -> str:
    """Create database ``name`` if missing; returns its URL."""
    import psycopg2

    conn = psycopg2.connect(url_for(port, "postgres"))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()
    return url_for(port, name)


def start(data_dir: Path | None = None, port: int | None = None) -> str:
    """Create the cluster on first use, start it unless it runs; returns the database URL."""
    data_dir = (data_dir or default_data_dir()).resolve()
    if not (data_dir / "PG_VERSION").exists():
        _initdb(data_dir, port or _free_port())
    if not is_running(data_dir):
        _run(
            [
                str(pg_bin_dir() / "pg_ctl"),
                "start",
                "--pgdata",
                str(data_dir),
                "--log",
                str(data_dir / "server.log"),
                "--wait",
                "--timeout",
                "60",
            ]
        )
    return create_database(configured_port(data_dir), DATABASE)


def stop(data_dir: Path | None = None) -> None:
    data_dir = (data_dir or default_data_dir()).resolve()
    if is_running(data_dir):
        command = [str(pg_bin_dir() / "pg_ctl"), "stop", "--pgdata", str(data_dir)]
        _run([*command, "--mode", "fast", "--wait"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--data", type=Path, help="cluster directory ($CODEGEN_HOME/postgres)")
    parser.add_argument("--port", type=int, help="port for a new cluster (default: a free one)")
    args = parser.parse_args(argv)
    try:
        if args.action == "stop":
            stop(args.data)
            return 0
        url = start(args.data, args.port)
    except (PostgresError, OSError) as exc:
        print(f"postgres: error: {exc}", file=sys.stderr)
        return 1
    # A shell line, so that `eval "$(make -s postgres)"` sets it.
    print(f"export DAGSTER_POSTGRES_URL={url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
