"""Incremental indexing (embed only new chunk ids, delete removed ones) and the Retriever.

Chunk ids hash the chunk's content and the chunker version, so "same id" means "same text":
an id already in the store under the same embedder is never embedded again. A store filled
by a different embedder is reset and everything is re-embedded, because vectors from two
models do not share a space.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.ann import RecallTarget
from codegen.retrieval.embedders import Embedder
from codegen.retrieval.evaluation import queries_from_chunks
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import SEARCH_MODES, Filters, IndexMissingError, VectorStore
from codegen.retrieval.types import SearchHit


@dataclass(frozen=True)
class StoreConfig:
    """Plain values naming a vector store; built by the Dagster/CLI layer from settings."""

    kind: str = "lancedb"  # lancedb | weaviate
    uri: str = ""  # LanceDB path or object-store URI
    weaviate_url: str | None = None
    collection: str = "CodeChunk"
    recall_target: RecallTarget = field(default_factory=RecallTarget)


def open_store(config: StoreConfig) -> VectorStore:
    if config.kind == "lancedb":
        return LanceDBStore(uri=config.uri, recall_target=config.recall_target)
    if config.kind == "weaviate":
        from codegen.retrieval.weaviate_store import WeaviateStore

        if not config.weaviate_url:
            raise ValueError("vector_store is weaviate but no WEAVIATE_URL/weaviate_url is set")
        return WeaviateStore(url=config.weaviate_url, collection=config.collection)
    raise ValueError(f"unknown vector store {config.kind!r}; choose lancedb or weaviate")


# Texts per embedder call when the embedder names no size of its own: a progress line per
# batch on the CPU, and a small bounded amount of memory.
DEFAULT_INDEX_BATCH = 256


@dataclass
class SyncStats:
    total: int = 0
    embedded: int = 0
    deleted: int = 0
    unchanged: int = 0
    reset: bool = False
    embedder: str = ""
    embed_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sync_index(
    chunks: Iterable[Chunk],
    store: VectorStore,
    embedder: Embedder,
    *,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyncStats:
    """Make the store hold exactly ``chunks``, embedding only what it lacks, ``batch_size``
    texts per embedder call (default: the embedder's ``index_batch_size``, else 256)."""
    batch_size = batch_size or getattr(embedder, "index_batch_size", DEFAULT_INDEX_BATCH)
    wanted: dict[str, Chunk] = {}
    for chunk in chunks:
        wanted.setdefault(chunk.id, chunk)  # duplicate ids carry the same text
    stats = SyncStats(total=len(wanted), embedder=embedder.identity)
    if store.embedder_identity() != embedder.identity:
        store.reset(embedder.identity, embedder.dim)
        stats.reset = True
    present = store.ids()
    # Longest first, so that each batch holds texts of about one length (little padding
    # for any embedder that pads a batch to its longest text) and the slowest batches come
    # first in the progress count. Sorted by characters: cheap, and close to token order.
    new_ids = sorted(
        (i for i in wanted if i not in present), key=lambda i: len(wanted[i].text), reverse=True
    )
    stale = present - wanted.keys()
    stats.unchanged = len(wanted) - len(new_ids)

    def report(count: int) -> None:
        """Counts a batch once it is in the store, never before."""
        stats.embedded += count
        if progress:
            progress(stats.embedded, len(new_ids))

    written_count = 0
    started = time.perf_counter()
    # An embedder on a GPU leaves the host's cores idle while it runs: each batch is then
    # written while the next one embeds. On the CPU the writer would take cores from the
    # model's own threads (ONNX Runtime's spin while they wait), so batches go one by one.
    overlap = bool(getattr(embedder, "overlap_writes", False))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-writer") as writer:
        written: Future[None] | None = None
        for start in range(0, len(new_ids), batch_size):
            batch = [wanted[i] for i in new_ids[start : start + batch_size]]
            vectors = embedder.embed_documents([c.text for c in batch])
            if written is not None:
                written.result()  # one batch in flight: memory stays bounded, order kept
                report(written_count)
            written = writer.submit(store.upsert, batch, vectors)
            written_count = len(batch)
            if not overlap:
                written.result()
                report(written_count)
                written = None
        if written is not None:
            written.result()
            report(written_count)
    stats.embed_seconds = round(time.perf_counter() - started, 3)
    if stats.embedded:
        store.record_build(embedder.provenance, stats.embedded)
    stats.deleted = store.delete(sorted(stale))
    if stats.embedded or stats.deleted or stats.reset:

        def calibration_queries() -> np.ndarray:
            # The quality check's own queries (docstring sentences of the indexed functions),
            # embedded only when an ANN index is rebuilt and its probe count calibrated.
            queries = queries_from_chunks(wanted.values(), max_queries=RecallTarget.real_queries)
            if not queries:
                return np.empty((0, embedder.dim), dtype=np.float32)
            return embedder.embed_documents([q.query for q in queries])

        store.refresh(calibration_queries)
    return stats


class IndexRetriever:
    """The ``codegen.retrieval.types.Retriever`` over a store and the embedder that filled it."""

    QUERY_CACHE = 1024  # repeated queries (and one query in several modes) embed once

    def __init__(self, store: VectorStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}

    def prime(self, queries: Sequence[str]) -> None:
        """Embed many queries in one batch (evaluation), far faster than one at a time."""
        todo = [q.strip() for q in queries if q.strip() and q.strip() not in self._vectors]
        todo = list(dict.fromkeys(todo))[: self.QUERY_CACHE]
        if todo:
            for text, vector in zip(todo, self.embedder.embed_documents(todo), strict=True):
                self._remember(text, vector)

    def _remember(self, text: str, vector: np.ndarray) -> None:
        if len(self._vectors) >= self.QUERY_CACHE:
            self._vectors.pop(next(iter(self._vectors)))  # oldest first
        self._vectors[text] = vector

    def query_vector(self, text: str) -> np.ndarray:
        vector = self._vectors.get(text)
        if vector is None:
            vector = self.embedder.embed_query(text)
            self._remember(text, vector)
        return vector

    def search(
        self,
        query: str,
        k: int = 8,
        *,
        source: str | None = None,
        mode: str = "hybrid",
        language: str | None = None,
    ) -> list[SearchHit]:
        if mode not in SEARCH_MODES:
            raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
        query = query.strip()
        if not query:
            return []
        try:
            if self.store.count() == 0:
                return []
        except IndexMissingError:
            return []
        indexed_by = self.store.embedder_identity()
        if indexed_by and indexed_by != self.embedder.identity:
            raise ValueError(
                f"the index was built with {indexed_by} but the configured embedder is "
                f"{self.embedder.identity}; re-materialize the index"
            )
        vector = None if mode == "keyword" else self.query_vector(query)
        return self.store.search(
            query, vector, k, mode=mode, filters=Filters(source=source, language=language)
        )


class LazyRetriever(IndexRetriever):
    """An IndexRetriever that builds its embedder on first use, so that searching a missing
    or empty index (the crew's common case before the corpus is built) loads no model."""

    def __init__(self, store: VectorStore, embedder_factory: Callable[[], Embedder]) -> None:
        self.store = store
        self._factory = embedder_factory
        self._embedder: Embedder | None = None
        self._vectors = {}

    @property  # type: ignore[override]
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._factory()
        return self._embedder
