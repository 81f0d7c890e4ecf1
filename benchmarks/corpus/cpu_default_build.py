"""The CPU default's index build against a named baseline checkout: the sha256 of its vectors
on a fixed sample (the same bytes, or not), and the wall time of a whole ``sync_index`` of
N standard-library chunks into a fresh LanceDB (tokenize, embed, write), the two checkouts
alternating in pairs in one run. Prints JSON; ``ratio`` is this checkout's wall time over the
baseline's, per pair and their median, and ``cpu_ratio`` the same for CPU seconds (user +
system of the build), which other work on a busy machine moves far less.

The baseline is another checkout of this repository, e.g. the code before the GPU build
work: ``git worktree add /tmp/before-gpu bf0f22d``. Each build runs in its own child
process with ``PYTHONPATH`` at one checkout, so each side imports its own ``codegen`` with the
same interpreter, libraries and ONNX export (the cache under --cache, shared).

    .venv/bin/python -m benchmarks.corpus.cpu_default_build --baseline /tmp/before-gpu --pairs 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT

HERE = Path(__file__).resolve()  # the child runs this file under the other checkout
SAMPLE = 512
SIDES = ("ours", "baseline")


def stdlib_chunks(count: int) -> list:  # type: ignore[type-arg]
    """The first ``count`` chunks of the standard library through the project's chunker
    (the same on both sides: the chunker is not what is compared)."""
    from codegen.corpus.chunk import Budget, chunk_spans, make_chunks
    from codegen.corpus.model import Document

    root = Path(sysconfig.get_paths()["stdlib"])
    chunks: list = []  # type: ignore[type-arg]
    for path in sorted(root.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        doc = Document(
            id=path.name, source="local", uri=path.as_uri(), title=path.name, text=text,
            language="python",
        )  # fmt: skip
        chunks += make_chunks(doc, text, "python", chunk_spans(text, "python", path.name, Budget()))
        if len(chunks) >= count:
            return chunks[:count]
    return chunks


def child(cache: str, count: int) -> None:
    from codegen.retrieval.embedders import OnnxMiniLMEmbedder
    from codegen.retrieval.index import sync_index
    from codegen.retrieval.lancedb_store import LanceDBStore

    chunks = stdlib_chunks(count)
    embedder = OnnxMiniLMEmbedder(cache_dir=cache)
    vectors = embedder.embed_documents([c.text for c in chunks[:SAMPLE]])  # also warms up
    digest = hashlib.sha256(vectors.astype("<f4").tobytes()).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        stats = sync_index(chunks, LanceDBStore(uri=str(Path(tmp) / "index")), embedder)
        seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
    print(
        json.dumps(
            {"sha256": digest, "seconds": seconds, "cpu_seconds": cpu, "embedded": stats.embedded}
        )
    )


def _cpu_seconds() -> float:
    """User + system seconds of this process (every thread): less moved by other work on a
    busy machine than wall time, which waits for the cores it shares."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_side(checkout: Path, cache: str, count: int) -> dict:  # type: ignore[type-arg]
    # codegen from the checkout measured; this package from here
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(checkout), str(ROOT)))}
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", "--cache", cache, "--chunks", str(count)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--baseline", help="another checkout of this repository")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--chunks", type=int, default=3000)
    ap.add_argument("--cache", default=".codegen/bench/cpu_default_build/cache")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.cache, args.chunks)
        return
    if not args.baseline or not (Path(args.baseline) / "codegen").is_dir():
        ap.error("--baseline must name another checkout of this repository")
    ours, theirs = ROOT, Path(args.baseline).resolve()
    cache = str(Path(args.cache).resolve())
    run_side(ours, cache, 64)  # the one-off ONNX export, outside the timed pairs
    pairs = []
    for i in range(args.pairs):
        # Alternating which side goes first spreads a drift in the machine's load over both.
        order = [("ours", ours), ("baseline", theirs)][:: 1 if i % 2 == 0 else -1]
        result = {name: run_side(path, cache, args.chunks) for name, path in order}
        pairs.append(result)
        print(
            f"[cpu_default_build] pair {i + 1}: ours {result['ours']['seconds']:.1f} s, "
            f"baseline {result['baseline']['seconds']:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    ratios = [p["ours"]["seconds"] / p["baseline"]["seconds"] for p in pairs]
    cpu_ratios = [p["ours"]["cpu_seconds"] / p["baseline"]["cpu_seconds"] for p in pairs]
    print(
        json.dumps(
            {
                "chunks": args.chunks,
                "baseline": str(theirs),
                "cpus": os.cpu_count(),
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                "sample_vectors_identical": len({p[s]["sha256"] for p in pairs for s in p}) == 1,
                "sha256": {s: pairs[0][s]["sha256"] for s in SIDES},
                "seconds": {
                    s: [round(p[s]["seconds"], 2) for p in pairs] for s in ("ours", "baseline")
                },
                "ratio_per_pair": [round(r, 3) for r in ratios],
                "ratio_median": round(statistics.median(ratios), 3),
                "cpu_seconds": {s: [round(p[s]["cpu_seconds"], 2) for p in pairs] for s in SIDES},
                "cpu_ratio_per_pair": [round(r, 3) for r in cpu_ratios],
                "cpu_ratio_median": round(statistics.median(cpu_ratios), 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
