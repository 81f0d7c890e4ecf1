"""Durable request store and per-request artifact folders.

A request's text and options live in SQLite under ``$CODEGEN_HOME/requests/``, keyed by an
opaque id (the Dagster partition key); the text itself is never used as a key. Artifacts go to
``$CODEGEN_HOME/artifacts/<request_id>/``, each file replaced atomically.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from codegen.agents.artifacts import is_request_id, new_request_id
from codegen.agents.options import StoredOptions
from codegen.json_types import JSONObject

# queued: waiting for the sensor to launch it; launched: Dagster holds its run request.
STATES = ("queued", "launched")


# A requests row: id, text, options (JSON), source, state, created_at.
RequestRow = tuple[str, str, str, str, str, str]


# Run tag and metadata key that show a request's first words next to its opaque id (the UI's
# runs and partitions are otherwise listed by ids only).
TITLE_TAG = "codegen/request"


def request_title(text: str, limit: int = 60) -> str:
    """The request's first words on one line, at most ``limit`` characters."""
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    cut = words[: limit - 1].rsplit(" ", 1)[0] if " " in words[: limit - 1] else words[: limit - 1]
    return cut + "…"


@dataclass(frozen=True)
class StoredRequest:
    id: str
    text: str
    options: StoredOptions
    source: str
    state: str
    created_at: str
    # The caller's LLM route (``codegen.agents.llm.endpoint.LLMRoute.to_dict``), set by
    # `codegen generate` only; None: the environment of whichever process runs the request.
    route: JSONObject | None = None


DATABASE = "requests.sqlite"  # under the requests root: requests, review rounds, verdicts

# The one schema of that file; every store kept in it (this one, ``requests.review``) opens it
# through ``requests_db``, so the tables exist whichever store a process touches first.
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, text TEXT NOT NULL,"
    " options TEXT NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,"
    " created_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reviews (request_id TEXT PRIMARY KEY,"
    " review_round INTEGER NOT NULL, status TEXT NOT NULL, since TEXT NOT NULL,"
    " claim TEXT, state BLOB)",
    "CREATE TABLE IF NOT EXISTS verdicts (request_id TEXT NOT NULL,"
    " review_round INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,"
    " reviewer TEXT NOT NULL, decided_at TEXT NOT NULL, claim TEXT NOT NULL,"
    " PRIMARY KEY (request_id, review_round))",
)


def database_path(root: Path) -> Path:
    return Path(root) / DATABASE


@contextmanager
def requests_db(root: Path) -> Iterator[sqlite3.Connection]:
    """One short transaction on the requests database under ``root``, its schema ensured.

    Every store kept in that file (requests, human reviews) opens it here, so all of them
    open, wait on locks and commit the same way."""
    root.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(database_path(root), timeout=30)) as conn:
        for statement in SCHEMA:
            conn.execute(statement)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(requests)")}
        if "route" not in columns:  # a store made before routes were kept
            conn.execute("ALTER TABLE requests ADD COLUMN route TEXT")
        with conn:  # commit on success, roll back on error
            yield conn


class RequestStore:
    """SQLite table of requests; safe for several processes (one short transaction each)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = database_path(self.root)

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return requests_db(self.root)

    def add(
        self,
        text: str,
        options: StoredOptions | None = None,
        *,
        source: str = "cli",
        state: str = "launched",
        request_id: str | None = None,
        route: JSONObject | None = None,
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
            options=StoredOptions(**(options or {})),
            source=source,
            state=state,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            route=dict(route) if route is not None else None,
        )
        with self._db() as conn:
            added = conn.execute(
                "INSERT OR IGNORE INTO requests"
                " (id, text, options, source, state, created_at, route)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    req.id,
                    req.text,
                    json.dumps(req.options),
                    req.source,
                    req.state,
                    req.created_at,
                    json.dumps(req.route) if req.route is not None else None,
                ),
            ).rowcount
        return req if added else self.get(req.id)

    def get(self, request_id: str) -> StoredRequest:
        with self._db() as conn:
            row = conn.execute(
                "SELECT id, text, options, source, state, created_at, route FROM requests"
                " WHERE id = ?",
                (request_id,),
            ).fetchone()
        if row is None:
            raise KeyError(f"unknown request id {request_id!r}")
        return _row(row)

    def with_state(self, state: str) -> list[StoredRequest]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT id, text, options, source, state, created_at, route FROM requests"
                " WHERE state = ? ORDER BY created_at, id",
                (state,),
            ).fetchall()
        return [_row(r) for r in rows]

    def all(self) -> list[StoredRequest]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT id, text, options, source, state, created_at, route FROM requests"
                " ORDER BY created_at, id"
            ).fetchall()
        return [_row(r) for r in rows]

    def set_state(self, request_id: str, state: str) -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        with self._db() as conn:
            conn.execute("UPDATE requests SET state = ? WHERE id = ?", (state, request_id))


def _options(stored: str) -> StoredOptions:
    options = json.loads(stored)
    if not isinstance(options, dict):
        raise ValueError(f"stored request options are not an object: {stored[:80]!r}")
    return cast(StoredOptions, options)  # checked by RequestOptions before it was stored


def _row(row: RequestRow) -> StoredRequest:
    return StoredRequest(
        id=row[0],
        text=row[1],
        options=_options(row[2]),
        source=row[3],
        state=row[4],
        created_at=row[5],
        route=json.loads(row[6]) if row[6] else None,
    )


def artifact_dir(artifacts_root: Path, request_id: str) -> Path:
    if not is_request_id(request_id):
        # Partition keys become folder names: never let one escape the artifacts root.
        raise ValueError(f"not a request id: {request_id!r}")
    return Path(artifacts_root) / request_id
