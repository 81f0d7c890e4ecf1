"""A faiss IVF index (float16 lists, exact rescoring) and the hits' payload, kept beside a
LanceDB table, for the dense leg of large indexes.

Why: at 2M x 384 on 2 cores LanceDB's own ANN query costs ~10 ms whatever it scans (20 ms
p95 at recall 0.98, 11x faster than numpy brute force), while faiss IVF4096,Flat answers in
5 ms p95 at recall 0.999 (44x) on the same vectors and queries; fetching the ten hits' text
back from the LanceDB table then cost another ~60 ms (benchmarks/index_scale.py,
CHANGELOG.md#retrieval). So the sidecar also keeps the columns a hit needs
(``HIT_COLUMNS``) in an Arrow IPC file aligned with the faiss positions and memory-mapped:
position -> hit is a slice of a mapped batch, microseconds, and only the touched pages are read.

LanceDB stays the store of record (ids, text, metadata, BM25); the sidecar answers the dense
leg of every query, filtered ones too: a filter on the payload's source/language columns
becomes a faiss ``IDSelectorBitmap``, so no query scans the table. Any write through the store
deletes the sidecar, and the next refresh rebuilds it, so it can never answer from stale rows.

The probe count is not a constant: the build calibrates it (``calibrate``) against exact search
on a held-out sample of the index's own vectors, plus real queries when the caller has some,
and stores it with the index. A fixed nprobe 16 gave recall@10 0.9985 on one data
distribution and 0.942 (some queries 0.0) on another (issue 23).

The inverted lists hold the vectors as float16 (faiss ``SQfp16``): a probe is a memory-bound
scan, so half the bytes is about 1.6x faster per probe (200k stdlib-chunk vectors, 192 of 410
lists: 7.0 against 11.4 ms p50). The ``RERANK`` x k best candidates are then rescored exactly
from the float32 vectors (a file beside the index, read into memory), so hits carry exact
cosine similarities and the order within the float16 rounding (~1e-4) is the true one.

Which lists a query probes: not simply the nprobe centroids most similar to it, but (issue 23,
third pass: ``ProbeOrder``) those whose best sub-centroid (8 a list) scores highest, similarity
+ ``RADIUS_WEIGHT`` x the sub-centroid's radius. Before that, by the list's own centroid:
the highest similarity + ``RADIUS_WEIGHT`` x the list's radius (its farthest member's distance
from the centroid; x.q <= c.q + |x - c| bounds a member's similarity). A query far from every
vector (a docstring sentence against code) can have its true neighbours as outliers of a list
whose centroid points elsewhere; a wide list is then worth a probe before a tight one of about
the same centroid similarity. 200k stdlib-chunk vectors, 1,788 lists, 200 real queries, same
probe count: 128 lists: recall@10 mean 0.9885 -> 0.9945, min 0.3 -> 0.6; 192: 0.9935 -> 0.9985,
min 0.4 -> 0.7 (weights 0.1 to 0.3 alike).
"""

from __future__ import annotations

import bisect
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from codegen.durable import atomic_write_text, fsync_file
from codegen.retrieval.probe_order import (
    RADIUS_WEIGHT,
    SUBS,
    ProbeOrder,
    list_shape,
    search_preassigned,
)
from codegen.retrieval.stores import (
    HIT_COLUMNS,
    Calibration,
    RecallFigures,
    SidecarMeta,
    hit_from_row,
)
from codegen.retrieval.types import SearchHit

# 2: hit payload in an Arrow file; 3: calibrated nprobe in the meta file; 4: float16 lists,
# exact rescoring from a float32 vectors file, list radii for the probe order; 5: sub-centroids
FORMAT_VERSION = 5
K = 10  # calibration's recall@K, the depth the product and the benchmarks judge
# Probe counts tried in order; the first one that meets the target is kept (nlist caps them).
PROBE_LADDER = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024)
SAME_VECTOR = 1.0 - 1e-5  # cosine at or above this is the query itself (float rounding)
TIE = 1e-5  # a hit this close to the true K-th neighbour's similarity is tied with it
RERANK = 2  # candidates from the float16 scan per hit asked for, rescored exactly


