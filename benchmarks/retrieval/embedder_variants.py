"""Issue 22's alternatives to the default embedder's graph, timed against the default on the
same texts. Prints JSON.

Each ONNX variant is the default's recipe 3 (``export_minilm_onnx``: the same export, int8
weights per channel, constant activation scales calibrated on the same stdlib code) with one
of ONNX Runtime's BERT fusions set otherwise:
  - ``mha``: attention as ``MultiHeadAttention`` (fp32, ONNX Runtime's CPU attention kernel)
    with the Q, K, V projections as three int8 ``MatMulIntegerToFloat``, instead of one int8
    ``QAttention``;
  - ``fastgelu``: GELU as its tanh approximation (``FastGelu``) instead of ``BiasGelu``.
And one way of running the default's own graph:
  - ``two_sessions``: two single-threaded sessions, each embedding every other text from its
    own thread, instead of one session on every CPU.

The texts are benchmarks/retrieval/embedder_ceiling.py's: 256 stdlib functions and 512
seeded chunks of the default corpus. Each round times the default and every variant on the
same texts, one
after another (the order rotates between rounds), so on a shared machine the speed ratio
within a round is what counts (``speed_ratio_to_default_by_round`` and its median).
``cpu_time_ratio_to_default_median``: the same for the process's CPU seconds per text (all
threads, ONNX Runtime's spin-waiting included), which moves less than wall time when other
work takes the CPUs; it is not a speed for ``two_sessions``, whose point is parallelism.
``mean_cosine_to_default``: how far a variant's vectors move from the default's.

    .venv/bin/python -m benchmarks.retrieval.embedder_variants
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.retrieval.embedder_ceiling import timed_text_sets
from codegen.retrieval.embedders import (
    OnnxMiniLMEmbedder,
    available_cpus,
    export_minilm_onnx,
    onnx_session_options,
    verified_minilm_dir,
)

# FusionOptions flags per variant (all else as the default's).
FUSIONS: dict[str, dict[str, bool]] = {
    "mha": {"use_multi_head_attention": True},
    "fastgelu": {"enable_gelu_approximation": True},
}
VARIANTS = (*FUSIONS, "two_sessions")

Embed = Callable[[list[str]], np.ndarray]


def log(msg: str) -> None:
    print(f"[embedder_variants] {msg}", file=sys.stderr, flush=True)


def session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = onnx_session_options(threads)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def variant_export(default: OnnxMiniLMEmbedder, name: str, workdir: Path) -> Path:
    """The variant's model file, exported once per default export (named after it)."""
    target = workdir / f"{name}-{default.export_dir.name}.onnx"
    if not target.exists():
        started = time.perf_counter()
        export_minilm_onnx(verified_minilm_dir()[0], target, True, FUSIONS[name])
        log(f"exported {name} in {time.perf_counter() - started:.0f} s")
    return target


def fused_operators(path: Path) -> dict[str, int]:
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items()))


def embedders(default: OnnxMiniLMEmbedder, names: list[str], workdir: Path) -> dict[str, Embed]:
    threads = available_cpus()
    base = session(default.ensure_export(), threads)
    runs: dict[str, Embed] = {"default": lambda texts: default.embed_documents(texts, session=base)}
    for name in names:
        if name in FUSIONS:
            other = session(variant_export(default, name, workdir), threads)
            runs[name] = lambda texts, s=other: default.embed_documents(texts, session=s)
        else:
            singles = [session(default.ensure_export(), 1) for _ in range(2)]
            runs[name] = lambda texts, s=singles: two_sessions(default, s, texts)
    return runs


def two_sessions(default: OnnxMiniLMEmbedder, sessions: list[Any], texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), default.dim), dtype=np.float32)

    def half(i: int) -> None:
        out[i::2] = default.embed_documents(texts[i::2], session=sessions[i])

    with ThreadPoolExecutor(len(sessions)) as pool:
        list(pool.map(half, range(len(sessions))))
    return out


def timed(runs: dict[str, Embed], texts: list[str], rounds: int) -> dict[str, Any]:
    for embed in runs.values():
        embed(texts[:8])  # warm-up: first-call allocations
    vectors: dict[str, np.ndarray] = {}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    loads: list[float] = []
    names = list(runs)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[name] = runs[name](texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
            cpu[name].append((time.process_time() - cpu_started) / len(texts))
        loads.append(round(os.getloadavg()[0], 2))
        log(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:.1f}/s" for n, v in rates.items()))
    result: dict[str, Any] = {"texts": len(texts), "load_average_1m_by_round": loads}
    for name, by_round in rates.items():
        entry: dict[str, Any] = {
            "chunks_per_s_by_round": [round(v, 1) for v in by_round],
            "cpu_ms_per_text_by_round": [round(v * 1e3, 2) for v in cpu[name]],
        }
        if name != "default":
            ratios = [v / d for v, d in zip(by_round, rates["default"], strict=True)]
            cpu_ratios = [v / d for v, d in zip(cpu[name], cpu["default"], strict=True)]
            cosines = (vectors[name] * vectors["default"]).sum(axis=1)
            entry |= {
                "speed_ratio_to_default_by_round": [round(x, 3) for x in ratios],
                "speed_ratio_to_default_median": round(statistics.median(ratios), 3),
                "cpu_time_ratio_to_default_median": round(statistics.median(cpu_ratios), 3),
                "mean_cosine_to_default": round(float(cosines.mean()), 5),
                "min_cosine_to_default": round(float(cosines.min()), 5),
            }
        result[name] = entry
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workdir", default=".codegen/bench/embedder_variants")
    ap.add_argument("--model-cache", default=".codegen/bench/retrieval_quality/cache")
    ap.add_argument("--corpus-workdir", default=".codegen/bench/embedder_ceiling")
    ap.add_argument("--chunks", type=Path, help="a chunks.jsonl instead of building one")
    ap.add_argument("--sample", type=int, default=256, help="stdlib functions timed")
    ap.add_argument("--corpus-sample", type=int, default=512, help="corpus chunks timed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    args = ap.parse_args()
    names = [n for n in args.variants.split(",") if n]
    if unknown := sorted(set(names) - set(VARIANTS)):
        ap.error(f"unknown variants: {', '.join(unknown)}")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "cpus": available_cpus(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "baseline": "default: the default embedder's recipe 3 graph, one session on every CPU",
    }
    default = OnnxMiniLMEmbedder(cache_dir=args.model_cache)
    runs = embedders(default, names, workdir)
    # What each fusion changed: operator counts that differ from the default graph's.
    ops = fused_operators(default.ensure_export())
    report["operators_unlike_default"] = {}
    for name in [n for n in names if n in FUSIONS]:
        other = fused_operators(variant_export(default, name, workdir))
        report["operators_unlike_default"][name] = {
            op: f"{ops.get(op, 0)} -> {other.get(op, 0)}"
            for op in sorted(ops.keys() | other.keys())
            if ops.get(op, 0) != other.get(op, 0)
        }
    sets, _ = timed_text_sets(
        args.sample, args.corpus_sample, args.chunks, Path(args.corpus_workdir)
    )
    report["texts"] = {}
    for label, texts in sets:
        log(f"{label}: timing {len(texts)} texts")
        report["texts"][label] = timed(runs, texts, args.rounds)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
