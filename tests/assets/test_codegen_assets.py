"""The request assets and checks in a real Dagster instance, real Docker sandbox, scripted LLM."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    ExecuteInProcessResult,
    instance_for_test,
    materialize,
)

from codegen.agents.artifacts import ARTIFACT_FILES
from codegen.assets import codegen, codegen_checks
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.replay.scripted import (
    PRIMES_BUGGY_SOLUTION,
    PRIMES_TESTS,
    ScriptedOpenAIServer,
    primes_handler,
)
from codegen.requests.store import RequestStore

pytestmark = pytest.mark.docker

SECRET = "sk-canary-4c1d9e7f0b2a"
ASSETS = [
    "request_spec",
    "test_suite",
    "retrieved_context",
    "solution_draft",
    "solution_code",
    "human_review",
    "documentation",
]
SELECTION = [
    *codegen.REQUEST_ASSETS.values(),
    codegen_checks.solution_passes_tests,
    codegen_checks.solution_bandit,
    codegen_checks.review_not_pending,
]
# The suite also proves that the key never reaches the sandbox's environment.
LEAK_TEST = """

def test_no_host_secret_in_the_sandbox():
    import os

    assert "OPENAI_API_KEY" not in os.environ
    assert not any("sk-canary" in v for v in os.environ.values())
```"""
TESTS_WITH_LEAK_CHECK = PRIMES_TESTS.removesuffix("```") + LEAK_TEST.lstrip("\n")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    # The key lives only in the SDK's environment variable, as in production.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ScriptedOpenAIServer(handler=primes_handler) as srv:
        yield srv


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


def resources(
    server: ScriptedOpenAIServer, home: Path, *, cache: bool, image: str | None = None
) -> dict[str, Any]:
    return {
        "settings": SettingsResource(),
        "llm": LLMResource(
            base_url=server.base_url,
            cache_dir=str(home / "cache" / "llm") if cache else None,
            prices={"gpt-4o-mini": {"input": 0.15, "output": 0.60}},
            max_retries=1,
        ),
        "sandbox": SandboxResource(backend="docker", image=image, pool_size=1, timeout_s=20),
        "retriever": RetrieverResource(),
    }


def run_request(
    instance: DagsterInstance,
    server: ScriptedOpenAIServer,
    home: Path,
    text: str,
    options: dict[str, Any] | None = None,
    *,
    cache: bool = True,
    image: str | None = None,
) -> tuple[str, ExecuteInProcessResult]:
    req = RequestStore(home / "requests").add(text, options)
    instance.add_dynamic_partitions("requests", [req.id])
    result = materialize(
        SELECTION,
        partition_key=req.id,
        instance=instance,
        resources=resources(server, home, cache=cache, image=image),
        raise_on_error=False,
    )
    return req.id, result


