"""Issue 46's payloads, each numbered finding's attack, run against the code of a given tree
(a git worktree of a commit): which attacks succeed there and which are blocked.

    .venv/bin/python -m benchmarks.verdicts.payloads --tree /tmp/old-3b8c0a5 [--tree .]
        [--backend docker|bwrap|both] [--only 1a,2c,...] [--timeout 300] [--json]

Each payload runs in a subprocess of its own (``payload_side``) with PYTHONPATH set to the
tree, the tree's ``.venv`` python when it has one, a temporary working directory and a fresh
CODEGEN_HOME and DAGSTER_HOME, through public APIs that exist before and after the fix:

* 1a/1b ``run_pytest``: the draft plants ``__init__.py`` where pytest's rootdir is, or swaps
  ``test_solution.py`` for a folder of passing tests; 1c ``score_candidates``: sample 0
  writes ``statistics.py`` where the next sample's imports look, honest sample 1 turns wrong.
* 2a/2b/2c: a returned class object forces the old, in-process way, where the candidate
  forges its pass (frame walk to the token in HumanEval-shaped scoring, a patched
  ``TestReport`` in pytest, a patched ``unittest.TestResult`` in ClassEval scoring).
* 3 ``call_functions``: a draft reads its siblings' sources or the driver's token.
* 4 ``validate_run_config``: each operator setting a launch overrides (one result a field).
* 5a/5b ``call_function``: a module forges its outcome line: a 700-deep value, and 16 MiB
  of empty lists, decoded on the host (RecursionError; the host's peak memory, ru_maxrss,
  grown past 512 MiB).
* 6: eight children of one bubblewrap job hold more than its 512 MB limit.
* 7 HumanEval+: a canonical solution's 10,000-digit integer ends as an outage.
* 8a StopIteration ends ``all(map(...))``; 8b the package set's pip download has no hashes;
  8c a symbolic link in the inbox becomes a request; 8d the scripted server answers a
  ``Content-Length: -1`` request.

Each result is ``succeeded`` (the attack worked), ``blocked`` (the defence was observed) or
``error`` (the payload could not be mounted: an exception, a failed control, a timeout; never
counted as blocked; so is a payload that ran a ``codegen`` module from outside the tree), with
a one-line detail. 6 always runs on bubblewrap; ``--backend both``
runs the other sandbox payloads on each backend. Prints a table, or with ``--json`` one
object: per tree its commit, each result and the counts. Not part of the test run: it
executes in the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, machine
from benchmarks.verdicts import payload_side

BENCHMARKS = Path(payload_side.__file__).resolve().parents[1]
# The subprocess's program: this checkout's ``benchmarks`` mounted by its path (the tree's own
# may differ or lack these payloads), the tree's ``codegen`` found on PYTHONPATH.
BOOT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "benchmarks", INIT, submodule_search_locations=[FOLDER]
)
package = importlib.util.module_from_spec(spec)
sys.modules["benchmarks"] = package
spec.loader.exec_module(package)
from benchmarks.verdicts.payload_side import run_side
run_side()
"""
SANDBOX_FREE = {"4", "8b", "8c", "8d"}  # payloads that open no sandbox
BWRAP_ONLY = {"6"}


