"""Throughput and queue behaviour of the containerized deployment under a burst of requests.

Brings up a fresh docker deployment (its own compose project, volumes and UI port; the images
as `make deploy-images` builds them), with the scripted OpenAI-compatible server
(codegen/replay/scripted.py) on the Docker bridge answering every call after ``--latency``
seconds. Then ``codegen.deploy.load.run_load``: ``--cli`` requests through ``codegen generate`` in
one-off containers and ``--inbox`` files dropped into the inbox, all at once; with ``--faults``
the daemon is SIGKILLed and restarted once a third have ended, and one run's container is
SIGKILLed. The LLM response cache is off, so every request makes every call.

Prints one JSON object: requests per minute, statuses, runs (one per request, plus one retry
per killed run), the queue (most runs queued and in flight at once, queue wait p50/p95), and
the faults with their times. Baseline (same invocation): ``--baseline`` runs the same burst
without faults first, on the same deployment.

    .venv/bin/python -m benchmarks.deploy.deploy_load [--cli 10] [--inbox 20] [--faults] \
        [--baseline]
"""

from __future__ import annotations

import argparse
import json
import socket
import uuid
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", type=int, default=10, help="requests through the CLI")
    parser.add_argument("--inbox", type=int, default=20, help="requests dropped into the inbox")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per model call")
    parser.add_argument("--faults", action="store_true", help="kill the daemon and one run")
    parser.add_argument("--baseline", action="store_true", help="the same burst without faults")
    args = parser.parse_args()

    from codegen.deploy.images import build_all
    from codegen.deploy.load import leftover_containers, run_load
    from codegen.deploy.stack import Stack, host_address_for_containers
    from codegen.replay.scripted import Reply, ScriptedOpenAIServer, primes_handler

    def handler(role: str, body: dict[str, Any]) -> Any:
        return Reply.delay(args.latency, primes_handler(role, body))

    build_all()
    project = f"codegen-bench-{uuid.uuid4().hex[:8]}"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        ui_port = sock.getsockname()[1]
    out: dict[str, Any] = {"cli": args.cli, "inbox": args.inbox, "latency_s": args.latency}
    with ScriptedOpenAIServer(handler=handler, host=host_address_for_containers()) as server:
        stack = Stack(
            {
                "COMPOSE_PROJECT_NAME": project,
                "CODEGEN_UI_PORT": str(ui_port),
                "CODEGEN_HOME_VOLUME": f"{project}-home",
                "OPENAI_BASE_URL": f"http://host.docker.internal:{server.port}/v1",
                "OPENAI_API_KEY": "sk-benchmark",
            }
        )
        try:
            stack.up()
            home = stack.home_path()
            # Every request makes every model call (settings file in the shared volume).
            (home / "codegen.toml").write_text("[llm]\ncache = false\n")
            if args.baseline:
                base, _ = run_load(
                    stack, home, cli_requests=args.cli, inbox_requests=args.inbox, faults=False
                )
                out["baseline_no_faults"] = base.summary()
            result, _ = run_load(
                stack, home, cli_requests=args.cli, inbox_requests=args.inbox, faults=args.faults
            )
            out["with_faults" if args.faults else "no_faults"] = result.summary()
            out["leftover_containers"] = leftover_containers(result.container_hosts)
            out["llm_calls"] = len(server.requests)
        finally:
            stack.down(volumes=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
