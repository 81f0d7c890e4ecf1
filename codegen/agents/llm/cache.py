"""The on-disk cache of model replies, keyed by endpoint, model and request, with its hit
counts."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from codegen.durable import atomic_write_text
from codegen.json_types import JSONObject


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1


class ResponseCache:
    """Replies of deterministic (temperature 0) calls, one JSON file per request hash.

    Writes are atomic (temp file + rename) so concurrent processes never read half a file.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.stats = CacheStats()

    @staticmethod
    def key(payload: JSONObject) -> str:
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> JSONObject | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            self.stats.count(False)
            return None
        if not isinstance(data, dict):  # not a reply this cache wrote: a miss
            self.stats.count(False)
            return None
        self.stats.count(True)
        return data

    def put(self, key: str, value: JSONObject) -> None:
        atomic_write_text(self._path(key), json.dumps(value))
