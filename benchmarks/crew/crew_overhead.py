"""Crew overhead: seconds a request spends outside model calls, through Dagster and without.

A scripted OpenAI-compatible server (codegen/replay/scripted.py) answers every call after
``--latency`` seconds and records when each call was in flight. For each request,
``overhead = wall time - time at least one model call was in flight``: orchestration,
process start, sandbox runs, checks. ``overlap`` says whether the test designer's and the
programmer's first calls were in flight at the same time (the design runs them in parallel).

Paths, interleaved request by request so machine load hits all of them alike:

* ``in_process_loop`` (baseline): ``codegen.agents.crew.run_crew`` in this process, one sandbox kept
  open across requests; no Dagster.
* ``codegen_generate``: the CLI as a user runs it, a fresh process per request
  (``codegen generate --json --launch here``: the request job on the threaded in-process
  executor, blocking sandbox check and bandit check included, on a real SQLite instance).
* ``baseline_generate`` (with ``--baseline CHECKOUT``): the same command with ``PYTHONPATH`` at
  another checkout of this repository (``git worktree add /tmp/before-overhead COMMIT``), so
  that side imports its own ``codegen`` with the same interpreter and libraries.
* ``warm_process``: the same request job run the way the CLI runs it, from this process, where
  the interpreter, the imports, the instance and the code location are already loaded (and the
  sandbox pool stays warm): what a request costs without a fresh process.
* ``previous_multiprocess``: the same job on the executor it had before (multiprocess,
  forkserver preloading the code location), run from this process as the CLI used to.

The LLM response cache is off, so every request makes every call. Prints one JSON object. For
``codegen_generate`` (and ``baseline_generate``) it also says where the overhead sits, request
by request: each stretch with no call in flight, named by the calls around it (``start ->
analyzer`` ... ``documenter -> exit``), and how the first stretch divides (``profile``): from
the command's start to its run's first event (interpreter, imports, instance, code location),
from there to the first step's start (the run's creation, planning and start), and from there
to the analyzer's call (inside the step: the model client). One more request, not timed with
the others, runs under ``python -X importtime``: seconds of imports per top-level package
(that flag's own bookkeeping makes them somewhat longer than in a plain run).

    .venv/bin/python -m benchmarks.crew.crew_overhead [--latency 1.0] [--requests 3] \\
        [--baseline /tmp/before-overhead] [--skip-previous]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, machine

# The scripted server lives with the tests. The project root goes first so that test folders
# named like packages (tests/sandbox, no __init__.py) never shadow the real packages.

CODEGEN = str(Path(sys.executable).parent / "codegen")
CLI_FLAGS = ("--json", "--launch", "here")


class CallLog:
    """When each model call was in flight, by agent role (wall-clock seconds)."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()

    def handler(self, role: str, body: dict[str, Any]) -> Any:
        from codegen.replay.scripted import Reply, primes_handler

        start = time.time()
        with self.lock:
            self.calls.append((role, start, start + self.latency_s))
        return Reply.delay(self.latency_s, then=primes_handler(role, body))

    def between(self, start: float, end: float) -> list[tuple[str, float, float]]:
        with self.lock:
            return [c for c in self.calls if start <= c[1] <= end]


def in_flight_seconds(calls: list[tuple[str, float, float]], start: float, end: float) -> float:
    """Length of the union of the calls' intervals, clipped to [start, end]."""
    total, reach = 0.0, start
    for _, a, b in sorted(calls, key=lambda c: c[1]):
        a, b = max(a, reach), min(b, end)
        if b > a:
            total += b - a
            reach = b
    return total


def first_calls_overlap(calls: list[tuple[str, float, float]]) -> float:
    """Seconds the first test_designer and first programmer calls were both in flight."""
    first: dict[str, tuple[float, float]] = {}
    for role, a, b in sorted(calls, key=lambda c: c[1]):
        first.setdefault(role, (a, b))
    if "test_designer" not in first or "programmer" not in first:
        return 0.0
    (a1, b1), (a2, b2) = first["test_designer"], first["programmer"]
    return max(0.0, min(b1, b2) - max(a1, a2))


def idle_gaps(
    calls: list[tuple[str, float, float]], start: float, end: float
) -> list[dict[str, Any]]:
    """The stretches of [start, end] with no model call in flight, named by the calls around
    them ("start -> analyzer", ..., "documenter -> exit"): where the overhead sits."""
    gaps, reach, before = [], start, "start"
    for role, a, b in sorted(calls, key=lambda c: c[1]):
        if a > reach:
            gaps.append({"between": f"{before} -> {role}", "s": round(a - reach, 2)})
        if b > reach:
            reach, before = b, role
    if end > reach:
        gaps.append({"between": f"{before} -> exit", "s": round(end - reach, 2)})
    return gaps