def python_of(tree: Path) -> str:
    venv = tree / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def commit_of(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    commit = done.stdout.strip() or "unknown"
    return commit + ("+changes" if dirty.stdout.strip() else "")


def run_payload(tree: Path, payload: str, backend: str, timeout_s: float) -> list[dict[str, Any]]:
    """One payload in ``tree``'s own subprocess; its results, each with the seconds it took."""
    with tempfile.TemporaryDirectory(prefix=f"payload-{payload}-") as work:
        home = Path(work) / "home"
        (home / "dagster").mkdir(parents=True)
        env = {**os.environ, "PYTHONPATH": str(tree), "CODEGEN_HOME": str(home)}
        env["DAGSTER_HOME"] = str(home / "dagster")
        for name in ("CODEGEN_CONFIG", "CODEGEN_ENV", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            env.pop(name, None)
        boot = BOOT.replace("INIT", repr(str(BENCHMARKS / "__init__.py")))
        command = [python_of(tree), "-c", boot.replace("FOLDER", repr(str(BENCHMARKS)))]
        spec = json.dumps({"payload": payload, "backend": backend})
        started = time.monotonic()
        try:
            done = subprocess.run(
                command,
                input=spec,
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            seconds = round(time.monotonic() - started, 1)
            why = f"the payload's process ran past {timeout_s:.0f} s"
            return [{"id": payload, "attack": "error", "detail": why, "seconds": seconds}]
        seconds = round(time.monotonic() - started, 1)
    lines = done.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = " ".join(done.stderr.strip().splitlines()[-2:])[-300:]
        why = f"the payload's process printed no result (exit {done.returncode}): {tail}"
        return [{"id": payload, "attack": "error", "detail": why, "seconds": seconds}]
    if Path(out["tree"]).resolve() != tree.resolve():
        why = f"the payload ran the codegen of {out['tree']}, not of {tree}"
        return [{"id": payload, "attack": "error", "detail": why, "seconds": seconds}]
    return [{**r, "seconds": seconds} for r in out["results"]]


def run_tree(
    tree: Path, payloads: list[str], backends: list[str], timeout_s: float
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for payload in payloads:
        if payload in SANDBOX_FREE:
            chosen = ["none"]
        elif payload in BWRAP_ONLY:
            chosen = ["bwrap"]
        else:
            chosen = backends
        for backend in chosen:
            for entry in run_payload(tree, payload, backend, timeout_s):
                results.append({"backend": backend, **entry})
    counts = Counter(r["attack"] for r in results)
    return {
        "tree": str(tree),
        "commit": commit_of(tree),
        "counts": {k: counts.get(k, 0) for k in ("succeeded", "blocked", "error")},
        "results": results,
    }


def table(runs: list[dict[str, Any]]) -> str:
    lines = []
    for run in runs:
        lines.append(f"{run['tree']} ({run['commit']}): {run['counts']}")
        for r in run["results"]:
            lines.append(f"  {r['attack']:9} {r['id']:42} {r['backend']:6} {r['detail'][:110]}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        action="append",
        type=Path,
        required=True,
        help="a checkout of the commit to attack (repeat for several)",
    )
    parser.add_argument("--backend", choices=("docker", "bwrap", "both"), default="docker")
    parser.add_argument("--only", default="", help="payload numbers, comma separated")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per payload")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--store",
        action="store_true",
        help="with two trees (before, after): write benchmarks/results/verdict_payloads.json",
    )
    args = parser.parse_args()
    if args.store and len(args.tree) != 2:
        print(
            "payloads: error: --store compares two trees: --tree BEFORE --tree AFTER",
            file=sys.stderr,
        )
        return 2
    chosen = [p.strip() for p in args.only.split(",") if p.strip()] or list(payload_side.PAYLOADS)
    unknown = [p for p in chosen if p not in payload_side.PAYLOADS]
    if unknown:
        print(
            f"payloads: error: unknown payload {unknown[0]!r}; "
            f"choose from {', '.join(payload_side.PAYLOADS)}",
            file=sys.stderr,
        )
        return 2
    missing = [t for t in args.tree if not (t / "codegen" / "__init__.py").is_file()]
    if missing:
        print(f"payloads: error: {missing[0]} is not a checkout (no codegen/)", file=sys.stderr)
        return 2
    backends = ["docker", "bwrap"] if args.backend == "both" else [args.backend]
    runs = [run_tree(t.resolve(), chosen, backends, args.timeout) for t in args.tree]
    print(json.dumps({"runs": runs}, indent=1) if args.json else table(runs))
    if args.store:
        RESULT.write_text(json.dumps(stored(runs, sys.argv[1:]), indent=1) + "\n")
    return 0


RESULT = ROOT / "benchmarks/results/verdict_payloads.json"


def stored(runs: list[dict[str, Any]], argv: list[str]) -> dict[str, Any]:
    """The two trees' runs side by side: per tree its commit and counts, per payload and
    backend what each tree made of the attack (the details stay in the printed JSON)."""
    before, after = runs
    outcome = {f"{r['id']} ({r['backend']})": {"before": r["attack"]} for r in before["results"]}
    for r in after["results"]:
        outcome.setdefault(f"{r['id']} ({r['backend']})", {})["after"] = r["attack"]
    return {
        "command": ".venv/bin/python -m benchmarks.verdicts.payloads " + " ".join(argv),
        "machine": machine(),
        "before": {"commit": before["commit"], **before["counts"]},
        "after": {"commit": after["commit"], **after["counts"]},
        "attacks": outcome,
    }


if __name__ == "__main__":
    sys.exit(main())
