"""The first `codegen corpus build` of the default corpus, once per embedder, in one run.
Prints JSON.

What a new user waits for: `codegen corpus build` (fetch, clean, dedupe, chunk, embed,
index, quality check) on an empty CODEGEN_HOME, whose default corpus is the interpreter's
standard library. Each embedder gets its own fresh home and its own model cache (so the
ONNX export is part of its first build, as it is for a user).
Baseline: the torch MiniLM build (``minilm-torch``) in the same run; the builds run one after
the other, so the load average at each start and end is reported beside them.

    .venv/bin/python benchmarks/first_index_build.py --embedders minilm-torch,minilm
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BASELINE = "minilm-torch"


def log(msg: str) -> None:
    print(f"[first_index_build] {msg}", file=sys.stderr, flush=True)


def build_once(embedder: str, home: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "CODEGEN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster_home"),
        "CODEGEN_CONFIG": str(home / "codegen.toml"),  # no developer config file
        "CODEGEN_RETRIEVAL__EMBEDDER": embedder,
    }
    (home / "dagster_home").mkdir(parents=True)
    codegen = Path(sys.executable).with_name("codegen")
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(codegen), "corpus", "build", "--json"], env=env, capture_output=True, text=True
    )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--embedders", default=f"{BASELINE},minilm")
    ap.add_argument("--keep", action="store_true", help="keep the CODEGEN_HOME directories")
    args = ap.parse_args()
    report: dict[str, Any] = {
        "command": "codegen corpus build --json (default corpus: the standard library)",
        "cpus": os.cpu_count(),
        "baseline": f"{BASELINE} first build, same run",
        "builds": {},
    }
    root = Path(tempfile.mkdtemp(prefix="first-index-build-"))
    try:
        for name in args.embedders.split(","):
            log(f"{name}: building from scratch in {root / name}")
            report["builds"][name] = build_once(name, root / name)
            log(f"{name}: {json.dumps(report['builds'][name])}")
        base = report["builds"].get(BASELINE)
        for name, build in report["builds"].items():
            if base and name != BASELINE:
                build[f"fraction_of_{BASELINE}_time"] = round(
                    build["wall_seconds"] / base["wall_seconds"], 3
                )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
