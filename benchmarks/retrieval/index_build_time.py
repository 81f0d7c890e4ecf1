"""Build time and peak memory of both vector indexes (``LanceDBStore.build_ann_index``: the
faiss sidecar with its calibration, and LanceDB's IVF_SQ) against a named baseline checkout,
on the same rows, in the same run, alternating the two. Prints JSON.

The baseline is another checkout of this repository (for issue 23: 81c14dc, the code before
calibrated probes), e.g. ``git worktree add /tmp/before-23 81c14dc``. Each build runs in its
own child process with ``PYTHONPATH`` at one checkout, so each side imports its own
``codegen`` with the same interpreter and libraries. Both write the same rows
(``vector_sources.py``, the table ``index_scale.py`` builds) into a fresh store and time
``build_ann_index`` alone; a side whose ``build_ann_index`` takes ``real_queries`` gets the
1,000 calibration queries ``index_scale.py`` gives it (disjoint from its benchmark queries).

    .venv/bin/python -m benchmarks.retrieval.index_build_time --n 2000000 --source duplicates \\
        --baseline /tmp/before-23
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks.common import ROOT


def log(msg: str) -> None:
    print(f"[index_build_time] {msg}", file=sys.stderr, flush=True)


def prepare(args: argparse.Namespace, workdir: Path) -> None:
    """The source's real embeddings and the calibration queries, as ``index_scale.py``
    computes them, saved for the children (which may import another ``codegen``)."""
    import sysconfig

    from benchmarks.retrieval.index_scale import real_embeddings
    from codegen.retrieval.embedders import EmbedderConfig, make_embedder
    from codegen.retrieval.evaluation import stdlib_eval_set

    embedder = make_embedder(EmbedderConfig(name="minilm", cache_dir=args.model_cache))
    base, origin = real_embeddings(
        args.source, Path(args.quality_index), embedder, Path(args.embeddings_cache)
    )
    _, queries = stdlib_eval_set(
        Path(sysconfig.get_paths()["stdlib"]), max_queries=200 + args.calibration_queries, seed=7
    )
    vectors = embedder.embed_documents([q.query for q in queries])
    np.save(workdir / "base.npy", base)
    np.save(workdir / "calibration.npy", vectors[200:])  # index_scale.py scores the first 200
    (workdir / "origin.txt").write_text(f"{len(base)} real embeddings ({origin})")


def child(args: argparse.Namespace) -> None:
    """One build with whichever ``codegen`` is on PYTHONPATH; one JSON line on stdout."""
    import pyarrow as pa

    import codegen
    from benchmarks.retrieval.vector_sources import rows, vectors
    from codegen.retrieval.lancedb_store import LanceDBStore

    workdir = Path(args.workdir)
    base = np.load(workdir / "base.npy")
    store_dir = workdir / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    store = LanceDBStore(uri=str(store_dir / "lance"))
    store.reset("minilm-bench", base.shape[1])
    table = store._table()
    schema = table.schema

    def batches() -> Iterator[pa.RecordBatch]:
        offset = 0
        for block in vectors(args.source, base, args.n, 100_000):
            yield rows(block, offset, schema)
            offset += len(block)

    t0 = time.perf_counter()
    table.add(pa.RecordBatchReader.from_batches(schema, batches()))
    write_s = time.perf_counter() - t0
    kwargs = {}
    if "real_queries" in inspect.signature(store.build_ann_index).parameters:
        kwargs["real_queries"] = np.load(workdir / "calibration.npy")
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    store.build_ann_index(**kwargs)
    build_s = time.perf_counter() - t0
    info = store.ann_info() if hasattr(store, "ann_info") else None
    print(
        json.dumps(
            {
                "code": str(Path(codegen.__file__).resolve().parent.parent),
                "write_seconds": round(write_s, 1),
                "vector_indexes_seconds": round(build_s, 1),
                "calibration_queries": len(kwargs.get("real_queries", [])),
                "probes": info.get("nprobe") if info else None,
                "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
                "load_average_at_build": {
                    "start": [round(x, 2) for x in load_start],
                    "end": [round(x, 2) for x in os.getloadavg()],
                },
            }
        )
    )
    shutil.rmtree(store_dir, ignore_errors=True)


def commit_of(checkout: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def build_in(checkout: Path, args: argparse.Namespace) -> dict[str, object]:
    # codegen from the checkout measured; this package (the child's vector sources) from here
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(checkout), str(ROOT)))}
    command = [sys.executable, str(Path(__file__).resolve()), "--child"]
    command += ["--n", str(args.n), "--source", args.source, "--workdir", args.workdir]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the build in {checkout} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--source", default="duplicates", help="as index_scale.py --source")
    ap.add_argument("--baseline", help="the checkout to compare with (required but in --child)")
    ap.add_argument("--rounds", type=int, default=1, help="baseline then current, per round")
    ap.add_argument("--calibration-queries", type=int, default=1000)
    ap.add_argument("--workdir", default=".codegen/bench/index_build_time")
    ap.add_argument("--embeddings-cache", default=".codegen/bench/index_scale-embeddings")
    ap.add_argument("--quality-index", default=".codegen/bench/retrieval_quality/index-minilm")
    ap.add_argument("--model-cache", default=".codegen/bench/retrieval_quality/cache")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not args.baseline or not (Path(args.baseline) / "codegen").is_dir():
        raise SystemExit("--baseline must name a checkout of this repository (a codegen/ folder)")
    current, baseline = ROOT, Path(args.baseline).resolve()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    commits = {"baseline": commit_of(baseline), "current": commit_of(current)}  # as built
    prepare(args, workdir)
    runs: dict[str, list[dict[str, object]]] = {"baseline": [], "current": []}
    for round_no in range(args.rounds):
        for side, checkout in (("baseline", baseline), ("current", current)):
            log(f"round {round_no + 1}: building with {side} ({checkout})")
            runs[side].append(build_in(checkout, args))
            log(f"{side}: {runs[side][-1]}")
    median = {
        side: statistics.median(float(r["vector_indexes_seconds"]) for r in found)
        for side, found in runs.items()
    }
    ratios = [
        round(float(c["vector_indexes_seconds"]) / float(b["vector_indexes_seconds"]), 3)
        for b, c in zip(runs["baseline"], runs["current"], strict=True)
    ]
    print(
        json.dumps(
            {
                "rows": args.n,
                "source": args.source,
                "vectors": (workdir / "origin.txt").read_text(),
                "baseline": {"checkout": str(baseline), "commit": commits["baseline"]},
                "current": {"checkout": str(current), "commit": commits["current"]},
                "runs": runs,
                "vector_indexes_seconds_median": median,
                "current_over_baseline_per_round": ratios,
                "current_over_baseline_median": round(median["current"] / median["baseline"], 3),
                "load_average": {
                    "start": load_at_start,
                    "end": [round(x, 2) for x in os.getloadavg()],
                },
                "cpus": os.cpu_count(),
                "total_seconds": round(time.perf_counter() - started, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
