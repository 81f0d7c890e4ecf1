"""A real browser (Debian's chromium, headless) on the Dagster UI: the launchpad of
`submit_request_job` opens without a config error, and a finished request's page shows the
request's text and its status."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TEXT = "Write primes_up_to(n) with a sieve."  # under the 60-character title limit
pytestmark = [pytest.mark.browser, pytest.mark.docker, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dom(url: str) -> str:
    """The page's DOM once its scripts have run, in headless Chromium with a fresh profile and
    no background networking (virtual time lets the UI's queries finish)."""
    with tempfile.TemporaryDirectory(prefix="codegen-chromium-") as profile:
        done = subprocess.run(
            [
                "chromium",
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=30000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_launchpad_and_a_finished_request_in_a_real_browser(isolated_home: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
        }
        generated = subprocess.run(
            [str(BIN / "codegen"), "generate", TEXT, "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    assert generated.returncode == 0, generated.stderr[-2000:]
    request_id = json.loads(generated.stdout)["request_id"]

    port = free_port()
    web = subprocess.Popen(
        [
            str(BIN / "dagster-webserver"),
            *("-w", str(ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)),
        ],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert web.poll() is None, "dagster-webserver exited"
            assert time.monotonic() < deadline, "the webserver never served the code location"
            try:
                if requests.get(f"{base}/server_info", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        launchpad = dom(f"{base}/locations/multiagent_codegen/jobs/submit_request_job/playground")
        assert "Launch Run" in launchpad and "submit_request" in launchpad
        assert "Missing required config" not in launchpad
        page = dom(f"{base}/assets/solution_code?partition={request_id}")
        assert TEXT in page  # the codegen/request metadata: the request's own words
        assert "passed" in page  # its status
    finally:
        web.terminate()
        try:
            web.wait(timeout=30)
        except subprocess.TimeoutExpired:
            web.kill()