@dataclass(frozen=True)
class RecallTarget:
    """What the calibrated probe count must reach on the calibration queries: mean recall@K and
    every single query's recall@K (settings: [retrieval] ann_recall_mean / ann_recall_min)."""

    mean: float = 0.95
    minimum: float = 0.5
    own_sample: int = 200  # held-out vectors of the index itself
    real_queries: int = 1000  # at most this many of the caller's real query vectors


def nlist_for(rows: int) -> int:
    # ~4 sqrt(n) inverted lists, the usual faiss guidance, bounded for small and huge tables.
    return max(16, min(4096, int(4 * math.sqrt(rows))))


@dataclass(frozen=True)
class Selection:
    """The positions a filter keeps, as the bitmap faiss's IDSelectorBitmap reads."""

    bitmap: np.ndarray  # uint8, little-endian bit order
    kept: int
    rows: int


def recall_at_k(scores: np.ndarray, truth_kth: float) -> float:
    """Share of the K hits (their exact similarities) that are at least as close as the true
    K-th neighbour: a true neighbour, or a vector tied with the K-th one."""
    return min(K, int(np.sum(scores >= truth_kth - TIE))) / K


@dataclass
class FaissSidecar:
    index: Any  # faiss IVF SQfp16 index with inner-product metric over unit vectors
    payload: list[Any]  # pyarrow RecordBatches of HIT_COLUMNS, in faiss position order
    vectors: np.ndarray  # float32 unit vectors in faiss position order, for exact rescoring
    nprobe: int = 16  # the calibrated count read from the meta file, when it has one
    calibration: Calibration | None = None
    radius: np.ndarray | None = None  # per list: its farthest member's distance from the centroid
    # per list, SUBS sub-centroids (absolute) and in the last column each one's radius
    subs: np.ndarray | None = None

    def __post_init__(self) -> None:
        self._starts = [0]
        for batch in self.payload:
            self._starts.append(self._starts[-1] + batch.num_rows)
        self._selections: dict[tuple[tuple[str, str], ...], Selection] = {}
        if self.subs is None:
            self.subs = list_shape(self.index)[1]
        self._order = ProbeOrder(self.index, self.subs)

    @property
    def rows(self) -> int:
        return self._starts[-1]

    @staticmethod
    def paths(directory: Path, name: str) -> tuple[Path, Path, Path, Path, Path]:
        """Index, hit payload, exact vectors, sub-centroids, meta (the meta file last: it
        marks completeness)."""
        return (
            directory / f"{name}.faiss",
            directory / f"{name}.faiss-hits.arrow",
            directory / f"{name}.faiss-vectors.f32",
            directory / f"{name}.faiss-subs.npy",
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
        *,
        target: RecallTarget = RecallTarget(),
        real_queries: np.ndarray | None = None,
    ) -> FaissSidecar:
        """Train on a random sample, then add the table in scan order, batch by batch: each
        batch's vectors go into faiss and its hit columns (a RecordBatch) to the Arrow file,
        so memory holds the faiss index plus one batch rather than further copies of the
        table. Position i in the index is row i of the payload file.

        The same pass computes the calibration queries' exact neighbours (brute force per
        batch, merged in a heap), so calibrating needs no second scan; then ``calibrate``
        picks the probe count, stored in the meta file."""
        import faiss
        import pyarrow as pa

        started = time.perf_counter()
        sample = _unit(training_sample)
        index = faiss.index_factory(
            sample.shape[1], f"IVF{nlist_for(rows)},SQfp16", faiss.METRIC_INNER_PRODUCT
        )
        index.train(sample)
        own = sample[np.random.default_rng(1).permutation(len(sample))[: target.own_sample]]
        real = (
            _unit(real_queries[: target.real_queries])
            if real_queries is not None and len(real_queries)
            else np.empty((0, sample.shape[1]), np.float32)
        )
        queries = np.concatenate([own, real])
        # K + 1 deep: an own-sample query finds itself first, and is scored without itself.
        truth = faiss.ResultHeap(len(queries), K + 1, keep_max=True)
        index_path, payload_path, vectors_path, subs_path, meta_path = cls.paths(directory, name)
        cls.remove(directory, name)
        writer = None
        try:
            with vectors_path.open("wb") as exact:
                for payload, vectors in batches:
                    hit_columns = payload.select(HIT_COLUMNS)
                    if writer is None:
                        writer = pa.ipc.new_file(str(payload_path), hit_columns.schema)
                    unit = _unit(vectors)
                    scores, positions = faiss.knn(
                        queries, unit, min(K + 1, len(unit)), metric=faiss.METRIC_INNER_PRODUCT
                    )
                    truth.add_result(scores, positions + index.ntotal)
                    index.add(unit)
                    exact.write(unit.tobytes())
                    writer.write_batch(hit_columns)
        finally:
            if writer is not None:
                writer.close()
        truth.finalize()
        mapped = _mapped(vectors_path, sample.shape[1])
        radius, subs = list_shape(index)
        nprobe, calibration = calibrate(
            index, mapped, queries, truth.D, len(own), target, ProbeOrder(index, subs)
        )
        calibration["seconds_build_and_calibrate"] = round(time.perf_counter() - started, 1)
        faiss.write_index(index, str(index_path))
        np.save(subs_path, subs)
        # On disk before the marker: after a power cut a meta file never vouches for files
        # whose data was still in the page cache.
        for path in (index_path, payload_path, vectors_path, subs_path):
            fsync_file(path)
        # Written last (whole or not at all): its presence marks a complete sidecar.
        meta = SidecarMeta(
            format=FORMAT_VERSION,
            rows=int(index.ntotal),
            nlist=int(index.nlist),
            nprobe=nprobe,
            calibration=calibration,
            radius_weight=RADIUS_WEIGHT,
            list_radius=[round(float(r), 6) for r in radius],
        )
        atomic_write_text(meta_path, json.dumps(meta))
        # The index in memory, not a second copy read back from disk (1.5 GB at 2M rows).
        loaded = cls.load(directory, name, index=index)
        if loaded is None:
            raise RuntimeError(f"the faiss sidecar just written to {directory} does not load")
        return loaded

    @classmethod
    def read_meta(cls, directory: Path, name: str) -> SidecarMeta | None:
        """The meta file alone (rows, nlist, calibrated nprobe, calibration figures): cheap,
        for status displays that should not load gigabytes of index. A missing, truncated or
        foreign meta file reads as no index (None): the next build replaces it."""
        meta_path = cls.paths(directory, name)[-1]
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable, truncated, not UTF-8
            return None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
            return None
        return cast(SidecarMeta, meta)

    @classmethod
    def load(cls, directory: Path, name: str, *, index: Any = None) -> FaissSidecar | None:
        index_path, payload_path, vectors_path, subs_path, _ = cls.paths(directory, name)
        meta = cls.read_meta(directory, name)
        if meta is None or not _meta_well_formed(meta):
            return None
        import faiss
        import pyarrow as pa

        index = index if index is not None else faiss.read_index(str(index_path))
        reader = pa.ipc.open_file(pa.memory_map(str(payload_path), "r"))
        payload = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        vectors = _mapped(vectors_path, index.d, in_memory=True)
        radius = np.array(meta.get("list_radius", []), dtype=np.float32)
        if len(radius) != index.nlist or meta.get("radius_weight") != RADIUS_WEIGHT:
            return None  # another probe order than the calibration's: rebuild
        subs = np.load(subs_path) if subs_path.exists() else None
        if subs is None or subs.shape != (index.nlist, SUBS, index.d + 1):
            return None
        sidecar = cls(
            index=index,
            payload=payload,
            vectors=vectors,
            nprobe=int(meta["nprobe"]),
            calibration=meta.get("calibration"),
            radius=radius,
            subs=subs,
        )
        rows = meta.get("rows")
        if index.ntotal != sidecar.rows or index.ntotal != rows or len(vectors) != rows:
            return None
        return sidecar

    @classmethod
    def remove(cls, directory: Path, name: str) -> None:
        # Meta first: a reader never sees a marker whose index is already gone.
        for path in reversed(cls.paths(directory, name)):
            path.unlink(missing_ok=True)

    def select(self, equals: dict[str, str]) -> Selection:
        """Positions whose payload columns equal the given values (AND); cached, since a
        filter is usually one of a few sources or languages."""
        import pyarrow as pa
        import pyarrow.compute as pc

        key = tuple(sorted(equals.items()))
        if key not in self._selections:
            parts = []
            for batch in self.payload:
                keep = pa.array(np.ones(batch.num_rows, dtype=bool))
                for column, value in key:
                    keep = pc.and_(keep, pc.equal(batch.column(column), value))
                parts.append(keep.fill_null(False).to_numpy(zero_copy_only=False))
            mask = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
            if len(self._selections) >= 32:
                self._selections.pop(next(iter(self._selections)))
            self._selections[key] = Selection(
                # faiss's bit order: position i is bit i % 8 of byte i // 8
                bitmap=np.packbits(mask, bitorder="little"),
                kept=int(mask.sum()),
                rows=len(mask),
            )
        return self._selections[key]

    def search(
        self,
        vector: np.ndarray,
        k: int,
        *,
        nprobe: int | None = None,
        keep: Selection | None = None,
    ) -> list[tuple[int, float]]:
        """(position, exact cosine similarity), best first; ``keep`` limits the answer to its
        positions, scanned with a faiss IDSelector inside the probed lists.

        A filter probes as many lists as an unfiltered query: the kept rows' nearest
        neighbours lie in the same lists as everyone's, only a little further down (a filter
        keeping half the rows: recall@10 against exact search over those rows as high as
        unfiltered; probing nprobe / share lists, as before, doubled the time for nothing).
        When that still finds fewer than k, every list is probed."""
        import faiss

        probes = min(nprobe or self.nprobe, self.index.nlist)
        query = _unit(vector.reshape(1, -1))
        if keep is None:
            return self._rescored(query, k, probes, None)
        if keep.kept == 0:
            return []
        selector = faiss.IDSelectorBitmap(keep.rows, faiss.swig_ptr(keep.bitmap))
        for probes_now in dict.fromkeys((probes, self.index.nlist)):
            pairs = self._rescored(query, k, probes_now, selector)
            if len(pairs) >= min(k, keep.kept):
                break
        return pairs

    def _rescored(
        self, query: np.ndarray, k: int, probes: int, selector: Any
    ) -> list[tuple[int, float]]:
        """The RERANK * k best of the float16 scan of the probed lists, rescored exactly."""
        lists, coarse = self._order.lists(query, probes)
        positions = search_preassigned(self.index, query, RERANK * k, lists, coarse, selector)
        return _exact_top(self.vectors, query[0], positions[0], k)

    def row(self, position: int) -> dict[str, Any]:
        b = bisect.bisect_right(self._starts, position) - 1
        return self.payload[b].slice(position - self._starts[b], 1).to_pylist()[0]

    def hits(
        self,
        vector: np.ndarray,
        k: int,
        *,
        nprobe: int | None = None,
        keep: Selection | None = None,
    ) -> list[SearchHit]:
        found = self.search(vector, k, nprobe=nprobe, keep=keep)
        return [hit_from_row(self.row(p), score) for p, score in found]


