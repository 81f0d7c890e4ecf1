"""Durable request store and per-request artifact folders.

A request's text and options live in SQLite under ``$CODEGEN_HOME/requests/``, keyed by an
opaque id (the Dagster partition key); the text itself is never used as a key. Artifacts go to
``$CODEGEN_HOME/artifacts/<request_id>/``, each file replaced atomically.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, cast

from codegen.agents.artifacts import is_request_id, new_request_id

# queued: waiting for the sensor to launch it; launched: Dagster holds its run request.
STATES = ("queued", "launched")


class LimitsOptions(TypedDict, total=False):
    """Sandbox limits a request overrides (``codegen.sandbox.Limits``' fields)."""

    timeout_s: float
    memory_mb: int
    pids: int
    cpus: float
    workdir_mb: int
    max_output_bytes: int


class RequestOptions(TypedDict, total=False):
    """The crew options a request sets, as written in its inbox file or by the CLI (JSON);
    ``CrewOptions.from_dict`` fills in the rest and checks them before a request is stored."""

    max_rounds: int
    candidates: int
    budget_tokens: int | None
    budget_usd: float | None
    context_token_budget: int
    top_k: int
    limits: LimitsOptions | None
    review: str  # one of REVIEW_MODES


# A requests row: id, text, options (JSON), source, state, created_at.
RequestRow = tuple[str, str, str, str, str, str]


@dataclass(frozen=True)
class StoredRequest:
    id: str
    text: str
    options: RequestOptions
    source: str
    state: str
    created_at: str


@contextmanager
def requests_db(root: Path, *schema: str) -> Iterator[sqlite3.Connection]:
    """One short transaction on the requests database under ``root``, its ``schema`` ensured.

    Shared by every store kept in that file (requests, human reviews), so all of them open,
    wait on locks and commit the same way."""
    root.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(root / "requests.sqlite", timeout=30)) as conn:
        for statement in schema:
            conn.execute(statement)
        with conn:  # commit on success, roll back on error
            yield conn


class RequestStore:
    """SQLite table of requests; safe for several processes (one short transaction each)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / "requests.sqlite"

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with requests_db(
            self.root,
            "CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, text TEXT NOT NULL,"
            " options TEXT NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,"
            " created_at TEXT NOT NULL)",
        ) as conn:
            yield conn

    def add(
        self,
        text: str,
        options: RequestOptions | None = None,
        *,
        source: str = "cli",
        state: str = "launched",
        request_id: str | None = None,
    ) -> StoredRequest:
        """Store a new request. With ``request_id`` (chosen by the caller before any other side
        effect, as the inbox does) adding it again is a no-op returning the stored one, so a
        step repeated after a crash never makes a second request."""
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        if request_id is not None and not is_request_id(request_id):
            raise ValueError(f"not a request id: {request_id!r}")
        req = StoredRequest(
            id=request_id or new_request_id(),
            text=text,
            options=RequestOptions(**(options or {})),
            source=source,
            state=state,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._db() as conn:
            added = conn.execute(
                "INSERT OR IGNORE INTO requests VALUES (?, ?, ?, ?, ?, ?)",
                (req.id, req.text, json.dumps(req.options), req.source, req.state, req.created_at),
            ).rowcount
        return req if added else self.get(req.id)

    def get(self, request_id: str) -> StoredRequest:
        with self._db() as conn:
            row = conn.execute(
                "SELECT id, text, options, source, state, created_at FROM requests WHERE id = ?",
                (request_id,),
            ).fetchone()
        if row is None:
            raise KeyError(f"unknown request id {request_id!r}")
        return _row(row)

    def with_state(self, state: str) -> list[StoredRequest]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT id, text, options, source, state, created_at FROM requests"
                " WHERE state = ? ORDER BY created_at, id",
                (state,),
            ).fetchall()
        return [_row(r) for r in rows]

    def all(self) -> list[StoredRequest]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT id, text, options, source, state, created_at FROM requests"
                " ORDER BY created_at, id"
            ).fetchall()
        return [_row(r) for r in rows]

    def set_state(self, request_id: str, state: str) -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        with self._db() as conn:
            conn.execute("UPDATE requests SET state = ? WHERE id = ?", (state, request_id))


def _options(stored: str) -> RequestOptions:
    options = json.loads(stored)
    if not isinstance(options, dict):
        raise ValueError(f"stored request options are not an object: {stored[:80]!r}")
    return cast(RequestOptions, options)  # checked by CrewOptions before it was stored


def _row(row: RequestRow) -> StoredRequest:
    return StoredRequest(
        id=row[0],
        text=row[1],
        options=_options(row[2]),
        source=row[3],
        state=row[4],
        created_at=row[5],
    )


def artifact_dir(artifacts_root: Path, request_id: str) -> Path:
    if not is_request_id(request_id):
        # Partition keys become folder names: never let one escape the artifacts root.
        raise ValueError(f"not a request id: {request_id!r}")
    return Path(artifacts_root) / request_id
