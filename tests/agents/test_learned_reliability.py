"""Selection that learns whom to trust (issue 41).

* A pick decided again from its stored record (``agents.pick.decision``) is the pick the crew makes
  from the same observations: with the same reliabilities the same pick, groups and why; with
  a model's reliability, the weighted rule, with no sandbox run.
* A request in a home where an evaluation stored its estimates uses them (source
  ``history``, with the tasks they rest on) and adds its own observations; a home with no
  history picks as before (equal votes, every source ``none``). Through the real Dagster
  request assets, a scripted OpenAI-compatible endpoint and the docker sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import instance_for_test, materialize

from codegen.agents.pick import (
    CHECK_ERRORS,
    HISTORY,
    NONE,
    BehaviourTable,
    CandidateRun,
    Learned,
    ReliabilityHistory,
    Selection,
    SharedInput,
    UsedReliability,
    agreement_pick,
    decide,
    record,
    repick,
    source_key,
    votes_of,
)
from codegen.agents.pick.reliability_history import MIN_TASKS
from codegen.assets import codegen
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer, primes_handler
from codegen.requests.store import RequestStore
from codegen.settings import get_settings

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."


def stored_record(used: list[UsedReliability]) -> tuple[Selection, BehaviourTable, list]:
    """Four drafts on three shared inputs and one worked example: draft 0 (model A) alone on
    one behaviour, drafts 1-3 (models B, C, C) agreeing on another; all pass the example."""
    table = BehaviourTable(
        [[0, 0, 0], [0, 1, 1], [0, 1, 1], [0, 1, 1]],
        [{0: "1"}, {0: "[2, 3]", 1: "[2]"}, {0: "[2, 3, 5]", 1: "[2, 3]"}],
    )
    names = ["test_solution.py::test_spec_example_0"]
    rows = [(True,)] * 4
    trusted = [True]
    base = Selection(
        chosen=0,
        why="",
        trusted_tests=names,
        candidates=[
            CandidateRun(i, "", 1, 1, {names[0]: True}, 10, None, classes=table.classes[i])
            for i in range(4)
        ],
        inputs=[SharedInput(str(k), "mutation", table.labels[k]) for k in range(3)],
        reliabilities=used,
    )
    first = record(base, decide(table, names, rows, trusted, used), names)
    # As stored with the sample and read back.
    return Selection.from_dict(json.loads(json.dumps(first.to_dict()))), table, rows


MODELS = ["A @ http://a/v1", "B @ http://b/v1", "C @ http://c/v1", "C @ http://c/v1"]


def test_a_pick_decided_again_from_its_record_is_the_crews_pick() -> None:
    none = [UsedReliability(i, m, None, NONE) for i, m in enumerate(MODELS)]
    first, table, rows = stored_record(none)
    assert first.rule == "output_agreement" and first.chosen == 1  # three agree: equal votes
    same = repick(first, none)
    assert same is not None
    assert (same.chosen, same.rule, same.why, same.groups) == (
        first.chosen,
        first.rule,
        first.why,
        first.groups,
    )
    # With A known reliable and B, C not, the weighted rule decides, as the crew's would.
    priors = [0.98, 0.3, 0.3, 0.3]
    learned = [
        UsedReliability(i, m, p, "evaluation", 50)
        for i, (m, p) in enumerate(zip(MODELS, priors, strict=True))
    ]
    again = repick(first, learned)
    crew = agreement_pick(
        table, rows, [True], priors=priors, support="similarity", errors=CHECK_ERRORS
    )
    assert again is not None and again.rule == "similarity_agreement"
    assert again.chosen == crew.chosen
    assert [u.source for u in again.reliabilities] == ["evaluation"] * 4
    # The record a re-pick reads its votes from: each draft's eligibility and group.
    votes = votes_of(first.to_dict(), MODELS)
    assert votes is not None and votes.eligible == (True,) * 4
    # A record from before tables were stored cannot be re-picked: None, not a guess.
    old = Selection.from_dict({**first.to_dict(), "inputs": []})
    assert repick(old, learned) is None


CONFIG = """
[llm]
base_url = "{url}"
max_retries = 1
candidates = [{{model = "strong-model"}}, {{model = "weak-model"}}]
"""


def run_request(home: Path, server: ScriptedOpenAIServer) -> tuple[dict, dict]:
    """One request with three drafts (strong, weak, strong) through the request assets."""
    settings = get_settings()
    req = RequestStore(home / "requests").add(REQUEST, {"candidates": 3, "max_rounds": 1})
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("requests", [req.id])
        result = materialize(
            [*codegen.REQUEST_ASSETS.values()],
            partition_key=req.id,
            instance=instance,
            resources={
                "settings": SettingsResource(),
                "llm": LLMResource.from_settings(settings),
                "sandbox": SandboxResource(backend="docker", pool_size=1, timeout_s=20),
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
    return report, dict(event.materialization.metadata)


@pytest.mark.docker
@pytest.mark.parametrize("history", [True, False])
def test_a_request_uses_what_the_home_learned_and_a_home_without_history_picks_as_before(
    history: bool, isolated_home: Path
) -> None:
    drafts = [PRIMES_SOLUTION.replace('"""Primes', f'"""Primes ({i})') for i in range(3)]
    with ScriptedOpenAIServer(script={"programmer": drafts}, handler=primes_handler) as server:
        (isolated_home / "codegen.toml").write_text(CONFIG.format(url=server.base_url))
        strong = source_key("strong-model", server.base_url)
        weak = source_key("weak-model", server.base_url)
        store = ReliabilityHistory(isolated_home / "reliability.json")
        if history:
            # What an evaluation with these two models stores at its end (learn_picks).
            store.record_evaluation(
                "crew-0123", "HumanEval", 164, {strong: Learned(0.91, 164), weak: Learned(0.6, 164)}
            )
        report, metadata = run_request(isolated_home, server)
    picked = report["candidates"]
    used = picked["reliabilities"]
    assert [u["model"] for u in used] == [strong, weak, strong]
    assert report["status"] == "passed"
    if history:
        assert [u["source"] for u in used] == [HISTORY] * 3
        assert [u["value"] for u in used] == [0.91, 0.6, 0.91]
        assert [u["tasks"] for u in used] == [164] * 3
        assert picked["rule"] == "similarity_agreement"
        assert metadata["reliability_sources"].value == "history"
    else:
        assert [u["source"] for u in used] == [NONE] * 3
        assert [u["value"] for u in used] == [None] * 3
        assert picked["rule"] == "output_agreement"  # today's pick
        assert metadata["reliability_sources"].value == "none"
    assert metadata["pick_rule"].value == picked["rule"]
    # The request's own observations join the home's evidence (two models drafted).
    stored = json.loads((isolated_home / "reliability.json").read_text())
    assert len(stored["requests"]) == 1
    learned = store.snapshot()
    if history:  # one request barely moves 164 tasks' estimate
        assert learned[strong].tasks == 165 and abs(learned[strong].value - 0.91) < 0.01
    else:  # one task of evidence: below the minimum, so a next request still counts none
        assert learned[strong].tasks == 1 < MIN_TASKS
