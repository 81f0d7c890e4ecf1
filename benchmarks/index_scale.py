"""2,000,000 x 384 vectors in the LanceDB store: build time, peak memory, query latency and
recall@10 against exact search, with numpy brute force on the same queries as the baseline.
Prints JSON.

Where the vectors come from (structure of real embeddings, not uniform noise): the real
all-MiniLM-L6-v2 embeddings of every stdlib function chunk (read from the index that
benchmarks/retrieval_quality.py built, else embedded here). Vector n is
    normalise(e_i + lam * e_j + sigma * g),  i, j uniform over the real embeddings,
    lam ~ U(0, 0.3), g ~ N(0, I), sigma = 0.01 per dimension,
i.e. a real embedding nudged towards another real one plus small Gaussian noise. Queries are
the real MiniLM embeddings of held-out docstring-sentence queries.

The index is the store's own (LanceDBStore.build_ann_index: a faiss IVF-Flat sidecar, with
the hits' payload beside it, for unfiltered dense queries plus LanceDB's IVF_SQ index for
filtered and hybrid ones) and queries go through LanceDBStore.search, so the figures are
those of the product path: the whole call, query vector in, hits with text, uri, line span
and score out. Both indexes are swept (faiss nprobe; LanceDB nprobes/refine_factor), and
filtered and hybrid queries are timed at the store defaults.

    .venv/bin/python benchmarks/index_scale.py --n 2000000
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from codegen.retrieval.ann import nlist_for
from codegen.retrieval.embedders import Embedder, EmbedderConfig, make_embedder
from codegen.retrieval.evaluation import stdlib_eval_set
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import Filters


def log(msg: str) -> None:
    print(f"[index_scale] {msg}", file=sys.stderr, flush=True)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024  # kB -> GB


def real_embeddings(quality_index: Path, embedder: Embedder) -> tuple[np.ndarray, str]:
    store = LanceDBStore(uri=str(quality_index))
    if store.exists() and store.embedder_identity() == embedder.identity and store.count():
        table = store._table()
        vecs = table.search().select(["vector"]).limit(table.count_rows()).to_arrow()
        flat = vecs.column("vector").combine_chunks().flatten().to_numpy()
        return flat.reshape(-1, embedder.dim).astype(np.float32), f"read from {quality_index}"
    chunks, _ = stdlib_eval_set(Path(sysconfig.get_paths()["stdlib"]), max_queries=0)
    return embedder.embed_documents([c.text for c in chunks]), "embedded here"


def synthesise(base: np.ndarray, n: int, seed: int, block: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    for start in range(0, n, block):
        m = min(block, n - start)
        i = rng.integers(0, len(base), m)
        j = rng.integers(0, len(base), m)
        lam = rng.uniform(0.0, 0.3, (m, 1)).astype(np.float32)
        v = base[i] + lam * base[j]
        v += rng.standard_normal(v.shape, dtype=np.float32) * 0.01
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        yield v.astype(np.float32)


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


def filtered_and_hybrid(
    store: LanceDBStore, matrix: np.ndarray, queries: np.ndarray
) -> dict[str, float]:
    """Queries the sidecar cannot answer, at the store's defaults: a source filter (half the
    rows; recall against brute force over those rows) and hybrid (BM25 + dense, RRF)."""
    even = np.arange(0, len(matrix), 2)
    filtered_ms, recalls, hybrid_ms, hybrid_found = [], [], [], []
    only_even = Filters(source="synthetic-even")
    for n, q in enumerate(queries):
        truth = {f"v{int(even[r]):08d}" for r in np.argpartition(-(matrix[even] @ q), 10)[:10]}
        t0 = time.perf_counter()
        hits = store.search("", q, 10, mode="vector", filters=only_even)
        filtered_ms.append((time.perf_counter() - t0) * 1000)
        assert all(h.source == "synthetic-even" for h in hits)
        recalls.append(len(truth & {h.chunk_id for h in hits}) / 10)
        t0 = time.perf_counter()
        hits = store.search(f"alpha{n}", q, 10, mode="hybrid")
        hybrid_ms.append((time.perf_counter() - t0) * 1000)
        hybrid_found.append(len(hits))
    return {
        "filtered_vector_recall_at_10_mean": round(float(np.mean(recalls)), 4),
        "filtered_vector_ms_p50": round(statistics.median(filtered_ms), 2),
        "filtered_vector_ms_p95": round(float(np.percentile(filtered_ms, 95)), 2),
        "hybrid_ms_p50": round(statistics.median(hybrid_ms), 2),
        "hybrid_ms_p95": round(float(np.percentile(hybrid_ms, 95)), 2),
        "hybrid_hits_min": int(min(hybrid_found)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workdir", default=".codegen/bench/index_scale")
    ap.add_argument("--quality-index", default=".codegen/bench/retrieval_quality/index-minilm")
    ap.add_argument("--embedder", default="minilm", help="minilm (ONNX) or minilm-torch")
    ap.add_argument("--model-cache", default=".codegen/bench/retrieval_quality/cache")
    ap.add_argument("--filtered-queries", type=int, default=50)
    ap.add_argument("--block", type=int, default=100_000)
    ap.add_argument("--keep", action="store_true", help="keep the 2M-row table afterwards")
    ap.add_argument(
        "--sweep", nargs="+", default=["20:5", "50:5", "20:0", "50:0"], help="nprobes:refine"
    )
    ap.add_argument("--index-type", default=None, help="override the store default")
    ap.add_argument("--faiss-sweep", nargs="+", type=int, default=[8, 16, 32], help="nprobe")
    args = ap.parse_args()
    import pyarrow as pa

    started = time.perf_counter()
    embedder = make_embedder(EmbedderConfig(name=args.embedder, cache_dir=args.model_cache))
    base, origin = real_embeddings(Path(args.quality_index), embedder)
    log(f"{len(base)} real embeddings ({origin})")
    _, eval_queries = stdlib_eval_set(
        Path(sysconfig.get_paths()["stdlib"]), max_queries=args.queries, seed=7
    )
    queries = embedder.embed_documents([q.query for q in eval_queries])

    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    store = LanceDBStore(uri=str(workdir / "lance"))
    store.reset(embedder.identity, embedder.dim)
    store.ann_index_type = args.index_type or store.ann_index_type
    table = store._table()
    schema = table.schema
    matrix = np.empty((args.n, embedder.dim), dtype=np.float32)  # for the exact baseline
    t0 = time.perf_counter()
    written = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal written
        offset = 0
        for block in synthesise(base, args.n, seed=0, block=args.block):
            m = len(block)
            matrix[offset : offset + m] = block
            ids = [f"v{offset + r:08d}" for r in range(m)]
            empty = [""] * m
            # Two sources (a filter keeps half the rows) and a few words for BM25, so that
            # filtered and hybrid queries have something to do at this scale.
            keywords = [f"alpha{(offset + r) % 997} beta{(offset + r) % 1009}" for r in range(m)]
            sources = [
                "synthetic-even" if (offset + r) % 2 == 0 else "synthetic-odd" for r in range(m)
            ]
            yield pa.record_batch(
                {
                    "id": ids,
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), 384),
                    "text": empty,
                    "keywords": keywords,
                    "uri": [f"synthetic://{i}" for i in ids],
                    "title": empty,
                    "source": sources,
                    "language": ["python"] * m,
                    "kind": ["function"] * m,
                    "document_id": empty,
                    "start_line": pa.array(np.ones(m, dtype=np.int32)),
                    "end_line": pa.array(np.ones(m, dtype=np.int32)),
                    "metadata": ["{}"] * m,
                },
                schema=schema,
            )
            offset += m
            written = offset
            if offset % 500_000 == 0:
                log(f"generated {offset} rows")

    # One streamed add: a few large fragments rather than one per batch, as a bulk load
    # (or a compaction) leaves them; many small fragments make every lookup slower.
    table.add(pa.RecordBatchReader.from_batches(schema, batches()))
    offset = written
    write_s = time.perf_counter() - t0
    log(f"wrote {offset} rows in {write_s:.0f}s; building the ANN index")
    t0 = time.perf_counter()
    store.build_ann_index()
    index_s = time.perf_counter() - t0
    log(f"index built in {index_s:.0f}s")

    # Exact baseline: numpy brute force, one query at a time (how a query arrives).
    exact: list[set[str]] = []
    brute_ms: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        scores = matrix @ q
        top = np.argpartition(-scores, 10)[:10]
        brute_ms.append((time.perf_counter() - t0) * 1000)
        exact.append({f"v{int(r):08d}" for r in top})
    log(f"brute force p50 {statistics.median(brute_ms):.1f} ms")

    p95_brute = float(np.percentile(brute_ms, 95))
    # The faiss sidecar (the store's default dense path for unfiltered queries).
    faiss_sweep = {}
    sidecar = store._faiss()
    # Position i of the sidecar is row i of the table (scan order = insertion order here),
    # so the ids-only query's positions compare with brute force's row numbers directly.
    assert all(sidecar.row(p)["id"] == f"v{p:08d}" for p in (0, args.n // 2, args.n - 1))
    for nprobe in args.faiss_sweep:
        store.faiss_nprobe = nprobe
        for q in queries[:5]:
            store.search("", q, 10, mode="vector")
        hit_ms, hit_rec, id_ms, id_rec = [], [], [], []
        for q, truth in zip(queries, exact, strict=True):
            t0 = time.perf_counter()
            hits = store.search("", q, 10, mode="vector")
            hit_ms.append((time.perf_counter() - t0) * 1000)
            hit_rec.append(len(truth & {h.chunk_id for h in hits}) / 10)
            t0 = time.perf_counter()
            got = {f"v{p:08d}" for p, _ in sidecar.search(q, 10)}
            id_ms.append((time.perf_counter() - t0) * 1000)
            id_rec.append(len(truth & got) / 10)
        faiss_sweep[f"faiss_nprobe={nprobe}"] = figures(hit_ms, hit_rec, id_ms, id_rec, p95_brute)
        log(f"faiss nprobe {nprobe}: {faiss_sweep[f'faiss_nprobe={nprobe}']}")

    store.faiss_nprobe = LanceDBStore.faiss_nprobe
    through_lance = filtered_and_hybrid(store, matrix, queries[: args.filtered_queries])
    log(f"filtered and hybrid through LanceDB: {through_lance}")

    # LanceDB's own ANN index (still used for filtered and hybrid queries).
    store.ann_backend = "lance"
    for q in queries[:5]:  # warm the index cache, as a long-running server would be
        store.search("", q, 10, mode="vector")
    sweep = {}
    for setting in args.sweep:
        nprobes, refine = (int(x) for x in setting.split(":"))
        store.nprobes, store.refine_factor = nprobes, refine
        index_ms: list[float] = []
        recalls: list[float] = []
        for q, truth in zip(queries, exact, strict=True):
            t0 = time.perf_counter()
            hits = store.search("", q, 10, mode="vector")
            index_ms.append((time.perf_counter() - t0) * 1000)
            recalls.append(len(truth & {h.chunk_id for h in hits}) / 10)
        # The same ANN query returning only ids, as the baseline does (no text columns).
        ids_ms: list[float] = []
        ids_recalls: list[float] = []
        for q, truth in zip(queries, exact, strict=True):
            t0 = time.perf_counter()
            query = table.search(q, vector_column_name="vector").distance_type("cosine")
            query = query.nprobes(nprobes).limit(10).select(["id"])
            if refine:
                query = query.refine_factor(refine)
            got = set(query.to_arrow().column("id").to_pylist())
            ids_ms.append((time.perf_counter() - t0) * 1000)
            ids_recalls.append(len(truth & got) / 10)
        sweep[f"nprobes={nprobes},refine={refine}"] = figures(
            index_ms, recalls, ids_ms, ids_recalls, p95_brute
        )
        log(f"{setting}: {sweep[f'nprobes={nprobes},refine={refine}']}")
    report = {
        "vectors": args.n,
        "dim": embedder.dim,
        "vector_source": (
            f"{len(base)} real all-MiniLM-L6-v2 stdlib chunk embeddings ({origin}); each vector "
            "= normalise(e_i + U(0,0.3)*e_j + N(0, 0.01^2 I))"
        ),
        "queries": len(queries),
        "query_source": "real MiniLM embeddings of stdlib docstring first sentences",
        "index": {
            "type": f"{store.ann_index_type} (LanceDB, cosine), built with the faiss sidecar",
            "max_iterations": store.ann_max_iterations,
            "num_partitions": store.partitions_for(args.n),
            "store_defaults": {
                "nprobes": LanceDBStore.nprobes,
                "refine": LanceDBStore.refine_factor,
            },
        },
        "write_seconds": round(write_s, 1),
        "index_build_seconds": round(index_s, 1),
        "build_seconds_total": round(write_s + index_s, 1),
        "faiss_sidecar": {
            "type": f"IVF{nlist_for(args.n)},Flat (faiss, inner product on unit vectors)",
            "store_default_nprobe": LanceDBStore.faiss_nprobe,
            "by_nprobe": faiss_sweep,
        },
        "filtered_and_hybrid_through_lancedb": through_lance,
        "by_nprobes_refine": sweep,
        "baseline": "numpy brute force (exact), same queries, same process",
        "bruteforce_query_ms_p50": round(statistics.median(brute_ms), 2),
        "bruteforce_query_ms_p95": round(p95_brute, 2),
        "peak_rss_gb": round(peak_rss_gb(), 2),
        "peak_rss_note": "whole process: the 3.07 GB numpy matrix for the baseline included",
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
