"""The in-process crew (``run_crew``) end to end: scripted LLM over HTTP, real Docker sandbox."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.types import Status
from codegen.replay.scripted import (
    PRIMES_BUGGY_SOLUTION,
    PRIMES_DOCS,
    PRIMES_SOLUTION,
    PRIMES_SPEC,
    PRIMES_TESTS,
    Reply,
    ScriptedOpenAIServer,
    primes_handler,
)
from codegen.sandbox.api import Sandbox

pytestmark = pytest.mark.docker

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=2)
    yield box
    box.close()


def llm_for(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        cache_dir=tmp_path / "llm-cache",
        prices=PRICES,
        max_retries=1,
        timeout_s=10,
    )


def variant(block: str, n: int) -> str:
    """The same code with a distinct comment, so each round's prompt (and cache key) differs."""
    return block.replace("```python\n", f"```python\n# revision {n}\n", 1)


def test_happy_path(sandbox: Sandbox, tmp_path: Path) -> None:
    events: list[str] = []
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        out = run_crew(
            REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox, on_event=events.append
        )
    assert out.status is Status.PASSED, out.reason
    assert out.rounds == 1
    assert out.test_report is not None and out.test_report.passed == out.test_report.total == 5
    assert "def primes_up_to" in out.solution and "def test_small" in out.tests
    assert out.docs.startswith("# primes_up_to")
    assert out.spec is not None and out.spec.functions[0].name == "primes_up_to"
    roles = [r.role for r in server.requests]
    assert sorted(roles) == sorted(
        ["analyzer", "test_designer", "programmer", "reviewer", "documenter"]
    )
    usage = out.usage
    assert set(usage.per_agent) == {
        "analyzer",
        "test_designer",
        "programmer",
        "reviewer",
        "documenter",
    }
    assert usage.cost_usd is not None and usage.cost_usd > 0
    assert usage.cache_misses == 5 and usage.cache_hits == 0
    data = json.loads(json.dumps(out.to_dict()))
    assert data["status"] == "passed" and data["tests_passed"] == 5
    assert any("passed" in e for e in events)


@pytest.mark.parametrize("profile", ["llama.cpp", "ollama-0.4"])
def test_a_server_without_structured_outputs_still_gets_the_crew_through(
    sandbox: Sandbox, tmp_path: Path, profile: str
) -> None:
    with ScriptedOpenAIServer(handler=primes_handler, structured_outputs=profile) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.status is Status.PASSED, out.reason
    assert (
        out.structured_outputs == {"llama.cpp": "json_object", "ollama-0.4": "json_schema"}[profile]
    )
    assert out.to_dict()["structured_outputs"] == out.structured_outputs


