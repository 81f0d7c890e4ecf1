"""The Weaviate store (weaviate-client v4): the scale-out alternative to embedded LanceDB.

One collection per index; objects carry the chunk id as a property and a deterministic
UUID5 of it, so an upsert of the same id replaces the object. Vectors are ours (no
server-side vectoriser). Weaviate's own BM25 and its hybrid query with RANKED fusion (RRF)
serve keyword and hybrid search; alpha 0.5 weighs both rankings equally, as plain RRF does.
The embedder identity is stored in the collection's description.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.stores import (
    SEARCH_MODES,
    AnnInfo,
    Filters,
    StoreError,
    hit_from_row,
    keyword_text,
)
from codegen.retrieval.types import SearchHit


def connect(url: str) -> Any:
    """A client for ``http(s)://host:port``; gRPC on port 50051 of the same host."""
    import weaviate

    parsed = urlparse(url)
    secure = parsed.scheme == "https"
    host = parsed.hostname or "localhost"
    return weaviate.connect_to_custom(
        http_host=host,
        http_port=parsed.port or (443 if secure else 8080),
        http_secure=secure,
        grpc_host=host,
        grpc_port=50051,
        grpc_secure=secure,
    )


@dataclass
class WeaviateStore:
    url: str
    collection: str = "CodeChunk"
    _client: Any = field(default=None, init=False, repr=False)

    def _conn(self) -> Any:
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _exists(self) -> bool:
        return bool(self._conn().collections.exists(self.collection))

    def _col(self) -> Any:
        return self._conn().collections.get(self.collection)

    def embedder_identity(self) -> str | None:
        if not self._exists():
            return None
        config = self._col().config.get()
        return config.description or None

    def build_record(self) -> dict[str, Any] | None:
        return None  # the collection's description holds the identity only: no record kept

    def record_build(self, provenance: Mapping[str, str], embedded: int) -> None:
        return None

    def reset(self, embedder_identity: str, dim: int) -> None:
        from weaviate.classes.config import Configure, DataType, Property, Tokenization

        client = self._conn()
        if self._exists():
            client.collections.delete(self.collection)
        word = Tokenization.WORD
        client.collections.create(
            self.collection,
            description=embedder_identity,
            vector_config=Configure.Vectors.self_provided(),
            properties=[
                Property(
                    name="chunk_id",
                    data_type=DataType.TEXT,
                    skip_vectorization=True,
                    tokenization=Tokenization.FIELD,
                ),
                Property(name="uri", data_type=DataType.TEXT, index_searchable=False),
                Property(name="start_line", data_type=DataType.INT),
                Property(name="end_line", data_type=DataType.INT),
                Property(name="text", data_type=DataType.TEXT, index_searchable=False),
                Property(name="keywords", data_type=DataType.TEXT, tokenization=word),
                Property(name="source", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="title", data_type=DataType.TEXT, index_searchable=False),
                Property(name="language", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="kind", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="meta_json", data_type=DataType.TEXT, index_searchable=False),
            ],
        )

    def drop(self) -> None:
        if self._exists():
            self._conn().collections.delete(self.collection)
        self.close()

    def count(self) -> int:
        if not self._exists():
            return 0
        return int(self._col().aggregate.over_all(total_count=True).total_count or 0)

    def ids(self) -> set[str]:
        if not self._exists():
            return set()
        return {
            o.properties["chunk_id"] for o in self._col().iterator(return_properties=["chunk_id"])
        }

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        from weaviate.util import generate_uuid5

        if len(chunks) != len(vectors):
            raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        with self._col().batch.fixed_size(batch_size=200) as batch:
            for chunk, vector in zip(chunks, vectors, strict=True):
                batch.add_object(
                    uuid=generate_uuid5(chunk.id),  # same id -> same object: an upsert
                    vector=vector.astype(float).tolist(),
                    properties={
                        "chunk_id": chunk.id,
                        "uri": chunk.uri,
                        "start_line": chunk.start_line,
                        "end_line": chunk.end_line,
                        "text": chunk.text,
                        "keywords": keyword_text(chunk),
                        "source": chunk.source,
                        "title": chunk.title,
                        "language": chunk.language,
                        "kind": chunk.kind,
                        "meta_json": json.dumps(chunk.metadata, default=str),
                    },
                )
        failed = self._col().batch.failed_objects
        if failed:
            raise StoreError(f"Weaviate rejected {len(failed)} objects: {failed[0].message}")

    def delete(self, ids: Iterable[str]) -> int:
        from weaviate.classes.query import Filter

        ids = list(ids)
        if not ids or not self._exists():
            return 0
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            self._col().data.delete_many(where=Filter.by_property("chunk_id").contains_any(batch))
        return len(ids)

    def refresh(self, calibration_queries: Callable[[], np.ndarray] | None = None) -> None:
        """Weaviate indexes on write (HNSW and BM25); nothing to rebuild or calibrate."""

    def ann_info(self) -> AnnInfo | None:
        return None  # Weaviate's HNSW is tuned on the server, not by this client

    def _filters(self, filters: Filters) -> Any:
        from weaviate.classes.query import Filter

        parts = []
        if filters.source is not None:
            parts.append(Filter.by_property("source").equal(filters.source))
        if filters.language is not None:
            parts.append(Filter.by_property("language").equal(filters.language))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Filter.all_of(parts)

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        *,
        mode: str = "hybrid",
        filters: Filters = Filters(),  # noqa: B008
    ) -> list[SearchHit]:
        from weaviate.classes.query import HybridFusion, MetadataQuery

        if mode not in SEARCH_MODES:
            raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
        if not self._exists() or k <= 0:
            return []
        col, where = self._col(), self._filters(filters)
        meta = MetadataQuery(score=True, distance=True)
        if mode == "vector":
            if vector is None:
                raise ValueError("vector search needs a query vector")
            res = col.query.near_vector(
                vector.astype(float).tolist(), limit=k, filters=where, return_metadata=meta
            )
            return [_hit(o, 1.0 - (o.metadata.distance or 0.0)) for o in res.objects]
        if mode == "keyword":
            res = col.query.bm25(
                query, query_properties=["keywords"], limit=k, filters=where, return_metadata=meta
            )
            return [_hit(o, o.metadata.score or 0.0) for o in res.objects]
        if vector is None:
            raise ValueError("hybrid search needs a query vector")
        res = col.query.hybrid(
            query,
            vector=vector.astype(float).tolist(),
            alpha=0.5,
            fusion_type=HybridFusion.RANKED,
            query_properties=["keywords"],
            limit=k,
            filters=where,
            return_metadata=meta,
        )
        return [_hit(o, o.metadata.score or 0.0) for o in res.objects]


def _hit(obj: Any, score: float) -> SearchHit:
    # Same fields as a LanceDB row, under Weaviate's property names.
    p = obj.properties
    return hit_from_row({**p, "id": p["chunk_id"], "metadata": p.get("meta_json")}, score)
