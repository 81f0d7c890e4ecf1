"""A faiss IVF-Flat index and the hits' payload, kept beside a LanceDB table, for the dense leg
of large indexes.

Why: at 2M x 384 on 2 cores LanceDB's own ANN query costs ~10 ms whatever it scans (20 ms
p95 at recall 0.98, 11x faster than numpy brute force), while faiss IVF4096,Flat answers in
5 ms p95 at recall 0.999 (44x) on the same vectors and queries; fetching the ten hits' text
back from the LanceDB table then cost another ~60 ms (benchmarks/index_scale.py,
docs/benchmarks.md#retrieval). So the sidecar also keeps the columns a hit needs
(``HIT_COLUMNS``) in an Arrow IPC file aligned with the faiss positions and memory-mapped:
position -> hit is a slice of a mapped batch, microseconds, and only the touched pages are read.

LanceDB stays the store of record (ids, text, metadata, BM25, filters); the sidecar only
answers unfiltered dense queries. Any write through the store deletes the sidecar, and the
next refresh rebuilds it, so it can never answer from stale rows.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.stores import HIT_COLUMNS, hit_from_row
from codegen.retrieval.types import SearchHit

FORMAT_VERSION = 2  # 2: hit payload in an Arrow file instead of an id array


def nlist_for(rows: int) -> int:
    # ~4 sqrt(n) inverted lists, the usual faiss guidance, bounded for small and huge tables.
    return max(16, min(4096, int(4 * math.sqrt(rows))))


@dataclass
class FaissSidecar:
    index: Any  # faiss.Index with inner-product metric over unit vectors
    payload: list[Any]  # pyarrow RecordBatches of HIT_COLUMNS, in faiss position order
    nprobe: int = 16

    def __post_init__(self) -> None:
        self._starts = [0]
        for batch in self.payload:
            self._starts.append(self._starts[-1] + batch.num_rows)

    @property
    def rows(self) -> int:
        return self._starts[-1]

    @staticmethod
    def paths(directory: Path, name: str) -> tuple[Path, Path, Path]:
        return (
            directory / f"{name}.faiss",
            directory / f"{name}.faiss-hits.arrow",
            directory / f"{name}.faiss.json",
        )

    @classmethod
    def build(
        cls,
        directory: Path,
        name: str,
        rows: int,
        training_sample: np.ndarray,
        batches: Iterable[tuple[Any, np.ndarray]],
    ) -> FaissSidecar:
        """Train on a random sample, then add the table in scan order, batch by batch: each
        batch's vectors go into faiss and its hit columns (a RecordBatch) to the Arrow file,
        so memory holds the faiss index plus one batch rather than further copies of the
        table. Position i in the index is row i of the payload file."""
        import faiss
        import pyarrow as pa

        sample = _unit(training_sample)
        index = faiss.index_factory(
            sample.shape[1], f"IVF{nlist_for(rows)},Flat", faiss.METRIC_INNER_PRODUCT
        )
        index.train(sample)
        index_path, payload_path, meta_path = cls.paths(directory, name)
        cls.remove(directory, name)
        writer = None
        try:
            for payload, vectors in batches:
                hit_columns = payload.select(HIT_COLUMNS)
                if writer is None:
                    writer = pa.ipc.new_file(str(payload_path), hit_columns.schema)
                index.add(_unit(vectors))
                writer.write_batch(hit_columns)
        finally:
            if writer is not None:
                writer.close()
        faiss.write_index(index, str(index_path))
        # Written last: its presence marks a complete sidecar.
        meta_path.write_text(json.dumps({"format": FORMAT_VERSION, "rows": int(index.ntotal)}))
        loaded = cls.load(directory, name)
        if loaded is None:
            raise RuntimeError(f"the faiss sidecar just written to {directory} does not load")
        loaded.index = index  # the one in memory; skip re-reading gigabytes
        return loaded

    @classmethod
    def load(cls, directory: Path, name: str) -> FaissSidecar | None:
        index_path, payload_path, meta_path = cls.paths(directory, name)
        if not meta_path.exists():
            return None
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != FORMAT_VERSION:
            return None
        import faiss
        import pyarrow as pa

        index = faiss.read_index(str(index_path))
        reader = pa.ipc.open_file(pa.memory_map(str(payload_path), "r"))
        payload = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        sidecar = cls(index=index, payload=payload)
        if index.ntotal != sidecar.rows or index.ntotal != meta.get("rows"):
            return None
        return sidecar

    @classmethod
    def remove(cls, directory: Path, name: str) -> None:
        # Meta first: a reader never sees a marker whose index is already gone.
        for path in reversed(cls.paths(directory, name)):
            path.unlink(missing_ok=True)

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(position, cosine similarity), best first."""
        self.index.nprobe = self.nprobe
        scores, positions = self.index.search(_unit(vector.reshape(1, -1)), k)
        return [(int(p), float(s)) for p, s in zip(positions[0], scores[0], strict=True) if p >= 0]

    def row(self, position: int) -> dict[str, Any]:
        b = bisect.bisect_right(self._starts, position) - 1
        return self.payload[b].slice(position - self._starts[b], 1).to_pylist()[0]

    def hits(self, vector: np.ndarray, k: int) -> list[SearchHit]:
        return [hit_from_row(self.row(p), score) for p, score in self.search(vector, k)]


def _unit(vectors: np.ndarray) -> np.ndarray:
    import faiss

    out = np.array(vectors, dtype=np.float32, copy=True, order="C")  # normalised in place
    faiss.normalize_L2(out)  # cosine as inner product, matching the store's metric
    return out