def test_buggy_draft_fixed_in_round_two_with_failure_text_in_prompt(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = {"programmer": [PRIMES_BUGGY_SOLUTION, PRIMES_SOLUTION]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.status is Status.PASSED, out.reason
    assert out.rounds == 2
    first, second = server.requests_for("programmer")
    assert "test_two" not in first.prompt_text
    # The second prompt names the failing tests and carries their assertion messages.
    assert "test_solution.py::test_two" in second.prompt_text
    assert "assert [] == [2]" in second.prompt_text
    assert "test_prime_bound_included" in second.prompt_text
    assert "sieve = bytearray([1]) * n\n" in second.prompt_text  # it sees its previous code
    assert out.history[0].passed == 3 and out.history[1].passed == 5


def test_code_that_never_passes_ends_failed_tests(sandbox: Sandbox, tmp_path: Path) -> None:
    buggy = [variant(PRIMES_BUGGY_SOLUTION, n) for n in range(3)]
    with ScriptedOpenAIServer(script={"programmer": buggy}, handler=primes_handler) as server:
        out = run_crew(
            REQUEST,
            llm=llm_for(server, tmp_path),
            sandbox=sandbox,
            options=CrewOptions(max_rounds=3),
        )
    assert out.status is Status.FAILED_TESTS
    assert out.rounds == 3
    assert "2 of 5 tests failing after 3 rounds" in out.reason
    assert len(server.requests_for("programmer")) == 3
    assert not server.requests_for("reviewer") and not server.requests_for("documenter")
    assert out.docs == ""


def test_rejected_then_approved(sandbox: Sandbox, tmp_path: Path) -> None:
    script = {
        "programmer": [PRIMES_SOLUTION, variant(PRIMES_SOLUTION, 2)],
        "reviewer": [
            "REJECTED\n- the docstring does not mention the Sieve of Eratosthenes",
            "APPROVED",
        ],
    }
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.status is Status.PASSED, out.reason
    assert out.rounds == 2
    second = server.requests_for("programmer")[1]
    assert "the docstring does not mention the Sieve of Eratosthenes" in second.prompt_text
    assert [h.verdict for h in out.history] == ["REJECTED", "APPROVED"]


def test_reply_merely_containing_approved_is_a_rejection(sandbox: Sandbox, tmp_path: Path) -> None:
    script = {"reviewer": ["Looks good to me, approved.", "I have APPROVED this."]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(
            REQUEST,
            llm=llm_for(server, tmp_path),
            sandbox=sandbox,
            options=CrewOptions(max_rounds=2),
        )
    assert out.status is Status.REJECTED
    assert "reviewer rejected" in out.reason
    assert out.docs == "" and not server.requests_for("documenter")


def test_budget_exceeded_stops_the_crew(sandbox: Sandbox, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        out = run_crew(
            REQUEST,
            llm=llm_for(server, tmp_path),
            sandbox=sandbox,
            options=CrewOptions(budget_tokens=600),
        )
    assert out.status is Status.BUDGET_EXCEEDED
    assert "token budget exceeded" in out.reason
    assert out.usage.total_tokens > 600
    # It stopped: no reviewer or documenter call was made after the budget ran out.
    assert not server.requests_for("documenter")


def test_test_designer_never_sees_code(sandbox: Sandbox, tmp_path: Path) -> None:
    script = {"programmer": [PRIMES_BUGGY_SOLUTION, PRIMES_SOLUTION]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.status is Status.PASSED
    [designer] = server.requests_for("test_designer")
    prompt = designer.prompt_text
    assert "bytearray" not in prompt and "def primes_up_to(n: int) -> list[int]:" not in prompt
    # Exactly the system prompt and the spec: no code block, no code, in what it is shown.
    assert [m["role"] for m in designer.messages] == ["system", "user"]
    user = designer.messages[-1]["content"]
    assert "```" not in user and "return " not in user and "sieve[" not in user
    assert json.loads(user.split("\n", 1)[1]) == PRIMES_SPEC


def test_llm_failure_is_an_error_and_malformed_reply_is_no_code(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = {"analyzer": [Reply.error(500, "boom", {"Retry-After": "0.01"})] * 2}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.status is Status.ERROR and "HTTP 500" in out.reason

    # A programmer that never answers in time: retries exhausted, status error, with the why.
    slow = {"programmer": [Reply.delay(3.0, PRIMES_SOLUTION)] * 2}
    with ScriptedOpenAIServer(script=slow, handler=primes_handler) as s1:
        llm = LLMClient(base_url=s1.base_url, api_key="k", timeout_s=0.5, max_retries=1)
        out = run_crew(REQUEST, llm=llm, sandbox=sandbox)
    assert out.status is Status.ERROR and "programmer: request timed out" in out.reason
    assert out.spec and out.tests  # what was done before the failure is kept
    assert len(s1.requests_for("programmer")) == 2

    # A test designer that twice sends no test module: told what was wrong, then the model's
    # own failure (no_code), not an outage.
    no_tests = ["Here is the module: def primes_up_to(n): ...", "I would rather not."]
    with ScriptedOpenAIServer(script={"test_designer": no_tests}, handler=primes_handler) as s2:
        out = run_crew(REQUEST, llm=llm_for(s2, tmp_path / "b"), sandbox=sandbox)
    assert out.status is Status.NO_CODE
    assert re.search(r"test_designer: no usable test module after one re-ask", out.reason)
    reask = s2.requests_for("test_designer")[1]
    assert "no test module found" in reask.prompt_text


def test_bad_requests_end_with_error_and_no_llm_call(sandbox: Sandbox, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        llm = llm_for(server, tmp_path)
        for bad in ["", "   \n", "x" * 30_000, "abc\x00def"]:
            out = run_crew(bad, llm=llm, sandbox=sandbox)
            assert out.status is Status.ERROR and out.reason
    assert server.requests == []


def test_docs_are_markdown(sandbox: Sandbox, tmp_path: Path) -> None:
    script = {"documenter": [f"```markdown\n{PRIMES_DOCS}```"]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        out = run_crew(REQUEST, llm=llm_for(server, tmp_path), sandbox=sandbox)
    assert out.docs.startswith("# primes_up_to") and "## API reference" in out.docs
    assert PRIMES_TESTS  # the canned suite used throughout
