"""An evaluation with drafts from two models re-decides its picks at its end (issue 41), and a
request in the same home then uses what it learned: ``codegen eval humaneval --candidates 2``
against a scripted OpenAI-compatible endpoint (one model name per draft, no reliability in
the config) and the real sandbox, then the request assets in the same home."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from dagster import instance_for_test, materialize

from codegen.agents.pick import reliability_history, source_key
from codegen.assets import codegen
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.evaluation.humaneval import get_problem, public_request, task_keys
from codegen.json_types import JSONObject
from codegen.orchestration.cli import main
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.requests.store import RequestStore
from codegen.settings import get_settings
from codegen.testing.scripted_crew import ScriptedReply, make_handler

pytestmark = pytest.mark.docker
KEYS = task_keys()[:4]
CONFIG = '[llm]\ncandidates = [{model = "good-model"}, {model = "poor-model"}]\n'


def test_an_evaluation_learns_its_models_reliability_and_a_later_request_uses_it(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good, poor = make_handler(set(KEYS)), make_handler(set())
    calls: list[float] = []

    def handler(role: str, body: JSONObject) -> ScriptedReply:
        calls.append(time.time())
        return (good if body.get("model") == "good-model" else poor)(role, body)

    (isolated_home / "codegen.toml").write_text(CONFIG)
    # `--candidates` hands its choice to backfill runs in the environment: undone afterwards.
    monkeypatch.setenv(
        "CODEGEN_LLM__CANDIDATES", '[{"model": "good-model"}, {"model": "poor-model"}]'
    )
    with ScriptedOpenAIServer(handler=handler) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-learned-picks")
        capsys.readouterr()
        code = main(
            ["eval", "humaneval", "--json", "--candidates", "2"]
            + [a for k in KEYS for a in ("--task", k)]
        )
        result: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert code == 0, result
        repick = result["repick"]
        models = {source_key(m, server.base_url) for m in ("good-model", "poor-model")}
        assert repick["applied"] and set(repick["estimates"]) == models
        assert {e["tasks"] for e in repick["estimates"].values()} == {len(KEYS)}
        # The re-pick asked the endpoint nothing.
        assert not [t for t in calls if repick["started_at"] <= t <= repick["ended_at"]]
        assert 0 <= result["repick_share"] < 1 and result["repick_seconds"] >= 0
        first = result["picks"]["first_pick"]
        assert first["rules"] and result["tasks_scored"] == len(KEYS)
        # Each stored learned pick names the rule and this evaluation's estimates.
        learned = json.loads(
            (Path(result["results_dir"]) / "learned" / f"{KEYS[0]}.json").read_text()
        )
        [pick] = learned["picks"]
        used = pick["selection"]["reliabilities"]
        assert {u["source"] for u in used} == {"evaluation"}
        assert pick["selection"]["rule"] == "similarity_agreement"
        # `codegen eval list` shows both picks and the estimates.
        assert main(["eval", "list", "--json"]) == 0
        [row] = json.loads(capsys.readouterr().out)["runs"]
        assert row["first pass@1"] == first["pass_at_k"]["pass@1"]
        assert set(row["reliability"]) == models

        # A request in the same home, with the same two models: the stored estimates decide
        # (4 tasks of evidence here, so the minimum is lowered for this test).
        monkeypatch.setattr(reliability_history, "MIN_TASKS", len(KEYS))
        req = RequestStore(isolated_home / "requests").add(
            public_request(get_problem(KEYS[1])), {"candidates": 2, "max_rounds": 1}
        )
        with instance_for_test() as instance:
            instance.add_dynamic_partitions("requests", [req.id])
            done = materialize(
                [*codegen.REQUEST_ASSETS.values()],
                partition_key=req.id,
                instance=instance,
                resources={
                    "settings": SettingsResource(),
                    "llm": LLMResource.from_settings(get_settings()),
                    "sandbox": SandboxResource(backend="docker", pool_size=1, timeout_s=20),
                    "retriever": RetrieverResource(),
                },
                raise_on_error=False,
            )
            assert done.success
    report = json.loads((isolated_home / "artifacts" / req.id / "report.json").read_text())
    used = report["candidates"]["reliabilities"]
    assert [u["source"] for u in used] == ["history", "history"]
    estimates = repick["estimates"]
    assert [u["value"] for u in used] == [estimates[u["model"]]["p"] for u in used]
    assert [u["tasks"] for u in used] == [len(KEYS)] * 2
