"""The endpoint a request used is the caller's, recorded, and never silently another one.

A real dagster-daemon started on endpoint A serves the instance; `codegen generate` run with
OPENAI_BASE_URL at B (the key from the same variable in both) queues the request, and every
model call goes to B, as report.json and the CLI output say. A caller whose key the daemon
lacks is refused in one line naming both endpoints, before anything is stored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codegen.agents.llm import LLMRoute
from codegen.orchestration.cli.generate import daemon_running
from codegen.orchestration.instance import configured_instance
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.requests.route import publish_daemon_environment, refusal
from codegen.requests.store import RequestStore
from codegen.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KEY = "sk-route-canary-31"
ROLES = {"analyzer", "test_designer", "programmer", "reviewer", "documenter"}


def test_refusal_names_both_endpoints_only_when_the_keys_differ(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = LLMRoute(base_url="http://b.example/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # The daemon's settings let its key go to B ([llm] allowed_base_urls).
    same = publish_daemon_environment(
        isolated_home, "http://a.example/v1", allowed_base_urls=["http://b.example/v1"]
    )
    assert refusal(isolated_home, route, same) is None
    assert KEY not in (isolated_home / "daemon" / "llm.json").read_text()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-another")
    problem = refusal(isolated_home, route, same)
    assert problem and "http://a.example/v1" in problem and "http://b.example/v1" in problem
    assert "\n" not in problem and KEY not in problem
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "has an OPENAI_API_KEY and this shell has none" in (
        refusal(isolated_home, route, same) or ""
    )


@pytest.mark.docker
def test_a_daemon_on_endpoint_a_runs_the_callers_request_on_endpoint_b(
    isolated_home: Path,
) -> None:
    instance = configured_instance(get_settings())
    with (
        ScriptedOpenAIServer(handler=primes_handler) as a,
        ScriptedOpenAIServer(handler=primes_handler) as b,
    ):
        base = {**os.environ, "OPENAI_API_KEY": KEY, "CODEGEN_SANDBOX__POOL_SIZE": "1"}
        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
            cwd=ROOT,
            # The daemon sends its key to B only because its own settings list B.
            env={
                **base,
                "OPENAI_BASE_URL": a.base_url,
                "CODEGEN_LLM__ALLOWED_BASE_URLS": json.dumps([b.base_url]),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 180
            while not daemon_running(instance):
                assert daemon.poll() is None, "dagster-daemon exited"
                assert time.monotonic() < deadline, "the daemon never reported healthy"
                time.sleep(1)
            caller = {**base, "OPENAI_BASE_URL": b.base_url}
            proc = subprocess.run(
                [str(BIN / "codegen"), "generate", "Write primes_up_to(n).", "--json"],
                capture_output=True,
                text=True,
                env=caller,
                timeout=300,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert "queued for the daemon" in proc.stderr
            out = json.loads(proc.stdout)
            # Another key in the caller's shell: refused in one line, naming A and B.
            refused = subprocess.run(
                [str(BIN / "codegen"), "generate", "Write primes_up_to(n)."],
                capture_output=True,
                text=True,
                env={**caller, "OPENAI_API_KEY": "sk-someone-else"},
                timeout=120,
                check=False,
            )
        finally:
            os.killpg(daemon.pid, signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)
        a_calls, b_roles = len(a.requests), {r.role for r in b.requests}
    assert out["status"] == "passed", out
    assert a_calls == 0 and b_roles == ROLES
    report = json.loads((Path(out["artifact_dir"]) / "report.json").read_text())
    for role in ROLES - {"programmer"}:
        assert report["endpoints"][role]["base_url"] == b.base_url, report["endpoints"]
    assert [e["base_url"] for e in report["endpoints"]["programmer"]] == [b.base_url]
    assert out["endpoints"] == report["endpoints"]
    assert KEY not in proc.stdout + proc.stderr
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and a.base_url in lines[0] and b.base_url in lines[0], lines


def test_queueing_with_no_daemon_is_refused_in_one_line(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codegen.orchestration.cli import main

    monkeypatch.setenv("OPENAI_BASE_URL", "http://b.example/v1")
    assert main(["generate", "Write f().", "--launch", "queue"]) == 2  # refused
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "http://b.example/v1" in lines[0], lines
    assert not RequestStore(isolated_home / "requests").all()  # nothing was queued


def test_credentials_in_a_base_url_are_never_shown() -> None:
    from codegen.agents.llm import shown_url

    assert shown_url("http://user:s3cret@host:8000/v1") == "http://host:8000/v1"
    assert shown_url("http://host/v1") == "http://host/v1"
