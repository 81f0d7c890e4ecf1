"""An IVF-Flat faiss index kept beside a LanceDB table, for the dense leg of large indexes.

Why: at 2M x 384 on 2 cores LanceDB's own ANN query costs ~10 ms whatever it scans (20 ms
p95 at recall 0.98, 11x faster than numpy brute force), while faiss IVF4096,Flat answers in
5 ms p95 at recall 0.999 (44x) on the same vectors and queries (benchmarks/index_scale.py,
docs/benchmarks.md#retrieval).
LanceDB stays the store of record (ids, text, metadata, BM25, filters); the sidecar only
turns a query vector into ranked chunk ids. Any write through the store deletes the sidecar,
and the next refresh rebuilds it, so it can never answer from stale rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1


def nlist_for(rows: int) -> int:
    # ~4 sqrt(n) inverted lists, the usual faiss guidance, bounded for small and huge tables.
    return max(16, min(4096, int(4 * math.sqrt(rows))))


@dataclass
class FaissSidecar:
    index: Any  # faiss.Index with inner-product metric over unit vectors
    ids: np.ndarray  # row position in the faiss index -> chunk id
    nprobe: int = 16

    @staticmethod
    def paths(directory: Path, name: str) -> tuple[Path, Path, Path]:
        return (
            directory / f"{name}.faiss",
            directory / f"{name}.faiss-ids.npy",
            directory / f"{name}.faiss.json",
        )

    @classmethod
    def build(
        cls,
        rows: int,
        training_sample: np.ndarray,
        batches: Iterable[tuple[list[str], np.ndarray]],
    ) -> FaissSidecar:
        """Train on a random sample, then add the table in scan order, batch by batch, so
        memory holds the faiss index plus one batch rather than further copies of the table.
        Position i in the index is offset i of the table it was built from."""
        import faiss

        sample = _unit(training_sample)
        index = faiss.index_factory(
            sample.shape[1], f"IVF{nlist_for(rows)},Flat", faiss.METRIC_INNER_PRODUCT
        )
        index.train(sample)
        ids: list[str] = []
        for batch_ids, vectors in batches:
            index.add(_unit(vectors))
            ids.extend(batch_ids)
        return cls(index=index, ids=np.asarray(ids, dtype=object))

    def save(self, directory: Path, name: str) -> None:
        import faiss

        index_path, ids_path, meta_path = self.paths(directory, name)
        faiss.write_index(self.index, str(index_path))
        np.save(ids_path, self.ids.astype(str))
        # Written last: its presence marks a complete sidecar.
        meta = {"format": FORMAT_VERSION, "rows": int(self.index.ntotal)}
        meta_path.write_text(json.dumps(meta))

    @classmethod
    def load(cls, directory: Path, name: str) -> FaissSidecar | None:
        index_path, ids_path, meta_path = cls.paths(directory, name)
        if not meta_path.exists():
            return None
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != FORMAT_VERSION:
            return None
        import faiss

        index = faiss.read_index(str(index_path))
        ids = np.load(ids_path, allow_pickle=False)
        if index.ntotal != len(ids) or index.ntotal != meta.get("rows"):
            return None
        return cls(index=index, ids=ids)

    @classmethod
    def remove(cls, directory: Path, name: str) -> None:
        # Meta first: a reader never sees a marker whose index is already gone.
        for path in reversed(cls.paths(directory, name)):
            path.unlink(missing_ok=True)

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, str, float]]:
        """(table offset, chunk id, cosine similarity), best first."""
        self.index.nprobe = self.nprobe
        scores, rows = self.index.search(_unit(vector.reshape(1, -1)), k)
        return [
            (int(r), str(self.ids[r]), float(s))
            for r, s in zip(rows[0], scores[0], strict=True)
            if r >= 0
        ]


def _unit(vectors: np.ndarray) -> np.ndarray:
    import faiss

    out = np.array(vectors, dtype=np.float32, copy=True, order="C")  # normalised in place
    faiss.normalize_L2(out)  # cosine as inner product, matching the store's metric
    return out
