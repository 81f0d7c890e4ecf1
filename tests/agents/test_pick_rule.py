"""Changing the pick rule (docs/architecture.md, "Changing the pick rule"): a rule registered
by name and named as the default is the one the crew's pick follows, with nothing else
edited; the default rule is the registered ``dominance`` (agreement unless one model clearly
dominates)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.pick import (
    PICK_RULES,
    BehaviourTable,
    Decision,
    Observations,
    decide,
    register_rule,
)
from codegen.agents.pick import rules as pick_rules
from codegen.agents.pick.decision import agreement_rule
from codegen.agents.pick.dominance import dominance_rule
from codegen.agents.types import Status
from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer, primes_handler
from codegen.sandbox.api import Sandbox

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."


def last_draft(seen: Observations) -> Decision:
    """The toy rule: always the last draft."""
    return Decision(len(seen.used) - 1, "the last draft, always", "last_draft", (), [], None)


@pytest.fixture
def toy_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(PICK_RULES, "last_draft", last_draft)
    monkeypatch.setattr(pick_rules, "DEFAULT_RULE", "last_draft")
    yield


def test_the_default_rule_is_the_registered_dominance_rule() -> None:
    assert pick_rules.DEFAULT_RULE == "dominance"
    assert PICK_RULES["dominance"] is dominance_rule
    assert PICK_RULES["agreement"] is agreement_rule


def test_an_unknown_rule_name_says_which_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pick_rules, "DEFAULT_RULE", "nope")
    with pytest.raises(ValueError, match="no pick rule named 'nope' \\(known: agreement"):
        decide(BehaviourTable([[], []], []), [], [(), ()], [], [])


def test_register_rule_returns_the_rule_for_use_as_a_decorator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pick_rules, "PICK_RULES", {})
    assert register_rule("last_draft", last_draft) is last_draft
    assert pick_rules.rule_named("last_draft") is last_draft


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=1)
    yield box
    box.close()


@pytest.mark.docker
def test_the_crew_picks_by_a_registered_toy_rule(
    toy_rule: None, sandbox: Sandbox, tmp_path: Path, isolated_home: Path
) -> None:
    # Two correct drafts, textually different: agreement would put them in one group and
    # keep the earliest; the toy rule takes the last.
    twin = PRIMES_SOLUTION.replace('"""Primes by', '"""All primes by')
    script = {"programmer": [PRIMES_SOLUTION, twin]}
    folder = tmp_path / "req-0123456789abcdef"
    with ScriptedOpenAIServer(script=script, handler=primes_handler) as server:
        llm = LLMClient(base_url=server.base_url, api_key="sk-test", max_retries=1)
        out = run_crew(
            REQUEST,
            llm=llm,
            sandbox=sandbox,
            options=CrewOptions(candidates=2, max_rounds=1),
            artifacts=folder,
        )
    assert out.status is Status.PASSED, out.reason
    assert out.selection is not None and out.selection.chosen == 1
    assert out.solution == out.drafts[1]
    picked = json.loads((folder / "report.json").read_text())["candidates"]
    assert (picked["chosen"], picked["rule"]) == (1, "last_draft")
    assert picked["why"] == "the last draft, always"
