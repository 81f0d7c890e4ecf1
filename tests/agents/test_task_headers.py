"""Task-tagged requests on the wire (docs/architecture.md, "LLM endpoint"): every request names its
task, programmer requests also their draft and round, in-process and during an evaluation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.artifacts import is_request_id
from codegen.agents.crew import run_crew
from codegen.agents.llm import CANDIDATE_HEADER, ROUND_HEADER, TASK_HEADER, LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.types import Status
from codegen.evaluation.harness import PublicTask
from codegen.evaluation.session.crew_generator import crew_generator
from codegen.replay.scripted import (
    PRIMES_BUGGY_SOLUTION,
    PRIMES_SOLUTION,
    RecordedRequest,
    ScriptedOpenAIServer,
    primes_handler,
)
from codegen.sandbox.api import Sandbox

pytestmark = pytest.mark.docker

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=1)
    yield box
    box.close()


def llm_for(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url, api_key="sk-test", cache_dir=tmp_path / "c", max_retries=1
    )


def draft_headers(requests: list[RecordedRequest]) -> list[tuple[str, str]]:
    return [(r.headers[CANDIDATE_HEADER], r.headers[ROUND_HEADER]) for r in requests]


def test_every_request_names_its_task_and_programmer_requests_their_round(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = {"programmer": [PRIMES_BUGGY_SOLUTION, PRIMES_SOLUTION]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(
            REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox, task_id="HumanEval/7"
        )
    assert out.status is Status.PASSED and out.rounds == 2, out.reason
    assert len(server.requests) == 6
    assert {r.headers.get(TASK_HEADER) for r in server.requests} == {"HumanEval/7"}
    assert draft_headers(server.requests_for("programmer")) == [("0", "1"), ("0", "2")]
    others = [r for r in server.requests if r.role != "programmer"]
    assert not any(CANDIDATE_HEADER in r.headers or ROUND_HEADER in r.headers for r in others)


def test_without_a_task_the_request_id_tags_every_request(sandbox: Sandbox, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        llm = llm_for(server, tmp_path)
        run_crew(REQUEST, llm=llm, sandbox=sandbox, options=CrewOptions(max_rounds=1))
        first = {r.headers[TASK_HEADER] for r in server.requests}
        run_crew(REQUEST + " Please.", llm=llm, sandbox=sandbox, options=CrewOptions(max_rounds=1))
        second = {r.headers[TASK_HEADER] for r in server.requests} - first
    [one], [two] = first, second
    assert is_request_id(one) and is_request_id(two) and one != two
    assert llm.task is None  # the caller's client is not re-tagged


def test_an_evaluation_tags_requests_with_the_benchmark_task_id(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    task = PublicTask(
        "HumanEval-12", "primes_up_to", "def primes_up_to(n): ...", REQUEST, "HumanEval/12"
    )
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        generate = crew_generator(llm_for(server, tmp_path), sandbox, CrewOptions(max_rounds=1))
        candidate = generate(task, 0)
    assert candidate.status == "passed", candidate.reason
    assert {r.headers.get(TASK_HEADER) for r in server.requests} == {"HumanEval/12"}
    assert draft_headers(server.requests_for("programmer")) == [("0", "1")]
