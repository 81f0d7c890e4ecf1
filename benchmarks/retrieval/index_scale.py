"""2,000,000 x 384 vectors in the LanceDB store: build time, peak memory, query latency and
recall@10 against exact search, with numpy brute force on the same queries as the baseline.
Prints JSON.

Where the vectors come from (``--source``; structure of real embeddings, not uniform noise),
all real all-MiniLM-L6-v2 embeddings:
  quality-index  the quality index's function embeddings (read from the index that
                 benchmarks/retrieval/retrieval_quality.py built, else the same 120-file sample
                 embedded here), 2,240 functions;
  stdlib-chunks  every stdlib function chunk, 14,400;
  for both, vector n is normalise(e_i + lam * e_j + sigma * g), i, j uniform over the real
  embeddings, lam ~ U(0, 0.3), g ~ N(0, I), sigma = 0.01: a real embedding nudged towards
  another plus small Gaussian noise;
  duplicates     20,000 real embeddings (the stdlib functions topped up with functions of its
                 test suites), each copied n / 20,000 times with N(0, 0.001^2) per dimension.
Queries are the real MiniLM embeddings of held-out docstring-sentence queries. Recall@10
counts a hit as close as the true 10th neighbour (a tie) as found.

The index is the store's own (LanceDBStore.build_ann_index: a faiss IVF-Flat sidecar with
its probe count calibrated at build time on its own sample, plus up to 1,000 real docstring
queries disjoint from the benchmark's, and LanceDB's IVF_SQ index) and queries go through
LanceDBStore.search, so the figures are those of the product path: the whole call, query
vector in, hits with text, uri, line span and score out. ``full_search`` is at the stored
(calibrated) probes; filtered (a source filter keeping half the rows) and hybrid queries at
the store defaults.

    .venv/bin/python -m benchmarks.retrieval.index_scale --n 2000000 --source stdlib-chunks
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.vector_sources import DUPLICATE_NOISE, rows, vectors
from codegen.corpus.model import Chunk
from codegen.retrieval.ann import RERANK, K, nlist_for, recall_at_k
from codegen.retrieval.embedders import Embedder, EmbedderConfig, make_embedder
from codegen.retrieval.evaluation import functions_from_file, stdlib_eval_set
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import Filters


def log(msg: str) -> None:
    print(f"[index_scale] {msg}", file=sys.stderr, flush=True)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024  # kB -> GB


SOURCES = ("quality-index", "stdlib-chunks", "duplicates")
QUALITY_FILES = (
    120  # benchmarks/retrieval/retrieval_quality.py --max-files 120: the quality index's set
)
DUPLICATE_BASE = 20_000  # real embeddings behind the duplicates source, each copied n / this


def embedded(chunks: list[Chunk], embedder: Embedder, cache: Path) -> np.ndarray:
    """The chunks' embeddings, cached on disk by chunk id and embedder identity, so that the
    three sources and reruns embed each function once."""
    cache.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(embedder.identity.encode()).hexdigest()[:12]
    path = cache / f"{name}.npz"
    known: dict[str, np.ndarray] = {}
    if path.exists():
        stored = np.load(path)
        known = dict(zip(stored["ids"].tolist(), stored["vectors"], strict=True))
    todo = [c for c in chunks if c.id not in known]
    for start in range(0, len(todo), 1024):  # saved as it goes: an interrupted run resumes
        log(f"embedding chunks {start}..{min(start + 1024, len(todo))} of {len(todo)}")
        part = todo[start : start + 1024]
        vectors = embedder.embed_documents([c.text for c in part])
        known.update(zip((c.id for c in part), vectors, strict=True))
        ids = list(known)
        np.savez(path, ids=np.array(ids), vectors=np.stack([known[i] for i in ids]))
    return np.stack([known[c.id] for c in chunks]).astype(np.float32)


def real_embeddings(
    source: str, quality_index: Path, embedder: Embedder, cache: Path
) -> tuple[np.ndarray, str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if source == "quality-index":
        store = LanceDBStore(uri=str(quality_index))
        if store.exists() and store.embedder_identity() == embedder.identity and store.count():
            table = store._table()
            vecs = table.search().select(["vector"]).limit(table.count_rows()).to_arrow()
            flat = vecs.column("vector").combine_chunks().flatten().to_numpy()
            return flat.reshape(-1, embedder.dim).astype(np.float32), f"read from {quality_index}"
        # The same functions that index holds (retrieval_quality.py's sample), embedded here.
        chunks, _ = stdlib_eval_set(stdlib, max_queries=0, max_files=QUALITY_FILES)
        return embedded(chunks, embedder, cache), (
            f"the quality index's {QUALITY_FILES}-file function sample, embedded here"
        )
    chunks, _ = stdlib_eval_set(stdlib, max_queries=0)
    if source == "stdlib-chunks":
        return embedded(chunks, embedder, cache), "every stdlib function chunk"
    # duplicates: topped up to DUPLICATE_BASE with functions of the stdlib's own test suites
    # (real code, never a query's target: the queries come from the library proper).
    test_files = sorted((stdlib / "test").rglob("*.py"))
    tests = {c.id: c for path in test_files for c, _ in functions_from_file(path, stdlib)}
    known = {c.id for c in chunks}
    extra = [c for i, c in sorted(tests.items()) if i not in known]
    random.Random(0).shuffle(extra)
    chunks = (chunks + extra)[:DUPLICATE_BASE]
    return embedded(chunks, embedder, cache), (
        f"{len(chunks)} real embeddings: every stdlib function chunk, topped up with stdlib "
        "test-suite functions"
    )


def major_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def figures(
    hit_ms: list[float],
    hit_recalls: list[float],
    ids_ms: list[float],
    ids_recalls: list[float],
    p95_brute: float,
) -> dict[str, float]:
    """Recall and latency of the full search (hits with text) and of the ids-only query."""
    p95_hits, p95_ids = float(np.percentile(hit_ms, 95)), float(np.percentile(ids_ms, 95))
    return {
        "recall_at_10_mean": round(float(np.mean(hit_recalls)), 4),
        "recall_at_10_min": round(float(np.min(hit_recalls)), 2),
        "search_hits_ms_p50": round(statistics.median(hit_ms), 2),
        "search_hits_ms_p95": round(p95_hits, 2),
        "speedup_p95_search_hits": round(p95_brute / p95_hits, 1),
        "ids_only_recall_at_10_mean": round(float(np.mean(ids_recalls)), 4),
        "ids_only_ms_p50": round(statistics.median(ids_ms), 2),
        "ids_only_ms_p95": round(p95_ids, 2),
        "speedup_p95_ids_only": round(p95_brute / p95_ids, 1),
    }


def exact_kth(matrix: np.ndarray, q: np.ndarray) -> float:
    """The true 10th neighbour's similarity: a hit at least this close counts (ties too)."""
    scores = matrix @ q
    return float(scores[np.argpartition(-scores, K - 1)[K - 1]])