def cpu_seconds() -> float:
    """CPU used by this process and its reaped children (the CLI's ``codegen`` process)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return sum(r.ru_utime + r.ru_stime for r in (own, children))


def measure(log: CallLog, run: Any, instance: Any = None) -> dict[str, Any]:
    cpu = cpu_seconds()
    start = time.time()
    error, run_id = None, None
    try:
        run_id = run()
    except AssertionError as exc:  # a failed request is reported, not timed as a success
        error = str(exc)[-300:] or "request did not pass"
    end = time.time()
    cpu = cpu_seconds() - cpu
    calls = log.between(start, end)
    wall = end - start
    in_flight = in_flight_seconds(calls, start, end)
    return {
        "wall_s": round(wall, 2),
        "model_in_flight_s": round(in_flight, 2),
        "overhead_s": round(wall - in_flight, 2),
        # Less load-dependent than wall time; step processes of the previous executor
        # (children of its forkserver) and Docker containers are not counted.
        "cpu_s": round(cpu, 2),
        "calls": len(calls),
        "first_calls_overlap_s": round(first_calls_overlap(calls), 2),
        "idle_gaps": idle_gaps(calls, start, end),
        **({"profile": run_profile(instance, run_id, start, calls)} if run_id else {}),
        **({"error": error} if error else {}),
    }


def median_gaps(rows: list[dict[str, Any]], field: str = "idle_gaps") -> dict[str, float]:
    by_label: dict[str, list[float]] = {}
    for row in rows:
        if "error" not in row:
            for gap in row[field]:
                by_label.setdefault(gap["between"], []).append(gap["s"])
    return {label: round(statistics.median(v), 2) for label, v in by_label.items()}


def run_profile(
    instance: Any, run_id: str, start: float, calls: list[tuple[str, float, float]]
) -> list[dict[str, Any]]:
    """How the stretch before the first model call divides, from the run's event log: the
    command's start to the run's first event (interpreter, imports, instance, code location),
    to the first step's start (the run's creation, planning, resources, log capture), to the
    first call (inside the analyzer's step: the model client)."""
    logs = instance.all_logs(run_id) if instance is not None else []
    if not logs or not calls:
        return []
    first_event = logs[0].timestamp
    steps = [e.timestamp for e in logs if e.dagster_event and e.dagster_event.is_step_start]
    first_call = min(c[1] for c in calls)
    marks = [("start -> run's first event", start, first_event)]
    if steps:
        marks += [
            ("run's first event -> first step start", first_event, steps[0]),
            ("first step start -> analyzer call", steps[0], first_call),
        ]
    return [{"between": label, "s": round(b - a, 2)} for label, a, b in marks]


def import_profile(env: dict[str, str], text: str) -> dict[str, Any]:
    """One CLI request under ``python -X importtime``: seconds per top-level package."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", CODEGEN, "generate", text, *CLI_FLAGS],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    # By top-level import (what the command asked for, with all it pulled in), and by the
    # package whose own module bodies took the time (self time, whoever imported them).
    cumulative: dict[str, float] = {}
    own: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        # "import time: self [us] | cumulative | imported package"; top level: one space.
        parts = line.split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        self_us, cumulative_us = parts[0].split(":")[1].strip(), parts[1].strip()
        if not (self_us.isdigit() and cumulative_us.isdigit()):
            continue
        package = parts[2].strip().split(".")[0]
        own[package] = own.get(package, 0.0) + int(self_us) / 1e6
        if parts[2].startswith(" ") and not parts[2].startswith("  "):
            cumulative[package] = cumulative.get(package, 0.0) + int(cumulative_us) / 1e6

    def top(times: dict[str, float]) -> dict[str, float]:
        ranked = sorted(times.items(), key=lambda kv: -kv[1])
        return {k: round(v, 2) for k, v in ranked if v >= 0.02}

    return {
        "ok": proc.returncode == 0,
        "total_s": round(sum(cumulative.values()), 2),
        "top_level_s": top(cumulative),
        "own_s": top(own),
    }


def interpreter_start_s() -> float:
    """The interpreter alone, site and .pth files included (best of five)."""
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        best = min(best, time.perf_counter() - t)
    return round(best, 3)


def bytecode_cached(checkout: Path) -> float:
    """The share of the checkout's modules whose bytecode is cached and up to date (``make
    venv`` byte-compiles the package; without it, a Python that writes no bytecode compiles
    each module's source in every process)."""
    sources = list((checkout / "codegen").rglob("*.py"))
    fresh = 0
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        if cached.exists():
            header = cached.read_bytes()[:16]
            stat = source.stat()
            mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (8, 12))
            fresh += mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF
    return round(fresh / len(sources), 2) if sources else 0.0


