"""A content-addressed cache of per-document stage results (clean, signature, chunk spans).

Keys are hashes of the input content plus the version of the code that produced the value, so
an entry is never stale: it is either the right answer or never looked up again. Entries are
committed in batches; a killed run loses at most the last batch, which is recomputed to the
same values on the next run.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from codegen.json_types import JSONValue


class StageCache:
    def __init__(self, path: Path, batch: int = 500) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS kv (ns TEXT, key TEXT, value BLOB, PRIMARY KEY (ns, key))"
        )
        self._pending = 0
        self._batch = batch
        self.hits = 0
        self.misses = 0

    def get_bytes(self, ns: str, key: str) -> bytes | None:
        row = self._db.execute("SELECT value FROM kv WHERE ns=? AND key=?", (ns, key)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return bytes(row[0])

    def put_bytes(self, ns: str, key: str, value: bytes) -> None:
        self._db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (ns, key, value))
        self._pending += 1
        if self._pending >= self._batch:
            self.commit()

    def get_json(self, ns: str, key: str) -> JSONValue:
        """The stored value, None when there is none (None itself is never stored)."""
        raw = self.get_bytes(ns, key)
        return None if raw is None else json.loads(raw)

    def put_json(self, ns: str, key: str, value: JSONValue) -> None:
        self.put_bytes(ns, key, json.dumps(value).encode("ascii"))

    def commit(self) -> None:
        self._db.commit()
        self._pending = 0

    def close(self) -> None:
        self.commit()
        self._db.close()

    def __enter__(self) -> StageCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
