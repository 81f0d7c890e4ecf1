"""Raw real-model replies through the full crew: MapCoder's recorded runs, replayed.

    .venv/bin/python -m benchmarks.crew.real_replies [--dataset {humaneval,mbpp}] [--data DIR]
        [--limit N] [--refuse-json-schema {off,vllm-0.5,llama.cpp}] [--files NAME ...]
        [--mbpp-set FILE]

HumanEval (default): the three raw-reply files (ChatGPT-CoT, GPT4-Turbo-CoT, Gemini-Direct in
``../shared/replays/mapcoder/``). MBPP (``--dataset mbpp``, or a ``--data`` folder whose name
says mbpp): the three files in ``../shared/replays/mapcoder-mbpp/``. For each file:
``codegen replay import --format mapcoder`` turns it into a recording (the raw
``responses[-1]`` as the programmer's reply; the roles MapCoder never had are derived from the
public prompt and visible examples by the importer), ``codegen replay serve`` answers from
it, and ``codegen eval humaneval --json`` (MBPP: ``codegen eval mbpp --tasks FILE --json``)
runs the whole crew against it in a fresh home. The
programmer's raw reply goes through ``codegen.agents.replies`` like any model's.

MBPP: a task file is written from the file's own rows (``task_id``/``name``, ``prompt``,
``entry_point``, and the row's own ``test``: the test the authors ran, which in 394 of 397
tasks leaves out the visible example). The visible examples (``sample_io``, what the crew
sees) are the row's own where it has them, else the 397-task set's (``--mbpp-set``). The
importer reads its tasks from that same file (``--tasks``) and the crew runs on it with
``codegen eval mbpp --tasks FILE --json``.

``--refuse-json-schema`` puts a loopback proxy in front of the replay server that answers
every ``response_format: json_schema`` request the way that server family does (the bodies
in ``codegen/replay/scripted.py``), so the run shows the analyzer falling back and every
request still getting through; ``codegen info`` of that home shows the remembered mode.

Prints one JSON object per file: published solved count, the crew's solved count, the
parser's acceptance of the raw replies (no execution), crew statuses, requests by role and
status, the structured-outputs mode found, and every task where the crew's verdict differs
from the published ``is_solved``, with a first category: ``parser`` (the code the crew ran
defines something other than what MapCoder's harness extracted, ``source_codes[-1]``) or
``harness`` (the same definitions, a different verdict).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED, replay_server


@dataclass(frozen=True)
class Dataset:
    name: str  # humaneval or mbpp
    data: Path  # the folder of MapCoder results files
    files: tuple[str, ...]


DATASETS = {
    "humaneval": Dataset(
        "humaneval",
        SHARED / "replays" / "mapcoder",
        (
            "ChatGPT-CoT-Python3-0-1.jsonl",
            "GPT4-Turbo-CoT-Human-Python3-0-1.jsonl",
            "Gemini-Direct-Human-Python3-0-1.jsonl",
        ),
    ),
    "mbpp": Dataset(
        "mbpp",
        SHARED / "replays" / "mapcoder-mbpp",
        (
            "GPT4-Turbo-CoT-MBPP-Python3-0-1.jsonl",
            "GPT4-Turbo-MapCoder-3-5-MBPP-Python3-0-1.jsonl",
            "ChatGPT-MapCoder-3-5-MBPP-Python3-0-1.jsonl",
        ),
    ),
}
DEFAULT_MBPP_SET = SHARED / "datasets" / "mbpp" / "mbpp-multiple-397.jsonl"


def row_id(row: dict[str, Any]) -> str:
    return str(row.get("task_id") or row["name"])


def write_task_file(rows: list[dict[str, Any]], mbpp_set: Path | None, out: Path) -> int:
    """MBPP: the task file written from the rows, each with its own test; the visible
    examples are the row's ``sample_io``, else the set's. Returns how many came from the set."""
    visible: dict[str, list[str]] = {}
    if mbpp_set is not None and mbpp_set.exists():
        for line in mbpp_set.read_text().splitlines():
            if line.strip():
                task = json.loads(line)
                visible[row_id(task)] = task.get("sample_io") or task.get("given_tests") or []
    from_set = 0
    lines = []
    for row in rows:
        examples = row.get("sample_io")
        if examples is None:
            examples = visible.get(row_id(row), [])
            from_set += bool(examples)
        task = {
            "task_id": row_id(row),
            "prompt": row["prompt"],
            "entry_point": row["entry_point"],
            "test": row["test"],
            "sample_io": examples,
        }
        lines.append(json.dumps(task) + "\n")
    out.write_text("".join(lines))
    return from_set


def parser_acceptance(source: Path, tasks_file: Path | None, limit: int | None) -> dict[str, Any]:
    """How many raw replies the crew's reply parser turns into code, and how it found it,
    against the signature of the derived spec the crew gets."""
    from codegen.agents.replies import AgentOutputError, extract_module
    from codegen.evaluation.tasks import read_task_file
    from codegen.replay.derived import derived_spec
    from codegen.replay.importers import mapcoder_rows

    tasks = read_task_file(tasks_file) if tasks_file is not None else None
    found: Counter[str] = Counter()
    rejected: list[str] = []
    for problem, reply in itertools.islice(mapcoder_rows(source, tasks), limit):
        function = derived_spec(problem)["functions"][0]
        try:
            found[extract_module(reply, [(function["name"], function["signature"])]).how] += 1
        except AgentOutputError as exc:
            rejected.append(f"{problem.task_id}: {exc}")
    return {"accepted": sum(found.values()), "how": dict(found), "rejected": rejected[:10]}


def _definitions(code: str | None) -> set[str] | None:
    """The top-level functions and classes of ``code``, as AST dumps (None: no code)."""
    if not code:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {ast.dump(n) for n in tree.body if isinstance(n, defs)}


def disagreements(rows: list[dict[str, Any]], results_dir: Path) -> list[dict[str, Any]]:
    """Every task where the crew's verdict differs from the published ``is_solved``."""
    from codegen.evaluation.tasks import safe_key

    found = []
    for row in rows:
        key = safe_key(row_id(row))
        scores_path = results_dir / "scores" / f"{key}.json"
        if not scores_path.exists():  # an outage left it unscored (listed in "errors")
            found.append({"task": row_id(row), "category": "unscored"})
            continue
        scores = json.loads(scores_path.read_text())["scores"]
        sample = json.loads((results_dir / "samples" / f"{key}.json").read_text())
        ours, candidate = scores[0], sample["candidates"][0]
        if bool(ours["passed"]) == bool(row.get("is_solved")):
            continue
        theirs = row.get("source_codes") or [None]
        same = _definitions(candidate.get("code")) == _definitions(theirs[-1])
        found.append(
            {
                "task": row_id(row),
                "published": bool(row.get("is_solved")),
                "crew": bool(ours["passed"]),
                "category": "harness" if same else "parser",
                "crew_status": candidate.get("status"),
                "crew_reason": str(candidate.get("reason", ""))[:200],
                "score_message": str(ours.get("message", ""))[:200],
            }
        )
    return found


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