def calibrate(
    index: Any,
    vectors: np.ndarray,
    queries: np.ndarray,
    truth: np.ndarray,
    own: int,
    target: RecallTarget,
    order: ProbeOrder,
) -> tuple[int, Calibration]:
    """One PROBE_LADDER step (capped at nlist) above the smallest probe count whose recall@K
    meets the target on each group of calibration queries (the mean by its 95% lower bound):
    the first ``own`` rows are the index's own vectors (each scored without itself), the rest
    real queries. The step is headroom for the minimum: the worst of 100 calibration queries
    does not bound the worst of the next 200 (2M stdlib chunks: 96 probes met the target, 0.9
    at worst, on the calibration's queries, and left one of the benchmark's 200 at 0.0). A
    query's miss is mostly all or nothing (its ten neighbours share a list), so a minimum over
    Q queries bounds the share of later queries that miss at about 1 / Q: hence up to 1,000
    real queries (``RecallTarget.real_queries``).

    ``truth`` holds each query's exact K + 1 best similarities, best first. Recall counts a
    hit tied with the true K-th neighbour as found, as the benchmark does. The hits are
    rescored from ``vectors``, and the lists probed in the same order (``order``), as
    ``FaissSidecar.search`` does."""

    nlist = int(index.nlist)
    # The true K-th neighbour's similarity: own-sample queries skip themselves.
    kth = np.where(np.arange(len(queries)) < own, truth[:, K], truth[:, K - 1])
    groups = {"own_sample": slice(0, own), "real_queries": slice(own, len(queries))}
    tried: dict[str, dict[str, float]] = {}
    figures: dict[str, RecallFigures] = {}
    chosen, met_at = nlist, None
    ladder = sorted({min(p, nlist) for p in PROBE_LADDER} | {nlist})
    # The probe order is the same at every count: computed once, sliced per count.
    all_lists, all_coarse = order.lists(queries, nlist)
    for nprobe in ladder:
        lists = np.ascontiguousarray(all_lists[:, :nprobe])
        coarse = np.ascontiguousarray(all_coarse[:, :nprobe])
        positions = search_preassigned(index, queries, RERANK * (K + 1), lists, coarse, None)
        recalls = np.empty(len(queries))
        for i in range(len(queries)):
            got = np.array([s for _, s in _exact_top(vectors, queries[i], positions[i], K + 1)])
            if i < own:  # drop the query itself (or an exact copy) once, keep K hits
                same = np.flatnonzero(got >= SAME_VECTOR)
                got = np.delete(got, same[:1]) if len(same) else got
            recalls[i] = recall_at_k(got[:K], float(kth[i]))
        figures = {
            name: RecallFigures(
                queries=len(recalls[part]),
                recall_at_10_mean=round(float(recalls[part].mean()), 4),
                recall_at_10_mean_lower_95=round(_lower_bound(recalls[part]), 4),
                recall_at_10_min=round(float(recalls[part].min()), 2),
            )
            for name, part in groups.items()
            if len(recalls[part])
        }
        tried[str(nprobe)] = {
            f"{name}_{stat}": fig[f"recall_at_10_{stat}"]
            for name, fig in figures.items()
            for stat in ("mean", "min")
        }
        chosen = nprobe
        if met_at is not None:
            break  # the headroom step's figures are the ones stored
        if all(
            fig["recall_at_10_mean_lower_95"] >= target.mean
            and fig["recall_at_10_min"] >= target.minimum
            for fig in figures.values()
        ):
            met_at = nprobe
    return chosen, Calibration(
        target_recall_at_10_mean=target.mean,
        target_recall_at_10_min=target.minimum,
        met_at_nprobe=met_at,
        nprobe=chosen,
        nlist=nlist,
        at_nprobe=figures,
        tried=tried,
    )