def commit_of(checkout: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def previous_multiprocess_job() -> Any:
    """The request job as it was: one process per step, forkserver preloading the location."""
    from dagster import AssetSelection, Definitions, define_asset_job, multiprocess_executor

    from codegen.assets.codegen import GROUP, requests_partitions
    from codegen.orchestration.definitions import defs

    job = define_asset_job(
        "codegen_request_previous",
        selection=AssetSelection.groups(GROUP),
        partitions_def=requests_partitions,
        executor_def=multiprocess_executor.configured(
            {
                "start_method": {
                    "forkserver": {"preload_modules": ["codegen.orchestration.definitions"]}
                }
            }
        ),
    )
    return Definitions.merge(defs, Definitions(jobs=[job])).resolve_job_def(job.name)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--requests", type=int, default=3, help="requests per path")
    parser.add_argument("--backend", default="docker", help="sandbox backend")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout whose `codegen generate` runs alongside"
    )
    parser.add_argument(
        "--skip-previous", action="store_true", help="leave out the previous executor's path"
    )
    parser.add_argument(
        "--skip-import-profile", action="store_true", help="no extra -X importtime request"
    )
    return parser.parse_args()


def _use_fresh_home(backend: str) -> None:
    """Points this process and its children at a fresh home: no LLM cache, the embedded
    SQLite instance, a one-box pool of ``backend``."""
    home = Path(tempfile.mkdtemp(prefix="crew-overhead-"))
    os.environ.update(
        {
            "CODEGEN_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster_home"),
            "CODEGEN_CONFIG": str(home / "codegen.toml"),
            "CODEGEN_LLM__CACHE": "false",
            "CODEGEN_SANDBOX__BACKEND": backend,
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
            "OPENAI_API_KEY": "sk-benchmark",
        }
    )
    os.environ.pop("DAGSTER_POSTGRES_URL", None)  # the embedded SQLite instance


def _request_text(i: int, path: str) -> str:
    return f"Write primes_up_to(n) with the Sieve of Eratosthenes ({path} #{i})."


