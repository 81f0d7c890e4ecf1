"""Retrieval quality and embedding speed on the standard library, CodeSearchNet style.
Prints JSON.

Query = first sentence of a function's docstring; target = that function with its docstring
removed, indexed among every other stdlib function (docstrings removed too). For each
embedder (default: torch MiniLM, the reference, and the ONNX MiniLM default) it reports
  - embedding throughput (chunks/s) on the same fixed sample of real chunks, measured in
    interleaved rounds so that the machine's load hits every embedder alike; the speed-up
    of each over torch MiniLM is the median of the per-round ratios;
  - MRR@10, recall@1, recall@10 for keyword (BM25), vector and hybrid (the store's: LanceDB's
    hybrid query with RRFReranker), against the named baseline "best single method";
  - fusion variants computed here from the same two rankings (our own RRF at several depths
    and dense weights), the alternatives the store's hybrid was chosen over;
  - warm query latency (p50/p95 ms) of a hybrid search including the query embedding;
  - for MiniLM variants, the mean cosine between their vectors and torch's on the sample.

The index lives in --workdir and is synced incrementally, so a rerun embeds nothing new.

    .venv/bin/python -m benchmarks.retrieval.retrieval_quality --max-queries 1000 --max-files 120
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.embedders import (
    DeviceMiniLMEmbedder,
    Embedder,
    EmbedderConfig,
    make_embedder,
    resolve_device,
)
from codegen.retrieval.evaluation import EvalQuery, evaluate, stdlib_eval_set
from codegen.retrieval.index import IndexRetriever, sync_index
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import RRF_K

SEARCH_ORDER = ["keyword", "vector", "hybrid"]
REFERENCE = "minilm-torch"
# Vectors and MRR of every embedder are compared with these when they run: the torch
# reference, and the default whose space a GPU build may share.
COMPARED_TO = (REFERENCE, "minilm")


def log(msg: str) -> None:
    print(f"[retrieval_quality] {msg}", file=sys.stderr, flush=True)


DEVICE_PATH = "minilm-device-fp16"


def named_embedder(name: str, cache: Path) -> Embedder:
    """An embedder by its config name; ``NAME@N`` is the same embedder with its token cap at N
    (e.g. ``minilm@256``: the ONNX default at torch's cap), to weigh the cap apart from the
    runtime. ``minilm-device-fp16`` is the GPU build's path (the default's weights in fp16
    under torch, its cap and pooling), run on a GPU when torch sees one, else on the CPU."""
    if name == DEVICE_PATH:
        return DeviceMiniLMEmbedder(device=resolve_device("auto"), precision="fp16")
    base, _, cap = name.partition("@")
    if cap and not (cap.isdigit() and int(cap) > 0):
        raise SystemExit(f"retrieval_quality: {name!r}: the cap after @ must be a token count")
    embedder = make_embedder(EmbedderConfig(name=base, cache_dir=str(cache)))
    if cap:
        embedder = dataclasses.replace(embedder, max_seq_length=int(cap))  # type: ignore[type-var]
    return embedder


def throughput_rounds(
    embedders: dict[str, Embedder], sample: list[str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """chunks/s per embedder per round, the embedders taking turns within each round."""
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    vectors: dict[str, np.ndarray] = {}
    for r in range(rounds):
        for name, embedder in embedders.items():
            t0 = time.perf_counter()
            vectors[name] = embedder.embed_documents(sample)
            rates[name].append(len(sample) / (time.perf_counter() - t0))
        log(
            f"throughput round {r + 1}: "
            + ", ".join(f"{n} {v[-1]:.1f}/s" for n, v in rates.items())
        )
    return rates, vectors


def weighted_rrf(
    dense: list[str], sparse: list[str], *, dense_weight: float, k: int = RRF_K
) -> list[str]:
    """RRF with the dense ranking weighted; dense_weight 1 is plain RRF (retrieval.stores)."""
    scores: dict[str, float] = {}
    for weight, ranking in ((dense_weight, dense), (1.0, sparse)):
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    return [d for d, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def fusion_variants(retriever: IndexRetriever, queries: list[EvalQuery]) -> dict[str, float]:
    """MRR@10 of our own RRF over the store's dense and BM25 rankings, at several candidate
    depths and dense weights (the benchmark-only alternatives to the store's hybrid query)."""
    runs = []
    for q in queries:
        vec = retriever.query_vector(q.query)
        dense = [h.chunk_id for h in retriever.store.search(q.query, vec, 100, mode="vector")]
        sparse = [h.chunk_id for h in retriever.store.search(q.query, None, 100, mode="keyword")]
        runs.append((q.target_id, dense, sparse))

    def mrr(depth: int, weight: float, k: int) -> float:
        rr = 0.0
        for target, dense, sparse in runs:
            ids = weighted_rrf(dense[:depth], sparse[:depth], dense_weight=weight, k=k)[:10]
            rr += 1 / (ids.index(target) + 1) if target in ids else 0
        return round(rr / max(len(runs), 1), 4)

    out = {f"rrf_k{k}_depth{d}": mrr(d, 1.0, k) for d in (10, 20, 50, 100) for k in (10, 60)}
    for weight in (0.25, 0.5, 0.75, 1.5, 2.0):
        out[f"rrf_k60_depth10_dense_weight{weight}"] = mrr(10, weight, RRF_K)
    return out


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--max-queries", type=int, default=1000)
    ap.add_argument("--max-files", type=int, default=None, help="a seeded sample of N stdlib files")
    ap.add_argument(
        "--embedders",
        default="minilm-torch,minilm",
        help="config names; NAME@N sets the token cap (e.g. minilm@256, minilm-torch@128); "
        "BUILD>QUERY builds the index with BUILD and embeds queries with QUERY, as a GPU-built "
        "index in the default's space is searched (e.g. minilm-device-fp16>minilm)",
    )
    ap.add_argument("--workdir", default=".codegen/bench/retrieval_quality")
    ap.add_argument("--throughput-sample", type=int, default=256)
    ap.add_argument("--throughput-rounds", type=int, default=3)
    ap.add_argument("--latency-queries", type=int, default=100)
    return ap.parse_args()


def _ready_embedders(
    names: list[str], cache: Path, sample: list[str], report: dict[str, Any]
) -> tuple[dict[str, Embedder], dict[str, Embedder]]:
    """Each named embedder loaded and used once (its first-use seconds into ``report``); and,
    for ``BUILD>QUERY``, the query side when it is not BUILD itself."""
    embedders: dict[str, Embedder] = {}
    queriers: dict[str, Embedder] = {}
    for name in names:
        t0 = time.perf_counter()
        build, _, query = name.partition(">")
        embedders[name] = named_embedder(build, cache)
        if query:
            queriers[name] = named_embedder(query, cache)
            # Stored under the query embedder's identity: one space, two runtimes.
            embedders[name].space = queriers[name].identity  # type: ignore[attr-defined]
        embedders[name].embed_documents(sample[:8])  # model load, first-time export/distillation
        report["embedders"][name] = {
            "identity": embedders[name].identity,
            "dim": embedders[name].dim,
            "first_use_seconds": round(time.perf_counter() - t0, 2),
        }
        log(f"{name} ready in {time.perf_counter() - t0:.1f}s")
    return embedders, queriers


def _add_throughput(
    report: dict[str, Any],
    names: list[str],
    embedders: dict[str, Embedder],
    sample: list[str],
    rounds: int,
) -> None:
    """Each embedder's chunks/s over interleaved rounds, its speed-up on the reference and its
    vectors' cosine to the compared ones, into ``report``."""
    rates, sample_vectors = throughput_rounds(embedders, sample, rounds)
    for name in names:
        entry = report["embedders"][name]
        entry["throughput_chunks_per_s"] = round(statistics.median(rates[name]), 1)
        entry["throughput_by_round"] = [round(r, 1) for r in rates[name]]
        if REFERENCE in rates:
            ratios = [a / b for a, b in zip(rates[name], rates[REFERENCE], strict=True)]
            entry[f"speedup_vs_{REFERENCE}"] = round(statistics.median(ratios), 2)
        for other in COMPARED_TO:
            theirs = sample_vectors.get(other)
            if theirs is not None and sample_vectors[name].shape == theirs.shape:
                cos = np.sum(sample_vectors[name] * theirs, axis=1)
                entry[f"cosine_to_{other}_mean"] = round(float(cos.mean()), 5)
                entry[f"cosine_to_{other}_min"] = round(float(cos.min()), 5)


def _index_quality(
    name: str,
    embedders: tuple[Embedder, Embedder],
    chunks: list[Chunk],
    queries: list[EvalQuery],
    workdir: Path,
    latency_queries: int,
) -> dict[str, Any]:
    """The index ``name`` synced with ``embedders`` (the build side, the query side), scored
    per search mode and fusion variant, and its hybrid query latency."""
    embedder, querier = embedders
    log(f"{name}: syncing the index")
    slug = name.replace("@", "-seq").replace(">", "-queried-by-")
    store = LanceDBStore(uri=str(workdir / f"index-{slug}"))
    stats = sync_index(
        chunks,
        store,
        embedder,
        progress=lambda d, t: log(f"  embedded {d}/{t}") if d % 2048 < 256 else None,
    )
    retriever = IndexRetriever(store, querier)
    scores = {m: vars(s) for m, s in evaluate(retriever, queries, SEARCH_ORDER).items()}
    best_single = max(scores["keyword"]["mrr_at_10"], scores["vector"]["mrr_at_10"])
    fusion = fusion_variants(retriever, queries)
    # An empty query-vector cache: time the query embeddings too.
    fresh = IndexRetriever(store, querier)
    latencies = []
    for q in queries[:latency_queries]:
        t0 = time.perf_counter()
        fresh.search(q.query, 10, mode="hybrid")
        latencies.append((time.perf_counter() - t0) * 1000)
    log(json.dumps(scores))
    return {
        "sync": stats.to_dict(),
        "scores": scores,
        "hybrid_mrr_at_10": scores["hybrid"]["mrr_at_10"],
        "hybrid_is": "lancedb hybrid query + RRFReranker(K=60)",
        "fusion_variants_mrr_at_10": fusion,
        "hybrid_minus_best_single_mrr": round(scores["hybrid"]["mrr_at_10"] - best_single, 4),
        "hybrid_minus_keyword_mrr": round(
            scores["hybrid"]["mrr_at_10"] - scores["keyword"]["mrr_at_10"], 4
        ),
        "hybrid_query_ms_p50": round(statistics.median(latencies), 2),
        "hybrid_query_ms_p95": round(float(np.percentile(latencies, 95)), 2),
    }


def main() -> None:
    args = _parse_args()
    root = Path(sysconfig.get_paths()["stdlib"])
    started = time.perf_counter()
    chunks, queries = stdlib_eval_set(root, max_queries=args.max_queries, max_files=args.max_files)
    log(f"{len(chunks)} functions, {len(queries)} queries from {root}")
    workdir = Path(args.workdir)
    report: dict = {
        "corpus": str(root),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "functions_indexed": len(chunks),
        "queries": len(queries),
        "baseline": "quality: best single method (max MRR@10 of keyword and vector); "
        f"speed: {REFERENCE} on the same chunks, interleaved rounds",
        "embedders": {},
        "eval_set_seconds": round(time.perf_counter() - started, 1),
    }
    names = args.embedders.split(",")
    sample = [c.text for c in chunks[: args.throughput_sample]]
    embedders, queriers = _ready_embedders(names, workdir / "cache", sample, report)
    _add_throughput(report, names, embedders, sample, args.throughput_rounds)
    for name, embedder in embedders.items():
        sides = (embedder, queriers.get(name, embedder))
        report["embedders"][name].update(
            _index_quality(name, sides, chunks, queries, workdir, args.latency_queries)
        )
    for other in COMPARED_TO:
        if other not in embedders:
            continue
        ref = report["embedders"][other]["hybrid_mrr_at_10"]
        for name in names:
            entry = report["embedders"][name]
            entry[f"hybrid_mrr_minus_{other}"] = round(entry["hybrid_mrr_at_10"] - ref, 4)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
