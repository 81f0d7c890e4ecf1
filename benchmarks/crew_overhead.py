"""Crew overhead: seconds per request through Dagster versus a plain in-process loop.

Both paths call the same agent functions and the same sandbox; the scripted OpenAI-compatible
server (tests/fakes/openai_server.py) answers instantly, so the difference is orchestration.

* baseline ``in_process_loop``: ``agents.crew.run_crew`` in this process, one sandbox kept
  open across requests;
* ``dagster_multiprocess``: what ``codegen generate`` does: add the partition, run the
  ``codegen_request`` job with the multiprocess executor (one process per step) on a real
  SQLite instance, including the blocking sandbox check and the bandit check;
* ``dagster_in_process``: the same assets and checks with ``materialize`` (in-process executor).

The LLM response cache is off so every request makes every call. Prints one JSON object:
seconds per request for each path, ratios against the baseline, and the prompt tokens each
agent sent per request.

    .venv/bin/python benchmarks/crew_overhead.py [--requests N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The scripted server lives with the tests. The project root goes first so that test folders
# named like packages (tests/sandbox, no __init__.py) never shadow the real packages.
sys.path[:0] = [str(ROOT)]
sys.path.append(str(ROOT / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3, help="requests per path")
    parser.add_argument("--backend", default="docker", help="sandbox backend")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="crew-overhead-"))
    os.environ.update(
        {
            "CODEGEN_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster_home"),
            "CODEGEN_CONFIG": str(home / "codegen.toml"),
            "CODEGEN_LLM__CACHE": "false",
            "CODEGEN_SANDBOX__BACKEND": args.backend,
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
            "OPENAI_API_KEY": "sk-benchmark",
        }
    )
    (home / "dagster_home").mkdir(parents=True)
    (home / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

    from dagster import DagsterInstance, materialize
    from fakes.openai_server import ScriptedOpenAIServer, primes_handler

    from agents.crew import run_crew
    from agents.requests import RequestStore
    from assets import codegen
    from assets.resources import LLMResource, RetrieverResource, SandboxResource, SettingsResource
    from orchestration.cli.generate import run_request
    from sandbox import open_sandbox
    from settings import get_settings

    def text(i: int, path: str) -> str:
        return f"Write primes_up_to(n) with the Sieve of Eratosthenes ({path} #{i})."

    with ScriptedOpenAIServer(handler=primes_handler) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        get_settings.cache_clear()
        settings = get_settings()
        llm_resource = LLMResource.from_settings(settings)
        assert llm_resource.cache_dir is None

        # Baseline: the plain in-process loop.
        loop_times: list[float] = []
        loop_tokens: list[dict[str, int]] = []
        box = open_sandbox(args.backend, pool_size=1)
        try:
            llm = llm_resource.client()
            for i in range(args.requests):
                t0 = time.perf_counter()
                out = run_crew(text(i, "loop"), llm=llm, sandbox=box)
                loop_times.append(time.perf_counter() - t0)
                assert out.status.value == "passed", out.reason
                loop_tokens.append({r: a.prompt_tokens for r, a in out.usage.per_agent.items()})
        finally:
            box.close()

        # Dagster, as `codegen generate` runs it (multiprocess executor).
        mp_times: list[float] = []
        mp_tokens: list[dict[str, int]] = []
        for i in range(args.requests):
            t0 = time.perf_counter()
            report = run_request(settings, text(i, "dagster"), {})
            mp_times.append(time.perf_counter() - t0)
            assert report["status"] == "passed", report["reason"]
            mp_tokens.append(
                {r: a["prompt_tokens"] for r, a in report["usage"]["per_agent"].items()}
            )

        # Dagster, in-process executor.
        ip_times: list[float] = []
        instance = DagsterInstance.get()
        resources = {
            "settings": SettingsResource(),
            "llm": llm_resource,
            "sandbox": SandboxResource.from_settings(settings),
            "retriever": RetrieverResource(),
        }
        selection = [
            codegen.request_spec,
            codegen.test_suite,
            codegen.retrieved_context,
            codegen.solution_code,
            codegen.documentation,
            codegen.solution_passes_tests,
            codegen.solution_bandit,
        ]
        for i in range(args.requests):
            t0 = time.perf_counter()
            req = RequestStore(settings.requests_dir).add(text(i, "in-process"))
            instance.add_dynamic_partitions("requests", [req.id])
            result = materialize(
                selection, partition_key=req.id, instance=instance, resources=resources
            )
            ip_times.append(time.perf_counter() - t0)
            assert result.success

    def per_agent_mean(rows: list[dict[str, int]]) -> dict[str, float]:
        roles = sorted({r for row in rows for r in row})
        return {r: round(statistics.mean(row.get(r, 0) for row in rows), 1) for r in roles}

    loop_s = statistics.median(loop_times)
    mp_s = statistics.median(mp_times)
    ip_s = statistics.median(ip_times)
    result: dict[str, Any] = {
        "benchmark": "crew_overhead",
        "requests_per_path": args.requests,
        "sandbox_backend": args.backend,
        "baseline": "in_process_loop",
        "seconds_per_request": {
            "in_process_loop": round(loop_s, 2),
            "dagster_multiprocess": round(mp_s, 2),
            "dagster_in_process": round(ip_s, 2),
        },
        "ratio_vs_baseline": {
            "dagster_multiprocess": round(mp_s / loop_s, 1),
            "dagster_in_process": round(ip_s / loop_s, 1),
        },
        "all_seconds": {
            "in_process_loop": [round(t, 2) for t in loop_times],
            "dagster_multiprocess": [round(t, 2) for t in mp_times],
            "dagster_in_process": [round(t, 2) for t in ip_times],
        },
        "prompt_tokens_per_request": {
            "in_process_loop": per_agent_mean(loop_tokens),
            "dagster_multiprocess": per_agent_mean(mp_tokens),
        },
        "notes": "Dagster paths also run the blocking sandbox check and the bandit check; "
        "the loop keeps one sandbox open, each Dagster step opens its own.",
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
