"""Several drafts picked by execution, and tests that can be wrong, through both paths of the
one crew definition (in-process ``run_crew`` and the Dagster assets)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import instance_for_test, materialize

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.types import Status
from codegen.assets import codegen, codegen_checks
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.replay.scripted import (
    PRIMES_BUGGY_SOLUTION,
    PRIMES_SOLUTION,
    PRIMES_TESTS,
    ScriptedOpenAIServer,
    primes_handler,
)
from codegen.requests.store import RequestStore
from codegen.sandbox.api import Sandbox

pytestmark = pytest.mark.docker

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
# A second buggy draft, textually different: the two agree on every test.
BUGGY_TWIN = PRIMES_BUGGY_SOLUTION.replace('"""Primes by', '"""All primes by')
# A generated test that is simply wrong: every correct draft fails it.
WRONG_TEST = "\n\ndef test_wrong_expectation():\n    assert primes_up_to(10) == [2, 3, 5]\n```"
TESTS_WITH_A_WRONG_ONE = PRIMES_TESTS.removesuffix("```").rstrip() + WRONG_TEST
SELECTION = [
    *codegen.REQUEST_ASSETS.values(),  # review in agent mode: straight on to the docs
    codegen_checks.solution_passes_tests,
]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=2)
    yield box
    box.close()


def in_process(server: ScriptedOpenAIServer, tmp_path: Path, box: Sandbox) -> dict[str, Any]:
    llm = LLMClient(base_url=server.base_url, api_key="sk-test", max_retries=1)
    folder = tmp_path / "req-0123456789abcdef"
    out = run_crew(
        REQUEST,
        llm=llm,
        sandbox=box,
        options=CrewOptions(candidates=3, max_rounds=2),
        artifacts=folder,
    )
    assert out.status is Status.PASSED, out.reason
    return json.loads((folder / "report.json").read_text())


def through_dagster(server: ScriptedOpenAIServer, home: Path) -> dict[str, Any]:
    req = RequestStore(home / "requests").add(REQUEST, {"candidates": 3, "max_rounds": 2})
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("requests", [req.id])
        result = materialize(
            SELECTION,
            partition_key=req.id,
            instance=instance,
            resources={
                "settings": SettingsResource(),
                "llm": LLMResource(base_url=server.base_url, max_retries=1),
                "sandbox": SandboxResource(backend="docker", pool_size=2, timeout_s=20),
                "retriever": RetrieverResource(),
            },
            raise_on_error=False,
        )
        assert result.success
        [event] = [
            e
            for e in result.get_asset_materialization_events()
            if e.asset_key.path[-1] == "solution_code"
        ]
    report = json.loads((home / "artifacts" / req.id / "report.json").read_text())
    # The run's metadata shows the same selection as report.json.
    assert event.materialization.metadata["candidates"].value == report["candidates"]
    return report


PATHS = ["in_process", "dagster"]


def run_path(path: str, server: ScriptedOpenAIServer, tmp_path: Path, box: Sandbox, home: Path):
    return (
        in_process(server, tmp_path, box) if path == "in_process" else through_dagster(server, home)
    )


@pytest.mark.parametrize("path", PATHS)
def test_the_spec_examples_pick_the_lone_correct_draft_over_two_agreeing_buggy_ones(
    path: str, sandbox: Sandbox, tmp_path: Path, isolated_home: Path
) -> None:
    script = {"programmer": [PRIMES_BUGGY_SOLUTION, PRIMES_SOLUTION, BUGGY_TWIN]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        report = run_path(path, server, tmp_path, sandbox, isolated_home)
        drafts = server.requests_for("programmer")
    # Three drafts, concurrently; the right one is refined (round 1 passes: no more calls).
    assert sorted(r.headers["X-Codegen-Candidate"] for r in drafts) == ["0", "1", "2"]
    assert {r.headers["X-Codegen-Round"] for r in drafts} == {"1"}
    picked = report["candidates"]
    # The drafts arrive concurrently, so which index got the correct reply varies: the pick
    # is the one draft passing all 8 tests (5 generated + 3 examples); the buggy two agree.
    by_candidate = {c["candidate"]: c for c in picked["candidates"]}
    chosen = picked["chosen"]
    others = [c for i, c in by_candidate.items() if i != chosen]
    assert by_candidate[chosen]["passed"] == by_candidate[chosen]["total"] == 8
    assert [c["passed"] for c in others] == [5, 5]
    assert others[0]["outcomes"] == others[1]["outcomes"]
    assert report["rounds"] == 1 and report["status"] == "passed"
    assert "1 of 3 pass 3/3 examples" in picked["why"]
    assert len(picked["trusted_tests"]) == 3
    assert all(c["tokens"] > 0 for c in picked["candidates"])
    assert [g["members"] for g in picked["groups"]] == [[chosen]]  # only example-passers compete


@pytest.mark.parametrize("path", PATHS)
def test_a_wrong_generated_test_is_suspect_and_cannot_drag_correct_code_into_a_fix(
    path: str, sandbox: Sandbox, tmp_path: Path, isolated_home: Path
) -> None:
    drafts = [PRIMES_SOLUTION.replace('"""Primes', f'"""Primes ({i})') for i in range(3)]
    script = {"programmer": drafts, "test_designer": [TESTS_WITH_A_WRONG_ONE]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        report = run_path(path, server, tmp_path, sandbox, isolated_home)
        programmer_calls = len(server.requests_for("programmer"))
    picked = report["candidates"]
    assert picked["suspect_tests"] == ["test_solution.py::test_wrong_expectation"]
    assert "1 suspect test(s) left out" in picked["why"]
    # No revision was asked for: the code was held to the suite without the wrong test.
    assert programmer_calls == 3 and report["rounds"] == 1
    assert report["status"] == "passed" and report["tests_total"] == 5
    stored = Path(report["artifacts"]["test_solution.py"]).read_text()
    assert "test_wrong_expectation" not in stored and "def test_two" in stored
    if path == "dagster":  # the blocking re-run of the stored suite agrees
        assert report["verification"]["passed"] is True


# Right up to 100 and wrong above it: passes every generated test and every worked example.
PRIMES_TABLE = '''```python
"""Primes from a table."""

TABLE = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79,
         83, 89, 97]


def primes_up_to(n: int) -> list[int]:
    """Return all primes <= n in increasing order."""
    return [p for p in TABLE if p <= n]
```'''


def test_outputs_on_generated_inputs_split_drafts_that_every_test_calls_equal(
    sandbox: Sandbox, tmp_path: Path, isolated_home: Path
) -> None:
    twin = PRIMES_SOLUTION.replace('"""Primes by', '"""All primes by')
    script = {"programmer": [PRIMES_TABLE, PRIMES_SOLUTION, twin]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        report = in_process(server, tmp_path, sandbox)
    picked = report["candidates"]
    assert picked["rule"] == "output_agreement"
    # Every draft passes all 8 tests: the suite alone cannot tell them apart.
    assert {c["passed"] for c in picked["candidates"]} == {8}
    assert [g["size"] for g in picked["groups"]] == [2, 1]
    assert picked["chosen"] in picked["groups"][0]["members"]
    assert "TABLE" not in Path(report["artifacts"]["solution.py"]).read_text()
    origins = {i["origin"] for i in picked["inputs"]}
    assert origins == {"example", "test", "mutation"}
    split = picked["splitting_inputs"]
    assert split and all(int(picked["inputs"][s["input"]]["args"]) > 97 for s in split)
    assert {o["group"] for o in split[0]["outputs"]} == {0, 1}
    assert picked["inputs_seconds"] > 0
    assert all(c["examples_passed"] == 3 and c["crashes"] == 0 for c in picked["candidates"])