def _measure_round(
    i: int,
    args: argparse.Namespace,
    log: CallLog,
    rows: dict[str, list[dict[str, Any]]],
    context: dict[str, Any],
) -> None:
    """Request ``i`` once on every path, measured into ``rows``; ``context``: the model client
    (``llm``), the open sandbox (``box``), ``settings``, the Dagster ``instance`` and the
    ``previous`` executor's job."""
    from dagster import execute_job

    from codegen.agents.crew import run_crew
    from codegen.assets.codegen import requests_partitions
    from codegen.orchestration.launch import run_in_this_process
    from codegen.requests.store import RequestStore

    settings, instance = context["settings"], context["instance"]

    def loop(i: int = i) -> None:
        out = run_crew(_request_text(i, "loop"), llm=context["llm"], sandbox=context["box"])
        assert out.status.value == "passed", out.reason

    def cli(i: int = i, checkout: Path | None = None) -> str:
        env = dict(os.environ)
        if checkout is not None:
            env["PYTHONPATH"] = str(checkout)
        proc = subprocess.run(
            [CODEGEN, "generate", _request_text(i, "cli"), *CLI_FLAGS],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        summary = json.loads(proc.stdout)
        assert summary["status"] == "passed"
        return summary["run_id"]

    def warm(i: int = i) -> str:
        req = RequestStore(settings.requests_dir).add(_request_text(i, "warm"))
        run_id, success = run_in_this_process(instance, req.id)
        assert success
        return run_id

    def multiprocess(i: int = i) -> None:
        req = RequestStore(settings.requests_dir).add(_request_text(i, "previous"))
        instance.add_dynamic_partitions(requests_partitions.name, [req.id])
        result = execute_job(
            context["previous"],
            instance=instance,
            tags={"dagster/partition": req.id},
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        assert result.success

    rows["in_process_loop"].append(measure(log, loop))
    # Which checkout goes first alternates, so a drift in load falls on both.
    sides = [("codegen_generate", None), ("baseline_generate", args.baseline)]
    for path, checkout in sides[:: 1 if i % 2 == 0 else -1]:
        if path in rows:
            rows[path].append(measure(log, partial(cli, i, checkout), instance))
    rows["warm_process"].append(measure(log, warm, instance))
    if not args.skip_previous:
        rows["previous_multiprocess"].append(measure(log, multiprocess))


def _measure_paths(
    args: argparse.Namespace,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Every request on every path against the scripted server: the measurements per path,
    and the import profile (empty with ``--skip-import-profile``)."""
    from dagster._core.definitions.reconstruct import ReconstructableJob

    import codegen.orchestration.definitions  # noqa: F401  (loaded once, as a worker would)
    from codegen.assets.resources import LLMResource, close_shared_sandboxes
    from codegen.orchestration.instance import configured_instance
    from codegen.replay.scripted import ScriptedOpenAIServer
    from codegen.sandbox import open_sandbox
    from codegen.settings import get_settings

    log = CallLog(args.latency)
    rows: dict[str, list[dict[str, Any]]] = {
        "in_process_loop": [],
        "codegen_generate": [],
        **({"baseline_generate": []} if args.baseline else {}),
        "warm_process": [],
        **({} if args.skip_previous else {"previous_multiprocess": []}),
    }
    imports: dict[str, Any] = {}
    with ScriptedOpenAIServer(handler=log.handler) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        get_settings.cache_clear()
        settings = get_settings()
        llm_resource = LLMResource.from_settings(settings)
        assert llm_resource.cache_dir is None
        instance = configured_instance(settings)
        # By file: the children (forkserver) load this script to rebuild the job.
        previous = ReconstructableJob.for_file(__file__, "previous_multiprocess_job")
        box = open_sandbox(args.backend, pool_size=1)
        try:
            context = {
                "llm": llm_resource.client(),
                "box": box,
                "settings": settings,
                "instance": instance,
                "previous": previous,
            }
            for i in range(args.requests):
                _measure_round(i, args, log, rows, context)
            if not args.skip_import_profile:
                imports = import_profile(dict(os.environ), _request_text(0, "importtime"))
        finally:
            box.close()
            close_shared_sandboxes()
    return rows, imports


def _median(rows: dict[str, list[dict[str, Any]]], path: str, key: str) -> float:
    ok = [r[key] for r in rows[path] if "error" not in r and r.get(key) is not None]
    return round(statistics.median(ok), 2) if ok else float("nan")


def _result(
    args: argparse.Namespace,
    rows: dict[str, list[dict[str, Any]]],
    imports: dict[str, Any],
    load_at_start: list[float],
) -> dict[str, Any]:
    """The JSON printed."""
    baseline = _median(rows, "in_process_loop", "overhead_s")
    cli_paths = [p for p in ("codegen_generate", "baseline_generate") if p in rows]
    return {
        "benchmark": "crew_overhead",
        "command": ".venv/bin/python -m benchmarks.crew.crew_overhead " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "latency_s_per_call": args.latency,
        "requests_per_path": args.requests,
        "sandbox_backend": args.backend,
        "baseline": "in_process_loop",
        **(
            {"baseline_checkout": {"path": str(args.baseline), "commit": commit_of(args.baseline)}}
            if args.baseline
            else {}
        ),
        "this_checkout_commit": commit_of(ROOT),
        "median_overhead_s": {p: _median(rows, p, "overhead_s") for p in rows},
        "median_wall_s": {p: _median(rows, p, "wall_s") for p in rows},
        "median_cpu_s": {p: _median(rows, p, "cpu_s") for p in rows},
        "overhead_vs_baseline_s": {
            p: round(_median(rows, p, "overhead_s") - baseline, 2)
            for p in rows
            if p != "in_process_loop"
        },
        "test_designer_and_programmer_overlap": {
            p: all(r["first_calls_overlap_s"] > 0 for r in rows[p]) for p in rows
        },
        "target": "codegen_generate overhead <= 3.5 s per request, first calls overlapping",
        "target_met": _median(rows, "codegen_generate", "overhead_s") <= 3.5
        and all(r["first_calls_overlap_s"] > 0 for r in rows["codegen_generate"]),
        "failed_requests": {p: sum("error" in r for r in rows[p]) for p in rows},
        **{f"{p}_idle_gaps_s": median_gaps(rows[p]) for p in [*cli_paths, "warm_process"]},
        **{f"{p}_profile_s": median_gaps(rows[p], "profile") for p in cli_paths},
        "codegen_generate_run_started_after_s": median_gaps(
            rows["codegen_generate"], "profile"
        ).get("start -> run's first event", float("nan")),
        "interpreter_start_s": interpreter_start_s(),
        # Unset, each fresh process writes the bytecode of the modules it compiled; set, a
        # checkout's own modules are compiled from source in every process.
        "python_dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
        "bytecode_cached_share": {
            "codegen_generate": bytecode_cached(ROOT),
            **({"baseline_generate": bytecode_cached(args.baseline)} if args.baseline else {}),
        },
        "import_profile": imports,
        "runs": rows,
        "load_average_at_start": load_at_start,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    args = _parse_args()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    _use_fresh_home(args.backend)
    rows, imports = _measure_paths(args)
    print(json.dumps(_result(args, rows, imports, load_at_start), indent=2))


if __name__ == "__main__":
    main()
