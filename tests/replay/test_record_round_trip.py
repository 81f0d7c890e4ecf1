"""``--record`` gives a recording that replays (issue 49): every call recorded whatever the
response cache or the evaluation store holds, keyed so that ``codegen replay serve`` answers a
later ``codegen generate`` of the same text (a new request id) and ``codegen eval`` of the same
tasks; a ``--record`` that cannot record says so in one line and fails.

``codegen generate`` runs as a subprocess, as a user runs it: the run executes in the CLI's own
process, where the settings it read first were the bug.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest

from codegen.agents.llm import REQUEST_HEADER, request_key
from codegen.orchestration.cli import main
from codegen.replay.recording import Entry, read_recording, write_recording
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.replay.server import ReplayServer

CODEGEN = str(Path(sys.executable).parent / "codegen")
REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
ROLES = {"analyzer", "test_designer", "programmer", "reviewer", "documenter"}


def generate(*args: str, base_url: str) -> subprocess.CompletedProcess[str]:
    # No key at all: the scripted and replay endpoints need none.
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env |= {"OPENAI_BASE_URL": base_url, "CODEGEN_SANDBOX__POOL_SIZE": "1"}
    return subprocess.run(
        [CODEGEN, "generate", "--json", "--launch", "here", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@contextmanager
def replay_serve(recording: Path) -> Iterator[str]:
    """``codegen replay serve RECORDING`` on a free port; yields its OPENAI_BASE_URL."""
    proc = subprocess.Popen(
        [CODEGEN, "replay", "serve", str(recording), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("OPENAI_BASE_URL="), line
        yield line.removeprefix("OPENAI_BASE_URL=")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine: cleanup, not what is tested
            proc.kill()
            proc.wait()


def solution(out: dict[str, Any]) -> str:
    return (Path(out["artifact_dir"]) / "solution.py").read_text()


@pytest.mark.docker
def test_a_recorded_request_replays_through_generate_with_no_model(tmp_path: Path) -> None:
    record = tmp_path / "request.jsonl"
    with ScriptedOpenAIServer(handler=primes_handler) as scripted:
        first = generate("--record", str(record), REQUEST, base_url=scripted.base_url)
    assert first.returncode == 0, first.stderr[-3000:]
    recorded = json.loads(first.stdout)
    # The scripted model is gone: only the recording answers, by the text's key (the request
    # id is new, and the spacing retyped).
    with replay_serve(record) as base_url:
        again = generate(REQUEST.replace(" ", "  "), base_url=base_url)
    assert again.returncode == 0, again.stderr[-3000:]
    replayed = json.loads(again.stdout)
    assert replayed["request_id"] != recorded["request_id"]
    assert replayed["status"] == recorded["status"] == "passed"
    assert (replayed["tests_passed"], replayed["rounds"]) == (
        recorded["tests_passed"],
        recorded["rounds"],
    )
    assert solution(replayed) == solution(recorded)
    assert f"recorded 5 replies to {record}" in first.stderr


@pytest.mark.docker
def test_record_calls_the_model_even_when_the_cache_holds_every_reply(tmp_path: Path) -> None:
    record = tmp_path / "request.jsonl"
    with ScriptedOpenAIServer(handler=primes_handler) as scripted:
        warm = generate(REQUEST, base_url=scripted.base_url)
        assert warm.returncode == 0, warm.stderr[-3000:]
        calls = len([r for r in scripted.requests if r.method == "POST"])
        proc = generate("--record", str(record), REQUEST, base_url=scripted.base_url)
        posts = [r for r in scripted.requests if r.method == "POST"][calls:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["cache_hits"] == 0 and len(posts) == calls
    loaded = read_recording(record)
    assert len(loaded.entries) == len(posts) and {e.role for e in loaded.entries} == ROLES
    assert {e.request for e in loaded.entries} == {request_key(REQUEST)}
    assert {r.headers.get(REQUEST_HEADER) for r in posts} == {request_key(REQUEST)}
    # The file ends with how the run ended.
    last = json.loads(record.read_text().splitlines()[-1])["codegen_recording_outcome"]
    assert last["status"] == "passed" and last["request_id"] == out["request_id"]
    assert last["replies"] == len(posts)


def test_record_to_a_path_that_cannot_be_written_is_refused_in_one_line(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(json.dumps(SQUARE) + "\n")
    for argv in (
        ["generate", "--record", str(blocker / "rec.jsonl"), REQUEST],
        ["eval", "tasks", str(task_file), "--record", str(blocker / "rec.jsonl")],
        ["generate", "--record", str(blocker), REQUEST],  # a file that is not a recording
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--record" in err[0], err
    assert blocker.read_text() == "not a folder\n"
    assert not (isolated_home / "requests").exists() or not any(
        (isolated_home / "requests").iterdir()
    )


def test_a_record_that_recorded_nothing_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "request.jsonl"
    with ScriptedOpenAIServer() as down:  # closed before the run: nothing answers there
        base_url = down.base_url
    monkeypatch.setenv("CODEGEN_LLM__MAX_RETRIES", "0")
    proc = generate("--record", str(record), REQUEST, base_url=base_url)
    assert proc.returncode == 5, proc.stderr[-3000:]  # the outage's own exit
    assert f"--record {record}: nothing recorded" in proc.stderr
    assert not record.exists()


def test_replay_answers_a_new_request_id_by_its_text_and_old_recordings_by_their_id() -> None:
    key = request_key(REQUEST)
    entries = [
        Entry("analyzer", "req-0000000000000001", None, None, "{}", request=key),
        Entry("analyzer", "req-0000000000000002", None, None, "old"),  # before the header
    ]
    path = Path(os.environ["CODEGEN_HOME"]) / "rec.jsonl"
    write_recording(path, entries, source="test")

    def ask(task: str, request: str | None = None) -> str:
        headers = {"X-Codegen-Agent": "analyzer", "X-Codegen-Task": task}
        if request is not None:
            headers[REQUEST_HEADER] = request
        client = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers=headers
        )
        return reply.choices[0].message.content or ""

    with ReplayServer(read_recording(path), log=io.StringIO()) as srv:
        assert ask("req-00000000000000ff", key) == "{}"
        assert ask("req-0000000000000002") == "old"
        with pytest.raises(openai.NotFoundError, match="no request with this text"):
            ask("req-00000000000000ff", request_key("another request"))


# Two human-eval-shaped tasks: the scripted model solves the first and not the second.
SQUARE = {
    "task_id": "Tiny/square",
    "prompt": 'def square(n):\n    """Square a number."""\n',
    "entry_point": "square",
    "test": "def check(candidate):\n    assert candidate(3) == 9\n",
}
DOUBLE = {
    "task_id": "Tiny/double",
    "prompt": 'def double(n):\n    """Double a number."""\n',
    "entry_point": "double",
    "test": "def check(candidate):\n    assert candidate(3) == 6\n",
}


def tiny_handler(role: str, body: dict[str, Any]) -> Any:
    text = json.dumps(body.get("messages"))
    name = "square" if "square" in text else "double"
    if role == "analyzer":
        function = {"name": name, "signature": f"{name}(n)", "description": name}
        return {
            "purpose": name,
            "functions": [function],
            "behaviours": [],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    if role == "test_designer":
        return f"```python\nfrom solution import {name}\n\n\ndef test_it():\n    {name}(1)\n```"
    if role == "programmer":  # square right, double wrong
        return f"```python\ndef {name}(n):\n    return n * n\n```"
    return "APPROVED" if role == "reviewer" else f"# {name}\n"


def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["eval", "tasks", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.mark.docker
def test_a_recorded_evaluation_replays_with_the_same_figures(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from codegen.settings import get_settings

    task_file = tmp_path / "tiny.jsonl"
    task_file.write_text(json.dumps(SQUARE) + "\n" + json.dumps(DOUBLE) + "\n")
    record = tmp_path / "eval.jsonl"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedOpenAIServer(handler=tiny_handler) as scripted:
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        code, first, err = run_eval(capsys, str(task_file))
        assert code == 0, err
        # Both tasks are stored now; --record generates them again, and records every call.
        calls = len(scripted.requests)
        code, recorded, err = run_eval(capsys, str(task_file), "--record", str(record))
        posts = [r for r in scripted.requests[calls:] if r.method == "POST"]
    assert code == 0, err
    assert posts and len(read_recording(record).entries) == len(posts)
    assert recorded["pass_at_k"] == first["pass_at_k"] == {"pass@1": 0.5}
    # A fresh home and no model: the recording answers the same tasks, every call exactly.
    fresh = tmp_path / "fresh_home"
    fresh.mkdir()
    monkeypatch.setenv("CODEGEN_HOME", str(fresh))
    get_settings.cache_clear()
    with ReplayServer(read_recording(record), log=io.StringIO()) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        code, replayed, err = run_eval(capsys, str(task_file))
    assert code == 0, err
    for figure in ("pass_at_k", "solved_tasks", "tasks_scored", "crew_statuses"):
        assert replayed[figure] == recorded[figure], figure
    assert len(srv.served) == len(posts) and all(r["status"] == 200 for r in srv.served)
