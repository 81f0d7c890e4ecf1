"""Human review from the UI: the launchpad flow through Dagster's GraphQL API against a running
``dagster dev`` (webserver + daemon), with a restart of both while the request awaits review."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from test_dagster_dev import LOCATIONS_QUERY, ROOT, free_port

from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer, primes_handler
from codegen.requests.review import ReviewStore
from codegen.requests.store import RequestStore

# Not run again on Postgres: what the restart must keep is the request and review stores
# (files under CODEGEN_HOME, the same on either storage), and the launchpad's review flow on
# Postgres is test_human_review's; two `dagster dev` start-ups here were the slowest step of
# the Postgres pass.
pytestmark = [pytest.mark.docker]

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n (Sieve of Eratosthenes)."
POINTS = "Name the algorithm in the module docstring."
REVISED = PRIMES_SOLUTION.replace("```python\n", "```python\n# revised after human review\n", 1)
LAUNCH = """
mutation Launch($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
  }
}
"""
RUN_STATUS = 'query { runOrError(runId: "%s") { ... on Run { status } } }'
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}


@contextmanager
def dagster_dev(env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}", f"PYTHON={sys.executable}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def loaded() -> bool:
            entries = graphql(base, LOCATIONS_QUERY)["workspaceOrError"]["locationEntries"]
            return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)

        wait_for(loaded, 150, "dagster dev loads the code location", alive=proc)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def graphql(base: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = requests.post(
        f"{base}/graphql", json={"query": query, "variables": variables or {}}, timeout=30
    )
    reply.raise_for_status()
    body = reply.json()
    assert "errors" not in body, body
    return body["data"]


def wait_for(
    probe: Callable[[], Any], timeout_s: float, what: str, alive: subprocess.Popen | None = None
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert alive is None or alive.poll() is None, f"exited while waiting: {what}"
        try:
            value = probe()
            if value:
                return value
        except (requests.ConnectionError, requests.Timeout, OSError, ValueError, KeyError):
            pass
        time.sleep(1)
    raise AssertionError(f"timed out waiting: {what}")


def launch(base: str, job: str, run_config: dict[str, Any], partition: str | None = None) -> str:
    params: dict[str, Any] = {
        "selector": {
            "repositoryLocationName": "multiagent_codegen",
            "repositoryName": "__repository__",
            "jobName": job,
        },
        "runConfigData": run_config,
        "executionMetadata": {
            "tags": [{"key": "dagster/partition", "value": partition}] if partition else []
        },
    }
    result = graphql(base, LAUNCH, {"executionParams": params})["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    return result["run"]["runId"]


def finished(base: str, run_id: str) -> str:
    return wait_for(
        lambda: (s := graphql(base, RUN_STATUS % run_id)["runOrError"]["status"]) in FINISHED and s,
        240,
        f"run {run_id} finishes",
    )


def verdict(kind: str, note: str) -> dict[str, Any]:
    return {"ops": {"human_review": {"config": {"verdict": kind, "note": note}}}}


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_launchpad_review_flow_survives_a_restart(isolated_home: Path) -> None:
    store = RequestStore(isolated_home / "requests")
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        server.enqueue("programmer", PRIMES_SOLUTION, REVISED)
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test-launchpad",
            "CODEGEN_SANDBOX__BACKEND": "docker",
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
        }
        with dagster_dev(env) as base:
            submit = launch(
                base,
                "submit_request_job",
                {"ops": {"submit_request": {"config": {"request": REQUEST, "review": "human"}}}},
            )
            assert finished(base, submit) == "SUCCESS"
            [req] = wait_for(store.all, 30, "the request is stored")
            assert req.options == {"review": "human"}
            report_path = isolated_home / "artifacts" / req.id / "report.json"
            # The inbox sensor launches the request's run; it ends awaiting review.
            wait_for(
                lambda: json.loads(report_path.read_text())["status"] == "awaiting_review",
                300,
                "the request awaits review",
            )
        folder = report_path.parent
        before = digest(folder)
        # dagster dev (webserver and daemon) is down: the waiting request holds no run.
        pending = ReviewStore(isolated_home / "requests").get(req.id)
        assert pending is not None and (pending.status, pending.review_round) == ("awaiting", 1)

        with dagster_dev(env) as base:
            assert digest(folder) == before  # the restart lost and changed nothing
            reject = launch(base, "review_request", verdict("reject", POINTS), req.id)
            assert finished(base, reject) == "SUCCESS"
            report = json.loads(report_path.read_text())
            assert report["status"] == "awaiting_review" and report["rounds"] == 2
            assert POINTS in server.requests_for("programmer")[-1].prompt_text

            approve = launch(base, "review_request", verdict("approve", "good"), req.id)
            assert finished(base, approve) == "SUCCESS"
            done = digest(folder)
            # A second verdict for the same round: its run fails, nothing stored changes.
            late = launch(base, "review_request", verdict("reject", "late"), req.id)
            assert finished(base, late) == "FAILURE"
            assert digest(folder) == done

    report = json.loads(report_path.read_text())
    assert report["status"] == "passed"
    assert "# revised after human review" in (folder / "solution.py").read_text()
    assert (folder / "README.md").read_text().startswith("# primes_up_to")
    assert [(v["verdict"], v["reviewer"]) for v in report["human_review"]["verdicts"]] == [
        ("reject", "launchpad"),
        ("approve", "launchpad"),
    ]