def full_search(
    store: LanceDBStore, queries: np.ndarray, kths: list[float], p95_brute: float
) -> dict[str, float | int | None]:
    """The whole unfiltered search call at the store's current probes, and the faiss query
    alone (positions and scores, no hits)."""
    sidecar = store._faiss()
    assert sidecar is not None
    for q in queries[:5]:  # warm caches, as a long-running server would be
        store.search("", q, K, mode="vector")
    hit_ms, hit_rec, id_ms, id_rec, faulted = [], [], [], [], []
    for q, kth in zip(queries, kths, strict=True):
        faults = major_faults()
        t0 = time.perf_counter()
        hits = store.search("", q, K, mode="vector")
        hit_ms.append((time.perf_counter() - t0) * 1000)
        faulted.append(major_faults() - faults)
        hit_rec.append(recall_at_k(np.array([h.score for h in hits]), kth))
        t0 = time.perf_counter()
        found = sidecar.search(q, K, nprobe=store.faiss_nprobe)
        id_ms.append((time.perf_counter() - t0) * 1000)
        id_rec.append(recall_at_k(np.array([score for _, score in found]), kth))
    clean = [ms for ms, f in zip(hit_ms, faulted, strict=True) if f == 0]
    return {
        **figures(hit_ms, hit_rec, id_ms, id_rec, p95_brute),
        # Page faults that read the disk (the mapped hit payload) during the full call: the
        # ids-only query right after it finds those pages in memory.
        "search_hits_calls_with_major_faults": sum(f > 0 for f in faulted),
        "search_hits_major_faults": int(sum(faulted)),
        "search_hits_ms_p95_calls_without_faults": (
            round(float(np.percentile(clean, 95)), 2) if clean else None
        ),
    }