def run_file(
    source: Path, limit: int | None, refuse: str, dataset: str, mbpp_set: Path | None
) -> dict[str, Any]:
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    home = Path(tempfile.mkdtemp(prefix="real-replies-"))
    (home / "dagster").mkdir()
    env = {**os.environ, "CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    recording, log = home / "recording.jsonl", home / "replay-log.jsonl"
    rows = [json.loads(x) for x in source.read_text().splitlines() if x.strip()]
    tasks_file: Path | None = None
    visible_from_set = 0
    if dataset == "mbpp":
        tasks_file = home / f"{source.stem}-tasks.jsonl"
        visible_from_set = write_task_file(rows, mbpp_set, tasks_file)
    imported = subprocess.run(
        [
            codegen,
            "replay",
            "import",
            "--format",
            "mapcoder",
            str(source),
            str(recording),
            *(["--tasks", str(tasks_file)] if tasks_file else []),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if imported.returncode != 0:
        raise SystemExit(f"real_replies: error: codegen replay import: {imported.stderr[-500:]}")
    proxy: RefusingProxy | None = None
    task_set = ["mbpp", "--tasks", str(tasks_file)] if tasks_file else ["humaneval"]
    with replay_server(codegen, recording, log, env, "real_replies") as base_url:
        try:
            if refuse != "off":
                proxy = RefusingProxy(base_url, refuse)
                base_url = proxy.base_url
            run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
            started = time.perf_counter()
            done = subprocess.run(
                [
                    codegen,
                    "eval",
                    *task_set,
                    "--json",
                    *(["--limit", str(limit)] if limit else []),
                ],
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
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"real_replies: error: eval printed no JSON (exit {done.returncode}): "
            f"{done.stderr[-1500:]}"
        ) from None
    served = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = rows[:limit]
    structured = json.loads(info.stdout).get("structured_outputs") if info.stdout else None
    differ = disagreements(rows, Path(result["results_dir"]))
    return {
        "file": source.name,
        "dataset": dataset,
        "tasks": len(rows),
        "published_solved": sum(bool(r.get("is_solved")) for r in rows),
        "crew_solved": result.get("solved_tasks"),
        "pass_at_k": result.get("pass_at_k"),
        "parser": parser_acceptance(source, tasks_file, limit),
        "crew_statuses": result.get("crew_statuses"),
        "precision": result.get("precision"),
        "visible_examples_from_set": visible_from_set,
        "disagreements": differ,
        "disagreements_by_category": dict(Counter(d["category"] for d in differ)),
        "requests": dict(Counter(f"{r.get('role')} {r['status']}" for r in served).most_common()),
        "refused_json_schema_requests": proxy.refused if proxy else 0,
        "structured_outputs": structured,
        "eval_exit": done.returncode,
        "eval_errors": result.get("errors"),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        default=None,
        help="default: mbpp when the --data folder's name says mbpp, else humaneval",
    )
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--refuse-json-schema", choices=["off", "vllm-0.5", "llama.cpp"], default="off"
    )
    parser.add_argument("--files", nargs="*", default=None)
    parser.add_argument(
        "--mbpp-set",
        type=Path,
        default=DEFAULT_MBPP_SET,
        help="MBPP: the 397-task set, for the visible examples of rows without sample_io",
    )
    args = parser.parse_args()
    name = args.dataset or (
        "mbpp" if args.data is not None and "mbpp" in args.data.name.lower() else "humaneval"
    )
    dataset = DATASETS[name]
    data = args.data or dataset.data
    for file in args.files or dataset.files:
        source = data / file
        if not source.exists():
            raise SystemExit(f"real_replies: error: no such file {source}")
        result = run_file(source, args.limit, args.refuse_json_schema, name, args.mbpp_set)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
