"""Retrieval quality and speed on the standard library, CodeSearchNet style. Prints JSON.

Query = first sentence of a function's docstring; target = that function with its docstring
removed, indexed among every other stdlib function (docstrings removed too). For each
embedder: MiniLM (default) and the static model distilled from it, it reports
  - MRR@10, recall@1, recall@10 for keyword (BM25), vector and hybrid (RRF) search,
    against the named baseline "best single method" (max of keyword and vector);
  - the other hybrid implementation beside the default one: LanceDB's hybrid query with its
    RRFReranker (the default) and our own RRF over depth-50 candidate lists;
  - embedding throughput (chunks/s) on the same fixed sample of real chunks;
  - warm query latency (p50/p95 ms) of a hybrid search including the query embedding.

The index lives in --workdir and is synced incrementally, so a rerun embeds nothing new.

    .venv/bin/python benchmarks/retrieval_quality.py --max-queries 1000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

from retrieval.embedders import EmbedderConfig, make_embedder
from retrieval.evaluation import evaluate, stdlib_eval_set
from retrieval.index import IndexRetriever, sync_index
from retrieval.stores import LanceDBStore


def log(msg: str) -> None:
    print(f"[retrieval_quality] {msg}", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--max-queries", type=int, default=1000)
    ap.add_argument("--max-files", type=int, default=None, help="first N stdlib files only")
    ap.add_argument("--embedders", default="minilm,static")
    ap.add_argument("--workdir", default=".codegen/bench/retrieval_quality")
    ap.add_argument("--throughput-sample", type=int, default=512)
    ap.add_argument("--latency-queries", type=int, default=100)
    args = ap.parse_args()

    root = Path(sysconfig.get_paths()["stdlib"])
    started = time.perf_counter()
    chunks, queries = stdlib_eval_set(root, max_queries=args.max_queries, max_files=args.max_files)
    log(f"{len(chunks)} functions, {len(queries)} queries from {root}")
    workdir = Path(args.workdir)
    report: dict = {
        "corpus": str(root),
        "python": sys.version.split()[0],
        "functions_indexed": len(chunks),
        "queries": len(queries),
        "baseline": "best single method (max MRR@10 of keyword and vector)",
        "embedders": {},
        "eval_set_seconds": round(time.perf_counter() - started, 1),
    }
    sample = [c.text for c in chunks[: args.throughput_sample]]
    for name in args.embedders.split(","):
        t0 = time.perf_counter()
        embedder = make_embedder(EmbedderConfig(name=name, cache_dir=str(workdir / "cache")))
        load_s = time.perf_counter() - t0
        embedder.embed_documents(sample[:8])  # warm-up: first batch pays one-off setup
        t0 = time.perf_counter()
        embedder.embed_documents(sample)
        throughput = len(sample) / (time.perf_counter() - t0)
        log(f"{name}: {throughput:.0f} chunks/s; syncing the index")
        store = LanceDBStore(uri=str(workdir / f"index-{name}"))
        stats = sync_index(
            chunks,
            store,
            embedder,
            progress=lambda d, t: log(f"  embedded {d}/{t}") if d % 2048 < 256 else None,
        )
        retriever = IndexRetriever(store, embedder)
        scores = {m: vars(s) for m, s in evaluate(retriever, queries, SEARCH_ORDER).items()}
        store.native_hybrid = not store.native_hybrid  # the other hybrid implementation
        other = vars(evaluate(retriever, queries, ["hybrid"])["hybrid"])
        store.native_hybrid = not store.native_hybrid
        best_single = max(scores["keyword"]["mrr_at_10"], scores["vector"]["mrr_at_10"])
        fusion = fusion_variants(retriever, queries)
        fresh = IndexRetriever(store, embedder)  # empty query-vector cache: time embeddings too
        latencies = []
        for q in queries[: args.latency_queries]:
            t0 = time.perf_counter()
            fresh.search(q.query, 10, mode="hybrid")
            latencies.append((time.perf_counter() - t0) * 1000)
        report["embedders"][name] = {
            "identity": embedder.identity,
            "dim": embedder.dim,
            "load_seconds": round(load_s, 2),
            "throughput_chunks_per_s": round(throughput, 1),
            "sync": stats.to_dict(),
            "scores": scores,
            "hybrid_is": "lancedb_native_rrf" if store.native_hybrid else "own_rrf_depth50",
            "other_hybrid": other,
            "fusion_variants_mrr_at_10": fusion,
            "hybrid_minus_best_single_mrr": round(scores["hybrid"]["mrr_at_10"] - best_single, 4),
            "hybrid_query_ms_p50": round(statistics.median(latencies), 2),
            "hybrid_query_ms_p95": round(float(np.percentile(latencies, 95)), 2),
        }
        log(json.dumps(report["embedders"][name]["scores"]))
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


SEARCH_ORDER = ["keyword", "vector", "hybrid"]


def fusion_variants(retriever: IndexRetriever, queries: list) -> dict[str, float]:
    """MRR@10 of RRF over different candidate depths, from the same two rankings."""
    from retrieval.stores import rrf_fuse

    runs = []
    for q in queries:
        vec = retriever.query_vector(q.query)
        dense = [h.chunk_id for h in retriever.store.search(q.query, vec, 100, mode="vector")]
        sparse = [h.chunk_id for h in retriever.store.search(q.query, None, 100, mode="keyword")]
        runs.append((q.target_id, dense, sparse))
    out = {}
    for depth in (10, 20, 50, 100):
        for k in (10, 60):
            rr = 0.0
            for target, dense, sparse in runs:
                ids = [i for i, _ in rrf_fuse([dense[:depth], sparse[:depth]], k=k)[:10]]
                rr += 1 / (ids.index(target) + 1) if target in ids else 0
            out[f"rrf_k{k}_depth{depth}"] = round(rr / max(len(runs), 1), 4)
    return out


if __name__ == "__main__":
    main()