def filtered_and_hybrid(
    store: LanceDBStore, matrix: np.ndarray, queries: np.ndarray
) -> dict[str, float]:
    """A source filter keeping half the rows (recall against brute force over those rows) and
    hybrid (BM25 + dense, RRF), through LanceDBStore.search at the store's defaults."""
    # The exact answers first, as full_search's are: a brute force over 1M rows right before
    # each timed query slowed that query, filtered or not (numpy's BLAS threads still
    # spinning against faiss's on 2 cores, the caches flushed; CHANGELOG.md, issue 23's
    # fourth pass).
    even = matrix[0::2]
    kths = [exact_kth(even, q) for q in queries]
    filtered_ms, recalls, hybrid_ms, hybrid_found = [], [], [], []
    only_even = Filters(source="synthetic-even")
    store.search("", queries[0], K, mode="vector", filters=only_even)  # the filter's bitmap
    for n, (q, kth) in enumerate(zip(queries, kths, strict=True)):
        t0 = time.perf_counter()
        hits = store.search("", q, K, mode="vector", filters=only_even)
        filtered_ms.append((time.perf_counter() - t0) * 1000)
        assert all(h.source == "synthetic-even" for h in hits)
        recalls.append(recall_at_k(np.array([h.score for h in hits]), kth))
        t0 = time.perf_counter()
        hits = store.search(f"alpha{n}", q, K, mode="hybrid")
        hybrid_ms.append((time.perf_counter() - t0) * 1000)
        hybrid_found.append(len(hits))
    return {
        "filtered_vector_recall_at_10_mean": round(float(np.mean(recalls)), 4),
        "filtered_vector_recall_at_10_min": round(float(np.min(recalls)), 2),
        "filtered_vector_ms_p50": round(statistics.median(filtered_ms), 2),
        "filtered_vector_ms_p95": round(float(np.percentile(filtered_ms, 95)), 2),
        "hybrid_ms_p50": round(statistics.median(hybrid_ms), 2),
        "hybrid_ms_p95": round(float(np.percentile(hybrid_ms, 95)), 2),
        "hybrid_hits_min": int(min(hybrid_found)),
    }


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--source", choices=SOURCES, default="quality-index")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--calibration-queries",
        type=int,
        default=1000,
        help="real docstring queries (never the benchmark's) for the calibration; 0: none",
    )
    ap.add_argument("--workdir", default=".codegen/bench/index_scale")
    ap.add_argument("--embeddings-cache", default=".codegen/bench/index_scale-embeddings")
    ap.add_argument("--quality-index", default=".codegen/bench/retrieval_quality/index-minilm")
    ap.add_argument("--embedder", default="minilm", help="minilm (ONNX) or minilm-torch")
    ap.add_argument("--model-cache", default=".codegen/bench/retrieval_quality/cache")
    ap.add_argument("--filtered-queries", type=int, default=200)
    ap.add_argument("--block", type=int, default=100_000)
    ap.add_argument("--keep", action="store_true", help="keep the 2M-row table afterwards")
    ap.add_argument("--prepare-only", action="store_true", help="embed the source and stop")
    ap.add_argument(
        "--sweep", nargs="*", default=[], help="LanceDB's own index, nprobes:refine (e.g. 50:5)"
    )
    ap.add_argument("--index-type", default=None, help="override the store default")
    ap.add_argument("--faiss-sweep", nargs="*", type=int, default=[16], help="forced nprobe")
    return ap.parse_args()


