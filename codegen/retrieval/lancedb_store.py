"""LanceDB, the embedded default vector store: a local path or an object-store URI.

Store-neutral pieces (protocol, filters, keyword text, fusion, hit mapping) are in
``codegen.retrieval.stores``; the faiss sidecar for large unfiltered dense queries in
``codegen.retrieval.ann``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.ann import FaissSidecar, RecallTarget
from codegen.retrieval.stores import (
    HIT_COLUMNS,
    RRF_K,
    SEARCH_MODES,
    AnnInfo,
    Filters,
    IndexMissingError,
    StoreError,
    hit_from_row,
    keyword_text,
    rrf_fuse,
    sql_quote,
)
from codegen.retrieval.types import SearchHit

_VEC_COLUMNS = [*HIT_COLUMNS, "_distance"]
_FTS_COLUMNS = [*HIT_COLUMNS, "_score"]


@dataclass
class LanceDBStore:
    """LanceDB at a local path or an object-store URI (s3://, gs://, az://).

    Small tables are searched exactly (a flat scan is both exact and fast below ~100k rows).
    At ``ann_min_rows`` and above, ``refresh`` builds LanceDB's IVF index (queries re-rank its
    candidates with the full vectors, ``refine_factor``) and, for a local table, a faiss
    IVF sidecar with a calibrated probe count that answers the dense leg of every query
    (filters become a faiss IDSelector) and returns the hits without touching the table
    (codegen/retrieval/ann.py). Hybrid queries then fuse the sidecar's dense ranking with
    LanceDB's BM25 ranking, run beside it on a worker thread, in process (RRF). Writes drop
    the sidecar until the next refresh; meanwhile, and for object-store URIs, LanceDB's own
    index answers.
    """

    uri: str
    table_name: str = "chunks"
    ann_min_rows: int = 100_000
    nprobes: int = 50  # 2M rows: recall@10 0.96 at 50, 0.90 at 20 (CHANGELOG.md)
    refine_factor: int = 5
    ann_index_type: str = "IVF_SQ"
    ann_max_iterations: int = 20
    # LanceDB's hybrid query + RRFReranker(K=60) scored MRR@10 0.518 on the stdlib eval set
    # against 0.505 for our own fusion of depth-50 lists (CHANGELOG.md#retrieval).
    # "faiss": unfiltered dense queries go to a faiss sidecar beside the table, which also
    # holds the hits' payload (codegen/retrieval/ann.py); "lance" keeps LanceDB's index only.
    # Object-store URIs always use LanceDB's index.
    ann_backend: str = "faiss"
    # None: the probe count calibrated at build time and stored with the sidecar; a number
    # overrides it (benchmarks sweep it).
    faiss_nprobe: int | None = None
    recall_target: RecallTarget = field(default_factory=RecallTarget)
    _db: Any = field(default=None, init=False, repr=False)
    _handle: Any = field(default=None, init=False, repr=False)
    _has_ann: bool | None = field(default=None, init=False, repr=False)
    _identity: str | None = field(default=None, init=False, repr=False)
    _sidecar: FaissSidecar | None = field(default=None, init=False, repr=False)
    _sidecar_checked: bool = field(default=False, init=False, repr=False)
    _lexical_pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    META_TABLE = "index_meta"

    def _connect(self) -> Any:
        if self._db is None:
            # Lance's Rust logger prints deprecation notices on stderr per query; a CLI
            # answer must stay clean. Set before the first import, which reads it.
            os.environ.setdefault("LANCEDB_LOG", "error")
            import lancedb

            self._db = lancedb.connect(self.uri)
        return self._db

    def _table_names(self) -> list[str]:
        db = self._connect()
        result = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
        names = getattr(result, "tables", result)
        return list(names)

    def exists(self) -> bool:
        return self.table_name in self._table_names()

    def _table(self) -> Any:
        # One handle per store: opening (and listing tables) costs more than a query.
        if self._handle is None:
            if not self.exists():
                raise IndexMissingError(f"no index table {self.table_name!r} at {self.uri}")
            self._handle = self._connect().open_table(self.table_name)
        return self._handle

    def _ann(self, table: Any) -> bool:
        if self._has_ann is None:
            self._has_ann = any(tuple(ix.columns) == ("vector",) for ix in table.list_indices())
        return self._has_ann

    def _sidecar_dir(self) -> Path | None:
        if self.ann_backend != "faiss":
            return None
        if "://" in self.uri and not self.uri.startswith("file://"):
            return None
        return Path(self.uri.removeprefix("file://"))

    def _faiss(self) -> FaissSidecar | None:
        directory = self._sidecar_dir()
        if directory is None:
            return None
        if not self._sidecar_checked:
            self._sidecar = FaissSidecar.load(directory, self.table_name)
            self._sidecar_checked = True
        return self._sidecar

    def ann_info(self) -> AnnInfo | None:
        """The sidecar's size, calibrated probe count and calibration figures, read from its
        meta file alone (no index load); None without a sidecar."""
        directory = self._sidecar_dir()
        meta = FaissSidecar.read_meta(directory, self.table_name) if directory else None
        # The per-list radii (thousands of numbers) are the index's, not a figure to show.
        if not meta:
            return None
        return cast(AnnInfo, {k: v for k, v in meta.items() if k != "list_radius"})

    def _drop_sidecar(self) -> None:
        directory = self._sidecar_dir()
        if directory is not None:
            FaissSidecar.remove(directory, self.table_name)
        self._sidecar, self._sidecar_checked = None, True

    def embedder_identity(self) -> str | None:
        # Read once per store, like its table handle, which sees no other process's writes
        # either. Every search checks it, so listing tables and reading the meta table each
        # time cost milliseconds per search, 600 times in a build's quality check. reset()
        # re-reads it.
        if self._identity is None:
            names = self._table_names()
            if self.META_TABLE not in names or self.table_name not in names:
                return None
            rows = self._connect().open_table(self.META_TABLE).to_arrow().to_pylist()
            meta = {r["key"]: r["value"] for r in rows}
            self._identity = meta.get(f"{self.table_name}.embedder")
        return self._identity

    def build_record(self) -> dict[str, Any] | None:
        """How the vectors it holds were made (``record_build``); None when never recorded."""
        names = self._table_names()
        if self.META_TABLE not in names or self.table_name not in names:
            return None
        rows = self._connect().open_table(self.META_TABLE).to_arrow().to_pylist()
        raw = {r["key"]: r["value"] for r in rows}.get(f"{self.table_name}.build")
        try:
            record = json.loads(raw) if raw else None
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def record_build(self, provenance: Mapping[str, str], embedded: int) -> None:
        """Adds ``embedded`` vectors made as ``provenance`` says to the build record: the last
        build's provenance, and how many vectors each kind of build added since the reset."""
        record = self.build_record() or {}
        kind = " ".join(provenance.get(k, "?") for k in ("device", "precision", "runtime"))
        counts = dict(record.get("embedded_by") or {})
        counts[kind] = int(counts.get(kind, 0)) + embedded
        self._write_meta(
            "build", json.dumps({"last": dict(provenance), "embedded_by": counts}, sort_keys=True)
        )

    def _write_meta(self, key: str, value: str) -> None:
        import pyarrow as pa

        db = self._connect()
        meta = pa.table({"key": [f"{self.table_name}.{key}"], "value": [value]})
        if self.META_TABLE in self._table_names():
            table = db.open_table(self.META_TABLE)
            (
                table.merge_insert("key")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(meta)
            )
        else:
            db.create_table(self.META_TABLE, data=meta)

    def _schema(self, dim: int) -> Any:
        import pyarrow as pa

        return pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
                pa.field("text", pa.string()),
                pa.field("keywords", pa.string()),
                pa.field("uri", pa.string()),
                pa.field("title", pa.string()),
                pa.field("source", pa.string()),
                pa.field("language", pa.string()),
                pa.field("kind", pa.string()),
                pa.field("document_id", pa.string()),
                pa.field("start_line", pa.int32()),
                pa.field("end_line", pa.int32()),
                pa.field("metadata", pa.string()),
            ]
        )

    def reset(self, embedder_identity: str, dim: int) -> None:
        db = self._connect()
        self._handle = db.create_table(self.table_name, schema=self._schema(dim), mode="overwrite")
        self._has_ann, self._identity = False, None
        self._drop_sidecar()
        self._write_meta("embedder", embedder_identity)
        self._write_meta("build", "")  # the old vectors' record went with them

    def count(self) -> int:
        if self._handle is None and not self.exists():
            return 0
        return int(self._table().count_rows())

    def ids(self) -> set[str]:
        if not self.exists():
            return set()
        table = self._table()
        n = table.count_rows()
        if n == 0:
            return set()
        rows = table.search().select(["id"]).limit(n).to_arrow()
        return set(rows.column("id").to_pylist())

    def _arrow(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> Any:
        import pyarrow as pa

        dim = vectors.shape[1]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        return pa.table(
            {
                "id": [c.id for c in chunks],
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                "text": [c.text for c in chunks],
                "keywords": [keyword_text(c) for c in chunks],
                "uri": [c.uri for c in chunks],
                "title": [c.title for c in chunks],
                "source": [c.source for c in chunks],
                "language": [c.language for c in chunks],
                "kind": [c.kind for c in chunks],
                "document_id": [c.document_id for c in chunks],
                "start_line": pa.array([c.start_line for c in chunks], pa.int32()),
                "end_line": pa.array([c.end_line for c in chunks], pa.int32()),
                "metadata": [json.dumps(c.metadata, default=str) for c in chunks],
            },
            schema=self._schema(dim),
        )

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not chunks:
            return
        if len(chunks) != len(vectors):
            raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        (
            self._table()
            .merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(self._arrow(chunks, vectors))
        )
        self._drop_sidecar()  # rebuilt by the next refresh; never answers from stale rows

    def delete(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        if not ids or not self.exists():
            return 0
        table = self._table()
        for start in range(0, len(ids), 500):
            batch = ", ".join(f"'{sql_quote(i)}'" for i in ids[start : start + 500])
            table.delete(f"id IN ({batch})")
        self._drop_sidecar()
        return len(ids)

    def refresh(self, calibration_queries: Callable[[], np.ndarray] | None = None) -> None:
        """``calibration_queries``: real query vectors for calibrating the probe count, asked
        for only when the ANN index is (re)built."""
        if not self.exists():
            return
        table = self._table()
        if table.count_rows() == 0:
            return
        self.build_keyword_index(table)
        if table.count_rows() >= self.ann_min_rows and not self._has_fast_ann(table):
            real = calibration_queries() if calibration_queries is not None else None
            self.build_ann_index(table, real_queries=real)

    def build_keyword_index(self, table: Any | None = None) -> None:
        # Native (non-tantivy) BM25 index; rebuilt so new rows are ranked with fresh statistics.
        (table or self._table()).create_fts_index("keywords", replace=True, with_position=False)

    def _has_fast_ann(self, table: Any) -> bool:
        sidecar_ok = self._faiss() is not None if self._sidecar_dir() else True
        return sidecar_ok and self._ann(table)

    @staticmethod
    def partitions_for(rows: int) -> int:
        # ~4k rows per partition, at most 512: k-means training cost grows with the
        # partition count, and nprobes partitions of 4k rows keep a query to a few ms.
        return max(16, min(512, rows // 4096))

    def build_ann_index(
        self, table: Any | None = None, *, real_queries: np.ndarray | None = None
    ) -> None:
        table = table or self._table()
        directory = self._sidecar_dir()
        if directory is not None:
            n, dim = table.count_rows(), table.schema.field("vector").type.list_size

            def vectors_of(batch: Any) -> np.ndarray:
                column = batch.column("vector")  # a Table's is chunked, a RecordBatch's not
                if hasattr(column, "combine_chunks"):
                    column = column.combine_chunks()
                return column.flatten().to_numpy().reshape(-1, dim)

            rng = np.random.default_rng(0)
            offsets = sorted(rng.choice(n, min(200_000, n), replace=False).tolist())
            sample = vectors_of(table.take_offsets(offsets).select(["vector"]).to_arrow())
            scan = table.search().select([*HIT_COLUMNS, "vector"]).limit(None).to_batches(100_000)
            self._sidecar = FaissSidecar.build(
                directory,
                self.table_name,
                n,
                sample,
                ((b, vectors_of(b)) for b in scan),
                target=self.recall_target,
                real_queries=real_queries,
            )
            self._sidecar_checked = True
            # merge_insert and delete match rows by id.
            table.create_scalar_index("id", replace=True)
        # LanceDB's own index still serves filtered and hybrid queries.
        n = table.count_rows()
        dim = table.schema.field("vector").type.list_size
        extra = {"num_sub_vectors": _sub_vectors(dim)} if "PQ" in self.ann_index_type else {}
        table.create_index(
            metric="cosine",
            vector_column_name="vector",
            index_type=self.ann_index_type,
            num_partitions=self.partitions_for(n),
            max_iterations=self.ann_max_iterations,
            replace=True,
            **extra,
        )
        self._has_ann = True

    def _vector_query(self, table: Any, vector: np.ndarray, limit: int, where: str | None) -> Any:
        query = table.search(vector.astype(np.float32), vector_column_name="vector")
        query = query.distance_type("cosine").limit(limit)
        if self._ann(table):
            query = query.nprobes(self.nprobes)
            if self.refine_factor:  # re-rank quantised candidates with the full vectors
                query = query.refine_factor(self.refine_factor)
        if where:
            query = query.where(where, prefilter=True)
        return query

    def _keyword_query(self, table: Any, text: str, limit: int, where: str | None) -> Any:
        query = table.search(text, query_type="fts", fts_columns="keywords").limit(limit)
        if where:
            query = query.where(where, prefilter=True)
        return query

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int,
        *,
        mode: str = "hybrid",
        filters: Filters = Filters(),  # noqa: B008
    ) -> list[SearchHit]:
        if mode not in SEARCH_MODES:
            raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
        if k <= 0:
            return []
        table = self._table()
        where = filters.sql()
        sidecar = self._faiss() if mode != "keyword" else None
        if sidecar is not None:
            keep = sidecar.select(_equalities(filters)) if where else None
            # Hybrid: the BM25 leg runs on a worker thread while this one runs the dense leg
            # (both release the GIL), so the call costs the slower leg, not their sum.
            vector = _need(vector)
            lexical = self._lexical(table, query, k, where) if mode == "hybrid" else None
            dense = sidecar.hits(vector, k, nprobe=self.faiss_nprobe, keep=keep)
            if lexical is None:
                return dense
            return _fused(dense, lexical.result(), k)
        if mode == "vector":
            rows = self._vector_query(table, _need(vector), k, where).select(_VEC_COLUMNS)
            return [hit_from_row(r, 1.0 - r["_distance"]) for r in rows.to_list()]
        if mode == "keyword":
            rows = self._keyword_query(table, query, k, where).select(_FTS_COLUMNS).to_list()
            return [hit_from_row(r, r["_score"]) for r in rows]
        return self._hybrid(table, query, _need(vector), k, where)

    def _lexical(
        self, table: Any, query: str, k: int, where: str | None
    ) -> Future[list[SearchHit]]:
        """LanceDB's BM25 ranking of depth k, started on the store's worker thread."""
        if self._lexical_pool is None:
            self._lexical_pool = ThreadPoolExecutor(4, thread_name_prefix="codegen-bm25")

        def ranked() -> list[SearchHit]:
            if not query.strip():
                return []
            rows = self._keyword_query(table, query, k, where).select(HIT_COLUMNS).to_list()
            return [hit_from_row(r, 0.0) for r in rows]

        return self._lexical_pool.submit(ranked)

    def _hybrid(
        self, table: Any, query: str, vector: np.ndarray, k: int, where: str | None
    ) -> list[SearchHit]:
        from lancedb.rerankers import RRFReranker

        q = (
            table.search(query_type="hybrid", vector_column_name="vector", fts_columns="keywords")
            .vector(vector.astype(np.float32))
            .text(query)
            .distance_type("cosine")
            .rerank(RRFReranker(K=RRF_K))
            .limit(k)
        )
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select(HIT_COLUMNS).to_list()
        return [hit_from_row(r, r["_relevance_score"]) for r in rows]


def _fused(dense: list[SearchHit], lexical: list[SearchHit], k: int) -> list[SearchHit]:
    """Hybrid with the sidecar's dense ranking: the dense and BM25 rankings of the same depth
    fused in process by reciprocal rank, as LanceDB's hybrid query + RRFReranker does."""
    by_id = {h.chunk_id: h for h in [*lexical, *dense]}
    scores = dict(rrf_fuse([[h.chunk_id for h in dense], [h.chunk_id for h in lexical]]))
    # Ties keep the order dense first, then lexical, as LanceDB's stable sort of its merge.
    order = list(dict.fromkeys(h.chunk_id for h in [*dense, *lexical]))
    order.sort(key=lambda i: -scores[i])
    return [dataclasses.replace(by_id[i], score=scores[i]) for i in order[:k]]


def _sub_vectors(dim: int) -> int:
    # 8 dimensions per PQ code book byte keeps the distortion low enough for refine to fix.
    for size in (dim // 8, dim // 4, dim // 2, dim):
        if size and dim % size == 0:
            return size
    return 1


def _equalities(filters: Filters) -> dict[str, str]:
    # The same columns and values as Filters.sql, for the sidecar's payload columns.
    pairs = (("source", filters.source), ("language", filters.language))
    return {column: value for column, value in pairs if value is not None}


def _need(vector: np.ndarray | None) -> np.ndarray:
    if vector is None:
        raise ValueError("vector and hybrid search need a query vector")
    return vector
