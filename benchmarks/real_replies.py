"""Raw real-model replies through the full crew: MapCoder's CoT and Direct runs, replayed.

    .venv/bin/python benchmarks/real_replies.py [--data DIR] [--limit N]
        [--refuse-json-schema {off,vllm-0.5,llama.cpp}] [--files NAME ...]

For each of the three raw-reply files (ChatGPT-CoT, GPT4-Turbo-CoT, Gemini-Direct in
``../shared/replays/mapcoder/``): ``codegen replay import --format mapcoder`` turns it into a
recording (the raw ``responses[-1]`` as the programmer's reply; the roles MapCoder never had
are derived from the public prompt by the importer), ``codegen replay serve`` answers from
it, and ``codegen eval humaneval --json`` runs the whole crew against it in a fresh home. The
programmer's raw reply goes through ``codegen.agents.replies`` like any model's.

``--refuse-json-schema`` puts a loopback proxy in front of the replay server that answers
every ``response_format: json_schema`` request the way that server family does (the bodies
in ``codegen/replay/scripted.py``), so the run shows the analyzer falling back and every
request still getting through; ``codegen info`` of that home shows the remembered mode.

Prints one JSON object per file: published solved count, the crew's solved count, the
parser's acceptance of the raw replies (no execution), crew statuses, requests by role and
status, and the structured-outputs mode found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = ROOT.parent / "shared" / "replays" / "mapcoder"
FILES = (
    "ChatGPT-CoT-Python3-0-1.jsonl",
    "GPT4-Turbo-CoT-Human-Python3-0-1.jsonl",
    "Gemini-Direct-Human-Python3-0-1.jsonl",
)


def parser_acceptance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many raw replies the crew's reply parser turns into code, and how it found it."""
    from codegen.agents.replies import AgentOutputError, extract_module

    found: Counter[str] = Counter()
    rejected: list[str] = []
    for row in rows:
        entry = row["entry_point"]
        header = re.search(rf"^def {re.escape(entry)}\(.*?\).*?:\s*$", row["prompt"], re.M | re.S)
        signature = header.group(0) if header else f"def {entry}()"
        try:
            found[extract_module(row["responses"][-1], [(entry, signature)]).how] += 1
        except AgentOutputError as exc:
            rejected.append(f"{row['task_id']}: {exc}")
    return {"accepted": sum(found.values()), "how": dict(found), "rejected": rejected[:10]}


class RefusingProxy:
    """Forwards to ``upstream``; answers json_schema requests with ``profile``'s refusal."""

    def __init__(self, upstream: str, profile: str) -> None:
        from codegen.replay.scripted import REFUSALS

        self.upstream = upstream.rstrip("/")
        self.status, self.body = REFUSALS[profile]
        self.refused = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _forward(self, method: str, body: bytes | None) -> None:
                path = self.path.removeprefix("/v1")
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower().startswith("x-codegen-") or k.lower() == "content-type"
                }
                request = urllib.request.Request(
                    proxy.upstream + path, data=body, headers=headers, method=method
                )
                try:
                    with urllib.request.urlopen(request, timeout=120) as reply:
                        self._answer(reply.status, reply.read())
                except urllib.error.HTTPError as exc:
                    self._answer(exc.code, exc.read())

            def do_GET(self) -> None:
                self._forward("GET", None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    fmt = json.loads(body or b"{}").get("response_format") or {}
                except ValueError:
                    fmt = {}
                if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
                    proxy.refused += 1
                    self._answer(proxy.status, json.dumps(proxy.body).encode())
                    return
                self._forward("POST", body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def run_file(source: Path, limit: int | None, refuse: str) -> dict[str, Any]:
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    home = Path(tempfile.mkdtemp(prefix="real-replies-"))
    (home / "dagster").mkdir()
    env = {**os.environ, "CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    recording, log = home / "recording.jsonl", home / "replay-log.jsonl"
    imported = subprocess.run(
        [codegen, "replay", "import", "--format", "mapcoder", str(source), str(recording)],
        env=env,
        capture_output=True,
        text=True,
    )
    if imported.returncode != 0:
        raise SystemExit(f"real_replies: error: codegen replay import: {imported.stderr[-500:]}")
    server = subprocess.Popen(
        [codegen, "replay", "serve", str(recording), "--port", "0", "--log", str(log)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    proxy: RefusingProxy | None = None
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        if not line.startswith("OPENAI_BASE_URL="):
            raise SystemExit(f"real_replies: error: replay server did not start: {line!r}")
        base_url = line.split("=", 1)[1]
        if refuse != "off":
            proxy = RefusingProxy(base_url, refuse)
            base_url = proxy.base_url
        run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
        started = time.perf_counter()
        done = subprocess.run(
            [codegen, "eval", "humaneval", "--json", *(["--limit", str(limit)] if limit else [])],
            env=run_env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        info = subprocess.run(
            [codegen, "info", "--json"], env=run_env, capture_output=True, text=True
        )
    finally:
        if proxy is not None:
            proxy.close()
        server.terminate()
        server.wait(timeout=10)
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"real_replies: error: eval printed no JSON (exit {done.returncode}): "
            f"{done.stderr[-1500:]}"
        ) from None
    served = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = [json.loads(x) for x in source.read_text().splitlines() if x.strip()][:limit]
    structured = json.loads(info.stdout).get("structured_outputs") if info.stdout else None
    return {
        "file": source.name,
        "tasks": len(rows),
        "published_solved": sum(bool(r.get("is_solved")) for r in rows),
        "crew_solved": result.get("solved_tasks"),
        "pass_at_k": result.get("pass_at_k"),
        "parser": parser_acceptance(rows),
        "crew_statuses": result.get("crew_statuses"),
        "requests": dict(Counter(f"{r.get('role')} {r['status']}" for r in served).most_common()),
        "refused_json_schema_requests": proxy.refused if proxy else 0,
        "structured_outputs": structured,
        "eval_exit": done.returncode,
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--refuse-json-schema", choices=["off", "vllm-0.5", "llama.cpp"], default="off"
    )
    parser.add_argument("--files", nargs="*", default=list(FILES))
    args = parser.parse_args()
    for name in args.files:
        source = args.data / name
        if not source.exists():
            raise SystemExit(f"real_replies: error: no such file {source}")
        print(json.dumps(run_file(source, args.limit, args.refuse_json_schema)), flush=True)


if __name__ == "__main__":
    main()