def _query_vectors(
    embedder: Embedder, queries: int, calibration_queries: int
) -> tuple[np.ndarray, np.ndarray]:
    """Real docstring queries, embedded: the benchmark's and, disjoint, the calibration's."""
    _, eval_queries = stdlib_eval_set(
        Path(sysconfig.get_paths()["stdlib"]),
        max_queries=queries + calibration_queries,
        seed=7,
    )
    # Disjoint: the benchmark scores the first ones, the calibration sees only the rest.
    query_vectors = embedder.embed_documents([q.query for q in eval_queries])
    return query_vectors[:queries], query_vectors[queries:]


@dataclass
class _Built:
    """The filled store, the exact-baseline matrix, and what building them took."""

    store: LanceDBStore
    matrix: np.ndarray
    ann: dict[str, Any]
    write_s: float
    keyword_s: float
    index_s: float
    load_at_build: list[float]


def _write_rows(
    store: LanceDBStore, source: str, base: np.ndarray, n: int, block: int, dim: int
) -> tuple[np.ndarray, float]:
    """``n`` generated rows written to the store in one streamed add; the same vectors as a
    matrix (for the exact baseline) and the write's seconds."""
    import pyarrow as pa

    table = store._table()
    schema = table.schema
    matrix = np.empty((n, dim), dtype=np.float32)  # for the exact baseline
    t0 = time.perf_counter()
    written = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal written
        offset = 0
        for chunk in vectors(source, base, n, block):
            matrix[offset : offset + len(chunk)] = chunk
            yield rows(chunk, offset, schema)
            offset += len(chunk)
            written = offset
            if offset % 500_000 == 0:
                log(f"generated {offset} rows")

    # One streamed add: a few large fragments rather than one per batch, as a bulk load
    # (or a compaction) leaves them; many small fragments make every lookup slower.
    table.add(pa.RecordBatchReader.from_batches(schema, batches()))
    write_s = time.perf_counter() - t0
    log(f"wrote {written} rows in {write_s:.0f}s; building the indexes")
    return matrix, write_s


def _build(
    args: argparse.Namespace, embedder: Embedder, base: np.ndarray, calibration: np.ndarray
) -> _Built:
    """A fresh store in ``--workdir`` with ``--n`` rows and its indexes, each timed."""
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    store = LanceDBStore(uri=str(workdir / "lance"))
    store.reset(embedder.identity, embedder.dim)
    store.ann_index_type = args.index_type or store.ann_index_type
    matrix, write_s = _write_rows(store, args.source, base, args.n, args.block, embedder.dim)
    # What LanceDBStore.refresh does, timed per index: BM25, then both vector indexes (the
    # faiss sidecar with its calibration, LanceDB's IVF_SQ).
    t0 = time.perf_counter()
    store.build_keyword_index()
    keyword_s = time.perf_counter() - t0
    load_at_build = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    store.build_ann_index(real_queries=calibration if len(calibration) else None)
    index_s = time.perf_counter() - t0
    log(f"BM25 index {keyword_s:.0f}s, vector indexes {index_s:.0f}s")
    ann = store.ann_info()
    assert ann is not None
    log(f"calibrated nprobe {ann['nprobe']}: {ann['calibration']['at_nprobe']}")
    return _Built(store, matrix, ann, write_s, keyword_s, index_s, load_at_build)


