"""The corpus stages' memo: a stage whose inputs (by fingerprint), code version and
parameters are unchanged and whose outputs are still the files it wrote is not run again; its
stats are replayed from ``manifests/<stage>.json`` (``corpus.pipeline``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, TypedDict, TypeVar

from codegen.corpus.store import fingerprint
from codegen.durable import atomic_write_text
from codegen.json_types import JSONObject

if TYPE_CHECKING:
    from dataclasses import Field


def stage_key(*parts: object) -> str:
    """One key for a stage's code version and parameters (or one document's work)."""
    return hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8", "replace")).hexdigest()


class MemoStats(Protocol):
    """A stage's stats dataclass: replayed ones say so."""

    __dataclass_fields__: ClassVar[dict[str, Field[object]]]
    memoized: bool

    def __init__(self) -> None: ...


def manifest_path(corpus_dir: Path, stage: str) -> Path:
    return corpus_dir / "manifests" / f"{stage}.json"


class StageManifest(TypedDict):
    """``manifests/<stage>.json``: what a stage last ran on, and the stats it reported."""

    key: str  # code version and parameters
    outputs: list[str]  # fingerprints of the files it wrote
    stats: JSONObject  # a stats dataclass (``stats_dict``), or the chunk report


def read_manifest(corpus_dir: Path, stage: str) -> JSONObject | None:
    try:
        m = json.loads(manifest_path(corpus_dir, stage).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) else None


def memo_get(corpus_dir: Path, stage: str, key: str, outputs: list[Path]) -> JSONObject | None:
    m = read_manifest(corpus_dir, stage)
    if m is None or m.get("key") != key or m.get("outputs") != [fingerprint(p) for p in outputs]:
        return None
    stats = m.get("stats")
    return stats if isinstance(stats, dict) else None


def memo_put(
    corpus_dir: Path, stage: str, key: str, outputs: list[Path], stats: JSONObject
) -> None:
    data = StageManifest(key=key, outputs=[fingerprint(p) for p in outputs], stats=stats)
    atomic_write_text(manifest_path(corpus_dir, stage), json.dumps(data))


def stats_dict(stats: MemoStats) -> JSONObject:
    # Not dataclasses.asdict: it rebuilds a Counter from (key, value) pairs and miscounts.
    return {
        f.name: dict(v) if isinstance(v := getattr(stats, f.name), Counter) else v
        for f in fields(stats)
    }


Stats = TypeVar("Stats", bound=MemoStats)


def restore_stats(cls: type[Stats], data: JSONObject) -> Stats:
    """Stats replayed from a manifest: the fields it has (Counters rebuilt), defaults for the
    rest (a field added since)."""
    obj = cls()
    for f in fields(cls):
        if f.name in data:
            value = data[f.name]
            setattr(obj, f.name, Counter(value) if "Counter" in str(f.type) else value)
    obj.memoized = True
    return obj