def metadata(result: ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey(asset)
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def checks(result: ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_happy_path_materializes_every_asset_and_passes_the_blocking_check(
    server: ScriptedOpenAIServer, instance: DagsterInstance, isolated_home: Path
) -> None:
    server.enqueue("test_designer", TESTS_WITH_LEAK_CHECK)
    request_id, result = run_request(
        instance, server, isolated_home, "Write primes_up_to(n) with the Sieve of Eratosthenes."
    )
    assert result.success
    materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert materialized == set(ASSETS)
    assert checks(result) == {
        "solution_passes_tests": True,
        "solution_bandit": True,
        "review_not_pending": True,  # agent mode: nothing waits for a person
    }
    [blocking] = [
        e for e in result.get_asset_check_evaluations() if e.check_name == "solution_passes_tests"
    ]
    assert blocking.metadata["passed"].value == blocking.metadata["total"].value == 6
    assert len(blocking.metadata["tests"].value.records) == 6

    code = metadata(result, "solution_code")
    assert code["status"] == "passed" and code["rounds"] == 1
    assert code["tests_passed"] == code["tests_total"] == 6
    assert code["code"].startswith("```python") and "primes_up_to" in code["code"]
    assert code["tokens"] > 0 and code["cost_usd"] > 0 and code["cache_hits"] == 0
    latency = {r.data["agent"]: r.data["latency_s"] for r in code["per_agent"].records}
    assert set(latency) == {"analyzer", "test_designer", "programmer", "reviewer"}
    spec = metadata(result, "request_spec")
    assert spec["status"] == "ok" and "primes_up_to" in spec["spec"]
    assert "def test_no_host_secret" in metadata(result, "test_suite")["tests"]
    docs = metadata(result, "documentation")
    assert docs["status"] == "passed" and "# primes_up_to" in docs["docs"]

    folder = isolated_home / "artifacts" / request_id
    assert docs["artifacts"] == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(ARTIFACT_FILES)
    report = json.loads((folder / "report.json").read_text())
    assert report["status"] == "passed" and report["tests_passed"] == 6
    assert report["verification"] == {"passed": True, "tests_passed": 6, "tests_total": 6}
    assert set(report["usage"]["per_agent"]) == {
        "analyzer",
        "test_designer",
        "programmer",
        "reviewer",
        "documenter",
    }
    assert json.loads((folder / "spec.json").read_text())["functions"][0]["name"] == "primes_up_to"
    assert "## API reference" in (folder / "README.md").read_text()

    # The request text is stored apart from the key; the key is opaque.
    assert "primes" not in request_id
    assert RequestStore(isolated_home / "requests").get(request_id).text.startswith("Write")

    # Every request names its request (the partition key); the programmer's its draft.
    assert {r.headers.get("X-Codegen-Task") for r in server.requests} == {request_id}
    [programmer] = server.requests_for("programmer")
    assert (programmer.headers["X-Codegen-Candidate"], programmer.headers["X-Codegen-Round"]) == (
        "0",
        "1",
    )

    # The key reached the endpoint (that is its job) and nothing else.
    assert all(r.headers["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
    for path in isolated_home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    # Every event of the run (logs, materializations with their metadata, check results).
    events = instance.all_logs(result.run_id)
    assert len(events) > 20 and all(SECRET not in repr(e) for e in events)


def test_failures_end_with_their_status_and_leave_earlier_requests_alone(
    server: ScriptedOpenAIServer, instance: DagsterInstance, isolated_home: Path
) -> None:
    # No response cache here: every request must reach the scripted server (the same spec
    # would otherwise replay the first request's good code from the cache).
    run = functools.partial(run_request, instance, server, isolated_home, cache=False)
    first_id, first = run("Primes up to n, please.")
    assert first.success
    before = digest(isolated_home / "artifacts" / first_id)

    # Code that never passes: failed_tests after the configured rounds.
    server.enqueue("programmer", PRIMES_BUGGY_SOLUTION, "# 2\n" + PRIMES_BUGGY_SOLUTION)
    buggy_id, buggy = run("Primes, but buggy.", {"max_rounds": 2})
    assert not buggy.success  # the blocking check failed, so the docs were not built
    code = metadata(buggy, "solution_code")
    assert code["status"] == "failed_tests" and code["rounds"] == 2
    assert "2 of 5 tests failing after 2 rounds" in code["reason"]
    assert checks(buggy)["solution_passes_tests"] is False
    materialized = {e.asset_key.path[-1] for e in buggy.get_asset_materialization_events()}
    assert "documentation" not in materialized
    report = json.loads((isolated_home / "artifacts" / buggy_id / "report.json").read_text())
    assert report["status"] == "failed_tests" and report["reason"] == code["reason"]

    # Tests pass but the reviewer rejects: the check passes, the docs asset records the
    # rejection and writes no README.
    server.enqueue("reviewer", "REJECTED\n- the sieve allocates n + 1 bytes; use a bitset")
    rejected_id, rejected = run("Primes, reviewed harshly.", {"max_rounds": 1})
    assert checks(rejected)["solution_passes_tests"] is True
    docs = metadata(rejected, "documentation")
    assert docs["status"] == "rejected" and "use a bitset" in docs["reason"]
    assert not (isolated_home / "artifacts" / rejected_id / "README.md").exists()
    report = json.loads((isolated_home / "artifacts" / rejected_id / "report.json").read_text())
    assert report["status"] == "rejected"

    # Budget exceeded at the analyzer: every asset records it, nothing else is called.
    calls_before = len(server.requests)
    budget_id, budget = run("Primes on a budget.", {"budget_tokens": 50})
    spec = metadata(budget, "request_spec")
    assert spec["status"] == "budget_exceeded" and "token budget exceeded" in spec["reason"]
    assert metadata(budget, "solution_code")["status"] == "budget_exceeded"
    assert len(server.requests) == calls_before + 1
    report = json.loads((isolated_home / "artifacts" / budget_id / "report.json").read_text())
    assert report["status"] == "budget_exceeded"

    # No sandbox backend: an outage, not a result. The step fails (red, a re-run retries),
    # solution_code is not materialized, and report.json says why (an endpoint failing for
    # good ends the same way; see test_outage_colours).
    nobox_id, nobox = run("Primes without a sandbox.", image="multiagent-codegen-no-such:0")
    assert not nobox.success
    materialized = {e.asset_key.path[-1] for e in nobox.get_asset_materialization_events()}
    assert "solution_code" not in materialized and "request_spec" in materialized
    [failure] = [e for e in nobox.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "not found" in str(failure.event_specific_data.error)
    report = json.loads((isolated_home / "artifacts" / nobox_id / "report.json").read_text())
    assert report["status"] == "error" and "not found" in report["reason"]

    assert digest(isolated_home / "artifacts" / first_id) == before