def _brute_force(matrix: np.ndarray, queries: np.ndarray) -> tuple[list[float], list[float]]:
    """Exact baseline: numpy brute force, one query at a time (how a query arrives); each
    query's true 10th-neighbour score and milliseconds."""
    kths: list[float] = []
    brute_ms: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        kths.append(exact_kth(matrix, q))
        brute_ms.append((time.perf_counter() - t0) * 1000)
    log(f"brute force p50 {statistics.median(brute_ms):.1f} ms")
    return kths, brute_ms


def _faiss_searches(
    built: _Built,
    n: int,
    nprobes: list[int],
    queries: np.ndarray,
    baseline: tuple[list[float], float],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Full searches through the faiss sidecar at the calibrated probe count and at each
    forced one; ``baseline``: the exact 10th-neighbour scores and the brute force's p95."""
    kths, p95_brute = baseline
    store = built.store
    sidecar = store._faiss()
    assert sidecar is not None
    # Position i of the sidecar is row i of the table (scan order = insertion order here).
    assert all(sidecar.row(p)["id"] == f"v{p:08d}" for p in (0, n // 2, n - 1))
    store.faiss_nprobe = None  # the stored, calibrated probe count
    at_stored = full_search(store, queries, kths, p95_brute)
    log(f"full search at the calibrated nprobe {built.ann['nprobe']}: {at_stored}")
    faiss_sweep = {}
    for nprobe in nprobes:
        store.faiss_nprobe = nprobe
        faiss_sweep[f"faiss_nprobe={nprobe}"] = full_search(store, queries, kths, p95_brute)
        log(f"faiss nprobe {nprobe}: {faiss_sweep[f'faiss_nprobe={nprobe}']}")
    store.faiss_nprobe = None
    return at_stored, faiss_sweep


def _lancedb_sweep(
    store: LanceDBStore, settings: list[str], queries: np.ndarray, kths: list[float]
) -> dict[str, Any]:
    """LanceDB's own index (object-store URIs and the window before a refresh use it), at
    each ``nprobes:refine`` setting."""
    sweep = {}
    if settings:
        store.ann_backend = "lance"
        for q in queries[:5]:
            store.search("", q, K, mode="vector")
    for setting in settings:
        nprobes, refine = (int(x) for x in setting.split(":"))
        store.nprobes, store.refine_factor = nprobes, refine
        index_ms: list[float] = []
        recalls: list[float] = []
        for q, kth in zip(queries, kths, strict=True):
            t0 = time.perf_counter()
            hits = store.search("", q, K, mode="vector")
            index_ms.append((time.perf_counter() - t0) * 1000)
            recalls.append(recall_at_k(np.array([h.score for h in hits]), kth))
        sweep[f"nprobes={nprobes},refine={refine}"] = {
            "recall_at_10_mean": round(float(np.mean(recalls)), 4),
            "recall_at_10_min": round(float(np.min(recalls)), 2),
            "search_hits_ms_p95": round(float(np.percentile(index_ms, 95)), 2),
        }
        log(f"{setting}: {sweep[f'nprobes={nprobes},refine={refine}']}")
    return sweep


def _report(
    args: argparse.Namespace,
    dim: int,
    source: tuple[int, str, int, int],
    built: _Built,
    searched: dict[str, Any],
    brute: tuple[list[float], float],
    clock: tuple[list[float], float],
) -> dict[str, Any]:
    """The JSON printed. ``source``: the real embeddings' count and origin, the benchmark's
    and the calibration's query counts; ``searched``: the full search at the calibrated probe
    count, the faiss sweep, the filtered and hybrid figures and the LanceDB sweep;
    ``brute``: the brute force's milliseconds and p95; ``clock``: the load average at the
    start and when the clock started."""
    base_count, origin, query_count, calibration_count = source
    brute_ms, p95_brute = brute
    load_at_start, started = clock
    return {
        "vectors": args.n,
        "dim": dim,
        "source": args.source,
        "vector_source": (
            f"{base_count} real all-MiniLM-L6-v2 embeddings ({origin}); each vector = "
            + (
                f"e_(r mod {base_count}) + N(0, {DUPLICATE_NOISE}^2 I), normalised"
                if args.source == "duplicates"
                else "normalise(e_i + U(0,0.3)*e_j + N(0, 0.01^2 I))"
            )
        ),
        "queries": query_count,
        "query_source": "real MiniLM embeddings of stdlib docstring first sentences",
        "recall_rule": "recall@10; a hit as close as the true 10th neighbour (ties) counts",
        "probes": built.ann["nprobe"],
        "calibration": {
            **built.ann["calibration"],
            "own_sample": "held-out rows of the index (each scored without itself)",
            "real_queries": (
                f"{calibration_count} docstring-sentence queries disjoint from the benchmark's"
            ),
        },
        "full_search": searched["at_stored"],
        "faiss_sidecar": {
            "type": (
                f"IVF{nlist_for(args.n)},SQfp16 (faiss, inner product on unit vectors; the "
                f"{RERANK} x k best rescored exactly from float32)"
            ),
            "by_forced_nprobe": searched["faiss_sweep"],
        },
        "filtered_and_hybrid": searched["filtered"],
        "filtered_and_hybrid_path": (
            "dense leg: the faiss sidecar (filters as an IDSelectorBitmap); lexical leg: "
            "LanceDB's BM25 index; RRF in process"
        ),
        "lancedb_index_by_nprobes_refine": searched["sweep"],
        "write_seconds": round(built.write_s, 1),
        "keyword_index_seconds": round(built.keyword_s, 1),
        "vector_indexes_seconds": round(built.index_s, 1),
        "vector_indexes_note": "faiss sidecar + calibration + LanceDB IVF_SQ, as main's "
        "index_build_seconds (main built no BM25 index in this script)",
        "build_seconds_total": round(built.write_s + built.keyword_s + built.index_s, 1),
        "baseline": "numpy brute force (exact), same queries, same process",
        "bruteforce_query_ms_p50": round(statistics.median(brute_ms), 2),
        "bruteforce_query_ms_p95": round(p95_brute, 2),
        "peak_rss_gb": round(peak_rss_gb(), 2),
        "peak_rss_note": "whole process: the 3.07 GB numpy matrix for the baseline included",
        "load_average": {
            "start": load_at_start,
            "vector_index_build": built.load_at_build,
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "cpus": os.cpu_count(),
        "total_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    args = _parse_args()
    import pyarrow  # noqa: F401  (loaded before the clock starts)

    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    embedder = make_embedder(EmbedderConfig(name=args.embedder, cache_dir=args.model_cache))
    base, origin = real_embeddings(
        args.source, Path(args.quality_index), embedder, Path(args.embeddings_cache)
    )
    log(f"{len(base)} real embeddings ({origin})")
    queries, calibration = _query_vectors(embedder, args.queries, args.calibration_queries)
    if args.prepare_only:
        return

    built = _build(args, embedder, base, calibration)
    kths, brute_ms = _brute_force(built.matrix, queries)
    p95_brute = float(np.percentile(brute_ms, 95))
    at_stored, faiss_sweep = _faiss_searches(
        built, args.n, args.faiss_sweep, queries, (kths, p95_brute)
    )
    filtered = filtered_and_hybrid(built.store, built.matrix, queries[: args.filtered_queries])
    log(f"filtered and hybrid: {filtered}")
    sweep = _lancedb_sweep(built.store, args.sweep, queries, kths)
    searched = {
        "at_stored": at_stored,
        "faiss_sweep": faiss_sweep,
        "filtered": filtered,
        "sweep": sweep,
    }
    report = _report(
        args,
        embedder.dim,
        (len(base), origin, len(queries), len(calibration)),
        built,
        searched,
        (brute_ms, p95_brute),
        (load_at_start, started),
    )
    print(json.dumps(report, indent=2))
    if not args.keep:
        shutil.rmtree(Path(args.workdir), ignore_errors=True)


if __name__ == "__main__":
    main()
