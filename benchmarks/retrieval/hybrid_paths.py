"""Does the large-index search path (faiss sidecar dense leg, in-process RRF with LanceDB's
BM25) give the same results as today's small-index path? Prints JSON.

The quality set (benchmarks/retrieval/retrieval_quality.py's: the 2,240 functions of a
seeded 120-file stdlib sample, docstrings removed, 727 docstring-sentence queries) is far below
``ann_min_rows``, so the new path is forced: the same table is copied and refreshed with
``ann_min_rows=1``, which builds the faiss sidecar and LanceDB's IVF index. Its probe count is
calibrated on the index's own vectors plus, as sync_index passes the quality check's queries,
``--calibration-queries`` real docstring queries from stdlib files outside the sample (never
the scored ones; 0: own vectors only). Both stores are scored by MRR@10 in hybrid, vector
and keyword modes on the same queries.

    .venv/bin/python -m benchmarks.retrieval.hybrid_paths
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

from codegen.retrieval.embedders import EmbedderConfig, make_embedder
from codegen.retrieval.evaluation import evaluate, stdlib_eval_set
from codegen.retrieval.index import IndexRetriever, sync_index
from codegen.retrieval.lancedb_store import LanceDBStore

MODES = ("hybrid", "vector", "keyword")


def log(msg: str) -> None:
    print(f"[hybrid_paths] {msg}", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--max-files", type=int, default=120)
    ap.add_argument("--max-queries", type=int, default=1000)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--workdir", default=".codegen/bench/hybrid_paths")
    ap.add_argument("--model-cache", default=".codegen/bench/retrieval_quality/cache")
    ap.add_argument("--calibration-queries", type=int, default=100)
    ap.add_argument("--reuse", action="store_true", help="keep an already synced exact store")
    args = ap.parse_args()
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    chunks, queries = stdlib_eval_set(
        Path(sysconfig.get_paths()["stdlib"]),
        max_queries=args.max_queries,
        max_files=args.max_files,
    )
    log(f"{len(chunks)} functions, {len(queries)} queries")
    embedder = make_embedder(EmbedderConfig(name=args.embedder, cache_dir=args.model_cache))
    workdir = Path(args.workdir)
    if not args.reuse:
        shutil.rmtree(workdir, ignore_errors=True)
    today = LanceDBStore(uri=str(workdir / "today"))
    sync_index(chunks, today, embedder)  # embeds nothing when reused
    assert today.ann_info() is None  # below ann_min_rows: exact search, LanceDB's hybrid
    shutil.rmtree(workdir / "forced", ignore_errors=True)
    shutil.copytree(workdir / "today", workdir / "forced")
    forced = LanceDBStore(uri=str(workdir / "forced"), ann_min_rows=1)
    scored = {q.query for q in queries}
    indexed = {c.id for c in chunks}
    _, others = stdlib_eval_set(Path(sysconfig.get_paths()["stdlib"]), max_queries=100_000, seed=7)
    outside = [q.query for q in others if q.target_id not in indexed and q.query not in scored]
    outside = outside[: args.calibration_queries]
    log(f"{len(outside)} calibration queries from outside the sample")
    forced.refresh(lambda: embedder.embed_documents(outside) if outside else None)
    ann = forced.ann_info()
    assert ann is not None
    log(f"forced sidecar: nprobe {ann['nprobe']} of {ann['nlist']} lists")
    scores = {}
    for name, store in (("today", today), ("forced_sidecar_path", forced)):
        result = evaluate(IndexRetriever(store, embedder), queries, MODES)
        scores[name] = {mode: vars(s) for mode, s in result.items()}
        log(f"{name}: {json.dumps({m: s['mrr_at_10'] for m, s in scores[name].items()})}")
    report = {
        "functions_indexed": len(chunks),
        "queries": len(queries),
        "embedder": embedder.identity,
        "today": "exact LanceDB search; hybrid = LanceDB hybrid query + RRFReranker(K=60)",
        "forced_sidecar_path": (
            "ann_min_rows=1: faiss sidecar dense leg (calibrated nprobe), LanceDB BM25 leg, "
            "RRF(k=60) in process"
        ),
        "calibration_queries": f"{len(outside)} docstring queries of stdlib functions outside "
        "the sample, plus the index's own vectors",
        "sidecar": {"nlist": ann["nlist"], "nprobe": ann["nprobe"], **ann["calibration"]},
        "scores": scores,
        "hybrid_mrr_at_10_difference": round(
            scores["forced_sidecar_path"]["hybrid"]["mrr_at_10"]
            - scores["today"]["hybrid"]["mrr_at_10"],
            4,
        ),
        "load_average": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
