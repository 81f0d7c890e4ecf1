"""The first `codegen corpus build` on a fresh CODEGEN_HOME, per embedder, in one run.
Prints JSON.

What a new user waits for: `codegen corpus build` (fetch, clean, dedupe, chunk, embed,
index, quality check) on an empty CODEGEN_HOME. Two corpora:
  - ``--corpus stdlib`` (default): the default corpus, the interpreter's standard library;
  - ``--corpus small``: SMALL_MODULES (17 standard-library modules plus urllib/parse.py and
    json/__init__.py, about 570 chunks), copied to a folder and built with ``--local``.
The ONNX model cache is the user's, shared by every home (``[retrieval] model_cache_dir``):
  - ``--model-cache cold`` (default for stdlib): each build gets an empty one, so the export
    is part of the first build, as for a user's very first build on a machine;
  - ``--model-cache warm`` (default for small): one cache, filled before the timed builds, as
    for any later fresh home of that user.
Baseline: the torch MiniLM build (``minilm-torch``) in the same run. With ``--repeats N``
the embedders alternate (torch, default, torch, default, ...) so the machine's load hits
them alike; each build's load average at start and end is reported beside it, and the
fraction of torch's time is the median of the per-pair fractions.

    .venv/bin/python -m benchmarks.corpus.first_index_build --embedders minilm-torch,minilm
    .venv/bin/python -m benchmarks.corpus.first_index_build --corpus small --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

BASELINE = "minilm-torch"
SMALL_MODULES = (
    "textwrap.py",
    "shlex.py",
    "base64.py",
    "heapq.py",
    "calendar.py",
    "string.py",
    "pprint.py",
    "queue.py",
    "gettext.py",
    "locale.py",
    "contextlib.py",
    "dataclasses.py",
    "functools.py",
    "uuid.py",
    "wave.py",
    "cmd.py",
    "numbers.py",
    "urllib/parse.py",
    "json/__init__.py",
)


def log(msg: str) -> None:
    print(f"[first_index_build] {msg}", file=sys.stderr, flush=True)


def small_corpus(root: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    folder = root / "small-corpus"
    for name in SMALL_MODULES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stdlib / name, folder / name)
    return folder


def build_once(embedder: str, home: Path, model_cache: Path, local: Path | None) -> dict[str, Any]:
    env = {
        **os.environ,
        "CODEGEN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster_home"),
        "CODEGEN_CONFIG": str(home / "codegen.toml"),  # no developer config file
        "CODEGEN_RETRIEVAL__EMBEDDER": embedder,
        "CODEGEN_RETRIEVAL__MODEL_CACHE_DIR": str(model_cache),
    }
    (home / "dagster_home").mkdir(parents=True)
    command = [sys.executable, "-m", "codegen", "corpus", "build", "--json"]
    if local is not None:
        command += ["--local", str(local)]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{embedder}: codegen corpus build failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    index = result.get("stages", {}).get("index", {})
    return {
        "wall_seconds": round(wall, 1),
        "index_stage": index,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def warm_model_cache(cache: Path) -> float:
    """Fill the user's model cache as a first build would (the ONNX export), untimed."""
    from codegen.retrieval.embedders import OnnxMiniLMEmbedder

    t0 = time.perf_counter()
    OnnxMiniLMEmbedder(cache_dir=str(cache)).ensure_export()
    return round(time.perf_counter() - t0, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--embedders", default=f"{BASELINE},minilm")
    ap.add_argument("--corpus", choices=["stdlib", "small"], default="stdlib")
    ap.add_argument("--model-cache", choices=["cold", "warm"], help="default: by --corpus")
    ap.add_argument("--repeats", type=int, default=1, help="builds per embedder, alternating")
    ap.add_argument("--keep", action="store_true", help="keep the CODEGEN_HOME directories")
    args = ap.parse_args()
    model_cache = args.model_cache or ("cold" if args.corpus == "stdlib" else "warm")
    names = args.embedders.split(",")
    root = Path(tempfile.mkdtemp(prefix="first-index-build-"))
    local = small_corpus(root) if args.corpus == "small" else None
    report: dict[str, Any] = {
        "command": "python -m codegen corpus build --json"
        + (f" --local <{len(SMALL_MODULES)} stdlib files>" if local else "")
        + " on a fresh CODEGEN_HOME",
        "corpus": list(SMALL_MODULES) if local else "the standard library (default corpus)",
        "model_cache": model_cache,
        "cpus": os.cpu_count(),
        "baseline": f"{BASELINE} first build, same run, alternating",
        "builds": {name: [] for name in names},
    }
    try:
        if model_cache == "warm":
            report["model_cache_warm_up_seconds"] = warm_model_cache(root / "user-cache")
        for r in range(args.repeats):
            for name in names:
                home = root / f"{name}-{r}"
                cache = root / "user-cache" if model_cache == "warm" else home / "user-cache"
                log(f"{name} #{r + 1}: building from scratch in {home}")
                build = build_once(name, home, cache, local)
                report["builds"][name].append(build)
                log(f"{name} #{r + 1}: {json.dumps(build)}")
        base = report["builds"].get(BASELINE)
        summary: dict[str, Any] = {}
        for name, builds in report["builds"].items():
            walls = [b["wall_seconds"] for b in builds]
            entry: dict[str, Any] = {"wall_seconds_median": statistics.median(walls)}
            chunks = {b["index_stage"].get("total") for b in builds}
            entry["chunks"] = sorted(c for c in chunks if c is not None)
            if base and name != BASELINE:
                fractions = [
                    b["wall_seconds"] / t["wall_seconds"] for b, t in zip(builds, base, strict=True)
                ]
                entry[f"fraction_of_{BASELINE}_time_by_pair"] = [round(f, 3) for f in fractions]
                entry[f"fraction_of_{BASELINE}_time"] = round(statistics.median(fractions), 3)
                entry[f"speedup_vs_{BASELINE}"] = round(1 / statistics.median(fractions), 2)
            summary[name] = entry
        report["summary"] = summary
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
