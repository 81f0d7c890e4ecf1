"""Program requests through the crew's agents: a spec with a program sends each role the
program's part of its prompt (test through the ``program`` fixture, run under ``__main__``,
review and document the interface), while a function spec's prompts stay byte-identical
(recorded replies are keyed by them). Scripted endpoint on loopback; no sandbox."""

from __future__ import annotations

from pathlib import Path

from codegen.agents import prompts
from codegen.agents.llm import LLMClient, Meter
from codegen.agents.roles import design_tests, document, review, write_code
from codegen.agents.spec import Spec
from codegen.replay.scripted import (
    MEDIAN_SPEC,
    PRIMES_SPEC,
    ScriptedOpenAIServer,
    median_handler,
    primes_handler,
)
from codegen.sandbox.types import TestReport

BASES = {
    "test_designer": (prompts.TEST_DESIGNER_SYSTEM, prompts.TEST_DESIGNER_PROGRAM),
    "programmer": (prompts.PROGRAMMER_SYSTEM, prompts.PROGRAMMER_PROGRAM),
    "reviewer": (prompts.REVIEWER_SYSTEM, prompts.REVIEWER_PROGRAM),
    "documenter": (prompts.DOCUMENTER_SYSTEM, prompts.DOCUMENTER_PROGRAM),
}


def client(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=1,
        timeout_s=10,
        cache_dir=tmp_path / "llm-cache",
        modes_file=tmp_path / "modes.json",
    )


def systems_sent(spec: Spec, server: ScriptedOpenAIServer, tmp_path: Path) -> dict[str, str]:
    """Each role's system message, as the four agents after the analyzer send it."""
    llm, meter = client(server, tmp_path), Meter()
    design_tests(llm, meter, spec)
    code, problem = write_code(llm, meter, spec, [])
    assert not problem, problem
    review(llm, meter, spec, code, TestReport())
    document(llm, meter, spec, code)
    sent: dict[str, str] = {}
    for request in server.requests:
        messages = (request.body or {}).get("messages")
        assert isinstance(messages, list) and isinstance(messages[0], dict)
        content = messages[0]["content"]
        assert request.role is not None and isinstance(content, str)
        sent[request.role] = content
    return sent


def test_a_function_spec_gets_the_prompts_it_always_got(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        sent = systems_sent(Spec.model_validate(PRIMES_SPEC), server, tmp_path)
    assert sent == {role: base for role, (base, _) in BASES.items()}


def test_a_program_spec_tells_each_role_about_the_program(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=median_handler) as server:
        sent = systems_sent(Spec.model_validate(MEDIAN_SPEC), server, tmp_path)
    for role, (base, program_part) in BASES.items():
        assert sent[role].startswith(base + "\n\n"), role
        assert program_part.splitlines()[0] in sent[role], role
    designer = sent["test_designer"]
    assert 'program.check(stdin="3\\n1 2 3\\n"' in designer
    assert 'comparison="trailing_whitespace"' in designer  # the spec's comparison, filled in
    assert "tested both ways" in designer
    assert 'if __name__ == "__main__":' in sent["programmer"]
    assert "usage line" in sent["documenter"]


def test_the_analyzer_is_told_what_a_program_spec_holds() -> None:
    for word in ("program:", "usage", "input_format", "comparison", "exit_code"):
        assert word in prompts.ANALYZER_SYSTEM


def test_the_programmers_context_is_searched_for_the_programs_input_and_output() -> None:
    from codegen.agents.context import queries_for

    median = Spec.model_validate(MEDIAN_SPEC)
    queries = queries_for(median)
    assert queries[0] == median.purpose
    assert queries[1].startswith("read line 1: n (1 <= n <= 100000)")
    assert "print one line: the median" in queries[1]
    assert queries_for(Spec.model_validate(PRIMES_SPEC))[1].startswith("def primes_up_to")