def _lower_bound(recalls: np.ndarray) -> float:
    """One-sided 95% lower bound of the mean: the target should hold for queries the
    calibration never saw, not just on its own sample's average."""
    if len(recalls) < 2:
        return float(recalls.mean())
    return float(recalls.mean() - 1.645 * recalls.std(ddof=1) / math.sqrt(len(recalls)))


def _exact_top(
    vectors: np.ndarray, query: np.ndarray, positions: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """The k best of the candidate positions by exact inner product with the unit query."""
    found = np.unique(positions[positions >= 0])  # sorted: the mapped pages in file order
    if not len(found):
        return []
    scores = np.einsum("ij,j->i", vectors[found], query)  # no BLAS (probe_order._nearest)
    best = np.argsort(-scores, kind="stable")[:k]
    return [(int(found[i]), float(scores[i])) for i in best]


def _mapped(path: Path, dim: int, *, in_memory: bool = False) -> np.ndarray:
    """The float32 vectors file, memory-mapped read-only, or read into memory: a query
    rescoring 20 rows of a mapped file that the page cache lost waits on the disk for each
    (2M rows on a busy machine: p50 22 ms for the whole call against 12.5 ms once warm)."""
    rows = path.stat().st_size // (4 * dim) if path.exists() else 0
    if rows == 0:
        return np.zeros((0, dim), dtype=np.float32)
    if in_memory:
        return np.fromfile(path, dtype=np.float32).reshape(rows, dim)
    return np.memmap(path, dtype=np.float32, mode="r", shape=(rows, dim))


def _meta_well_formed(meta: SidecarMeta) -> bool:
    """Whether the fields ``load`` reads have their types (an edited or foreign file: no)."""
    numbers = (meta.get("rows"), meta.get("nprobe"))
    radius = meta.get("list_radius", [])
    return (
        all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
        and isinstance(radius, list)
        and all(isinstance(r, int | float) for r in radius)
    )


def _unit(vectors: np.ndarray) -> np.ndarray:
    import faiss

    out = np.array(vectors, dtype=np.float32, copy=True, order="C")  # normalised in place
    faiss.normalize_L2(out)  # cosine as inner product, matching the store's metric
    return out
