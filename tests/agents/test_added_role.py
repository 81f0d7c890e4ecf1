"""Adding an agent role (docs/architecture.md, "Adding an agent role"): a role's prompt, its
step object added to ``STEPS`` and its result type are all the crew needs: the runner runs
the step in its place, its calls carry the role's ``X-Codegen-Agent`` header, its result lands
in the state and its usage in the request's totals (report.json's ``usage``/``endpoints``),
and the Dagster assets gain one for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import AssetKey

from codegen.agents import prompts, steps
from codegen.agents.llm import ROLE_HEADER, LLMClient, Meter
from codegen.agents.options import CrewOptions
from codegen.agents.runner import run_steps
from codegen.agents.state import CrewState, StepResult
from codegen.agents.steps import STEPS, Crew, Step
from codegen.agents.types import Status
from codegen.assets import codegen
from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer, primes_handler
from codegen.sandbox.api import Sandbox

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
LINTER_SYSTEM = "You are a linter. Reply with one short note on the code's style."
NOTE = "Fine: names say what they hold."


@dataclass
class LintResult(StepResult):
    note: str = ""


def lint_step(crew: Crew, state: CrewState, meter: Meter) -> LintResult:
    """The toy role: one note on the refined code."""
    assert state.solution is not None
    messages = [
        {"role": "system", "content": prompts.ROLE_PROMPTS["linter"][0]},
        {"role": "user", "content": state.solution.code},
    ]
    return LintResult(note=crew.llm.complete("linter", messages, meter).content.strip())


LINT = Step(
    "lint", ("solution",), lint_step, LintResult, "linter: a note on the code", roles=("linter",)
)


@pytest.fixture
def linter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The registration: the role's prompt, and its step after the programmer's refinement.
    monkeypatch.setitem(prompts.ROLE_PROMPTS, "linter", (LINTER_SYSTEM,))
    monkeypatch.setattr(steps, "STEPS", (*STEPS, LINT))
    yield


def test_the_added_step_gets_an_asset_reading_what_it_needs(linter: None) -> None:
    built = codegen.build_request_assets()
    lint = built["lint"]
    assert lint.key == AssetKey("lint")
    assert set(lint.keys_by_input_name.values()) == {
        AssetKey(codegen.asset_name(n)) for n in steps.upstream("lint")
    }
    assert lint.code_versions_by_key[AssetKey("lint")] == prompts.prompt_version("linter")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=1)
    yield box
    box.close()


@pytest.mark.docker
def test_the_crew_runs_an_added_role_with_its_header_and_keeps_its_result(
    linter: None, sandbox: Sandbox, tmp_path: Path, isolated_home: Path
) -> None:
    script = {"programmer": [PRIMES_SOLUTION], "linter": [NOTE]}
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        llm = LLMClient(base_url=server.base_url, api_key="sk-test", max_retries=1)
        state = CrewState("req-0123456789abcdef", REQUEST, CrewOptions(max_rounds=1))
        crew = Crew(llm=llm.for_task(state.request_id), sandbox=lambda: nullcontext(sandbox))
        done = run_steps(crew, state)
        [call] = server.requests_for("linter")
    assert call.headers[ROLE_HEADER] == "linter"
    assert LINTER_SYSTEM in str(call.body)
    assert "def primes_up_to" in str(call.body)  # the refined code
    lint = done.result("lint")
    assert isinstance(lint, LintResult) and lint.note == NOTE
    outcome = done.outcome()
    assert outcome.status is Status.PASSED, outcome.reason
    assert outcome.usage.per_agent["linter"].calls == 1
    assert "linter" in outcome.usage.endpoints_by_role()
