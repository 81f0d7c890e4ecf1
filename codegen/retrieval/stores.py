"""What every vector store shares: the protocol, filters, keyword text, fusion, hit mapping.

The stores themselves live beside this module: LanceDB (embedded default,
``codegen.retrieval.lancedb_store``) and Weaviate (``codegen.retrieval.weaviate_store``). Both keep
one row per
chunk id with its vector and citation fields, and offer vector, keyword (BM25) and hybrid
(reciprocal rank fusion) search with source/language filters. A store also remembers which
embedder filled it, so the index can tell when a change of embedder means re-embedding
everything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.types import SearchHit

SEARCH_MODES = ("hybrid", "vector", "keyword")
RRF_K = 60  # the constant from Cormack et al. (2009), also LanceDB's and Weaviate's default


class RecallFigures(TypedDict):
    """One group of calibration queries at the chosen probe count."""

    queries: int
    recall_at_10_mean: float
    recall_at_10_mean_lower_95: float
    recall_at_10_min: float


class Calibration(TypedDict, total=False):
    """How an approximate index's probe count was chosen (``ann.calibrate``)."""

    target_recall_at_10_mean: float
    target_recall_at_10_min: float
    met_at_nprobe: int | None  # None: no count met the target; every list is probed
    nprobe: int
    nlist: int
    at_nprobe: dict[str, RecallFigures]  # "own_sample", "real_queries"
    tried: dict[str, dict[str, float]]  # probe count -> "<group>_mean", "<group>_min"
    seconds_build_and_calibrate: float


class AnnInfo(TypedDict, total=False):
    """An approximate index's size, calibrated probe count and calibration figures."""

    format: int
    rows: int
    nlist: int
    nprobe: int
    calibration: Calibration
    radius_weight: float


class SidecarMeta(AnnInfo, total=False):
    """A faiss sidecar's meta file (``ann.FaissSidecar``): ``AnnInfo`` and the per-list radii
    its probe order needs."""

    list_radius: list[float]


class IndexMissingError(RuntimeError):
    """There is no index at the configured location yet."""


class StoreError(RuntimeError):
    """The store rejected an operation."""


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def keyword_text(chunk: Chunk) -> str:
    """What BM25 sees: the text plus its identifiers split into words.

    Queries are English ("read lines from a file") while code says ``readLines`` or
    ``read_lines``; splitting identifiers lets the two meet.
    """
    words: set[str] = set()
    for ident in _IDENT.findall(chunk.text):
        parts = [p for p in _CAMEL.sub("_", ident).split("_") if p]
        if len(parts) > 1:
            words.update(p.lower() for p in parts)
    return f"{chunk.title}\n{chunk.text}\n{' '.join(sorted(words))}"


def rrf_fuse(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class Filters:
    source: str | None = None
    language: str | None = None

    def sql(self) -> str | None:
        parts = []
        for column, value in (("source", self.source), ("language", self.language)):
            if value is not None:
                parts.append(f"{column} = '{sql_quote(value)}'")
        return " AND ".join(parts) or None


def sql_quote(value: str) -> str:
    return value.replace("'", "''")


class VectorStore(Protocol):
    def embedder_identity(self) -> str | None:
        """Identity of the embedder whose vectors the store holds; None when empty/new."""
        ...

    def reset(self, embedder_identity: str, dim: int) -> None:
        """Drop every row and start over for this embedder."""
        ...

    def build_record(self) -> dict[str, Any] | None:
        """How its vectors were made (last build's provenance, vectors per kind of build);
        None when the store keeps no record."""
        ...

    def record_build(self, provenance: Mapping[str, str], embedded: int) -> None: ...

    def ids(self) -> set[str]: ...

    def count(self) -> int: ...

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def delete(self, ids: Iterable[str]) -> int: ...

    def refresh(self, calibration_queries: Callable[[], np.ndarray] | None = None) -> None:
        """Bring search structures (keyword index, ANN index) up to date after writes;
        ``calibration_queries`` gives real query vectors when an ANN index is calibrated."""
        ...

    def ann_info(self) -> AnnInfo | None:
        """The approximate index's size and calibrated probe count; None when there is none."""
        ...

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        *,
        mode: str = "hybrid",
        filters: Filters = Filters(),
    ) -> list[SearchHit]: ...


def hit_from_row(row: dict[str, Any], score: float) -> SearchHit:
    try:
        metadata = json.loads(row.get("metadata") or "{}")
    except ValueError:
        metadata = {}
    return SearchHit(
        chunk_id=row["id"],
        uri=row["uri"],
        start_line=int(row["start_line"]),
        end_line=int(row["end_line"]),
        score=float(score),
        text=row["text"],
        source=row["source"],
        title=row["title"],
        metadata={**metadata, "language": row["language"], "kind": row["kind"]},
    )


# The columns hit_from_row reads: what a store must return for a hit.
HIT_COLUMNS = [
    "id",
    "uri",
    "start_line",
    "end_line",
    "text",
    "source",
    "title",
    "language",
    "kind",
    "metadata",
]
