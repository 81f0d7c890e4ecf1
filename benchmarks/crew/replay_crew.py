"""The crew evaluated from a recording: a MapCoder file imported with ``codegen replay
import``, served by ``codegen replay serve``, and ``codegen eval humaneval`` (crew mode) run
against it; the server's log then shows which reply reached each task's programmer.

    .venv/bin/python -m benchmarks.crew.replay_crew
        [--source /work/shared/replays/mapcoder/GPT4-Turbo-MapCoder-5-5-Human-Python3-0-1.jsonl]
        [--limit N]

Everything goes through the console scripts (``codegen replay import``, ``codegen replay
serve --port 0 --log LOG``, ``codegen eval humaneval --json``) in a fresh ``CODEGEN_HOME``.
Prints one JSON object: tasks whose programmer got HTTP 200 with the entry recorded for that
same task (``served.task == X-Codegen-Task``), requests by role and status, the evaluation's
pass@1 and solved count, and the published solved count. Not part of the test run.
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
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import replay_server

DEFAULT = Path("/work/shared/replays/mapcoder/GPT4-Turbo-MapCoder-5-5-Human-Python3-0-1.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    home = Path(tempfile.mkdtemp(prefix="replay-crew-"))
    env = {**os.environ, "CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    (home / "dagster").mkdir()
    recording = home / "recording.jsonl"
    log = home / "replay-log.jsonl"
    subprocess.run(
        [codegen, "replay", "import", "--format", "mapcoder", str(args.source), str(recording)],
        check=True,
        env=env,
        stdout=sys.stderr,
    )
    with replay_server(codegen, recording, log, env, "replay_crew") as base_url:
        run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
        limit = ["--limit", str(args.limit)] if args.limit else []
        started = time.perf_counter()
        done = subprocess.run(
            [codegen, "eval", "humaneval", "--json", *limit],
            env=run_env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"eval printed no JSON (exit {done.returncode}): {done.stderr[-2000:]}"
        ) from None
    served = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    programmer = [r for r in served if r.get("role") == "programmer"]
    right = {
        r["task"]
        for r in programmer
        if r["status"] == 200 and r.get("served", {}).get("task") == r["task"]
    }
    wrong = [r for r in programmer if r["status"] == 200 and r["served"]["task"] != r["task"]]
    rows = [json.loads(x) for x in args.source.read_text().splitlines() if x.strip()]
    expected = len(rows) if not args.limit else args.limit
    print(
        json.dumps(
            {
                "source": str(args.source),
                "tasks": expected,
                "programmer_reached_with_own_task_reply": len(right),
                "programmer_given_another_tasks_reply": len(wrong),
                "requests": dict(
                    Counter(f"{r.get('role')} {r['status']}" for r in served).most_common()
                ),
                "misses": Counter(r.get("error", "")[:80] for r in served if r["status"] != 200),
                "eval_exit": done.returncode,
                "pass_at_k": result.get("pass_at_k"),
                "solved_tasks": result.get("solved_tasks"),
                "crew_statuses": result.get("crew_statuses"),
                "published_solved": sum(bool(r.get("is_solved")) for r in rows),
                "wall_s": round(wall, 1),
                "log": str(log),
            },
            default=dict,
        )
    )


if __name__ == "__main__":
    main()
