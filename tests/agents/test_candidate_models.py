"""Candidates from several models, over the wire (issue 21, item 3).

``[llm] candidates`` as a list gives each programmer draft its own model, temperature and
endpoint. Against the real loopback OpenAI-compatible server (two of them, on two ports, for
two base URLs): each draft's request body names its model, its ``X-Codegen-Candidate`` header
its index, and it reaches its own base URL with the key from the variable its entry names; N
shorter than the list takes its first entries, N longer repeats it. The report lists the
programmer's endpoints one entry per candidate, with tokens and cost per candidate and per model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from dagster import instance_for_test, materialize

from codegen import composition
from codegen.agents.llm import CANDIDATE_HEADER, CandidateRoute, LLMClient, LLMRoute
from codegen.agents.options import CrewOptions
from codegen.agents.runner import advance
from codegen.agents.state import CrewState
from codegen.agents.steps import Crew
from codegen.agents.types import Status
from codegen.assets import codegen
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.replay.scripted import RecordedRequest, ScriptedOpenAIServer, primes_handler
from codegen.requests.store import RequestStore
from codegen.settings import Settings, get_settings

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
MAIN_KEY = "sk-main-canary-5150"
QWEN_KEY = "sk-qwen-canary-8086"
QWEN_ENV = "CODEGEN_TEST_QWEN_KEY"
MODELS = ("gpt-4o", "qwen2.5-coder:32b")


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedOpenAIServer, ScriptedOpenAIServer]]:
    """The crew's endpoint (A) and a second model's own box (B), on two ports."""
    with (
        ScriptedOpenAIServer(handler=primes_handler) as a,
        ScriptedOpenAIServer(handler=primes_handler, models=[MODELS[1]]) as b,
    ):
        yield a, b


def two_models(b: ScriptedOpenAIServer) -> tuple[CandidateRoute, ...]:
    return (
        CandidateRoute(model=MODELS[0]),
        CandidateRoute(model=MODELS[1], base_url=b.base_url, api_key_env=QWEN_ENV, temperature=0.2),
    )


def drafted(llm: LLMClient, count: int) -> CrewState:
    """The spec, context and draft steps (no sandbox needed): every draft's first call."""
    state = CrewState(
        request_id="req-0123456789abcdef", request=REQUEST, options=CrewOptions(candidates=count)
    )
    crew = Crew(llm=llm.for_task(state.request_id), sandbox=lambda: nullcontext(None))  # type: ignore[arg-type,return-value]
    for step in ("spec", "context", "draft"):
        state = advance(step, crew, state)
    return state


def programmer_calls(server: ScriptedOpenAIServer) -> dict[int, RecordedRequest]:
    calls = server.requests_for("programmer")
    by_candidate = {r.candidate: r for r in calls}
    assert len(by_candidate) == len(calls), "a draft asked twice"
    return {int(k): v for k, v in by_candidate.items() if k is not None}


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_each_draft_asks_its_own_model_at_its_own_base_url_with_its_own_key(
    count: int,
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = servers
    monkeypatch.setenv(QWEN_ENV, QWEN_KEY)
    llm = LLMClient(base_url=a.base_url, api_key=MAIN_KEY, max_retries=0, candidates=two_models(b))
    state = drafted(llm, count)
    assert state.draft is not None and state.draft.ended is None, state.draft
    on_a, on_b = programmer_calls(a), programmer_calls(b)
    # N shorter than the list: its first N entries; longer: the list again from the start.
    assert sorted(on_a) == [i for i in range(count) if i % 2 == 0]
    assert sorted(on_b) == [i for i in range(count) if i % 2 == 1]
    for i, request in {**on_a, **on_b}.items():
        assert request.headers[CANDIDATE_HEADER] == str(i)
        assert request.model == MODELS[i % 2]
        assert (request.body or {})["temperature"] == (0.2 if i % 2 else 0.0)
    # Each endpoint got its own key; the main key never went to B, B's never to A.
    assert {r.headers["Authorization"] for r in on_a.values()} <= {f"Bearer {MAIN_KEY}"}
    assert {r.headers["Authorization"] for r in on_b.values()} <= {f"Bearer {QWEN_KEY}"}
    # Only programmer drafts go to B: the other roles stay on the crew's endpoint.
    assert {r.role for r in b.requests} <= {"programmer"}
    assert {"analyzer"} <= {r.role for r in a.requests}
    # Usage: one endpoint entry per candidate, with its tokens; the per-model totals add up.
    usage = state.draft.usage
    entries = usage.endpoints_by_role()["programmer"]
    assert [e["candidate"] for e in entries] == list(range(count))
    assert [e["model"] for e in entries] == [MODELS[i % 2] for i in range(count)]
    assert [e["base_url"] for e in entries] == [(a, b)[i % 2].base_url for i in range(count)]
    assert all(e["prompt_tokens"] > 0 and e["completion_tokens"] > 0 for e in entries)
    per_model = usage.per_model()
    for model in {MODELS[i % 2] for i in range(count)}:
        mine = [e for e in entries if e["model"] == model]
        assert per_model[model]["total_tokens"] == sum(e["total_tokens"] for e in mine)
        assert per_model[model]["calls"] == len(mine)
    assert sum(m["total_tokens"] for m in per_model.values()) == usage.total_tokens


def test_an_unset_api_key_env_ends_the_draft_in_one_line_and_sends_nothing(
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = servers
    monkeypatch.delenv(QWEN_ENV, raising=False)
    llm = LLMClient(base_url=a.base_url, api_key=MAIN_KEY, max_retries=0, candidates=two_models(b))
    state = drafted(llm, 2)
    assert state.draft is not None and state.draft.ended is not None
    assert state.draft.ended.status is Status.ERROR
    reason = state.draft.ended.reason
    assert QWEN_ENV in reason and "candidate 1" in reason and "\n" not in reason, reason
    assert not b.requests  # nothing went to B without its key


def test_an_entry_with_its_own_base_url_and_no_key_variable_sends_no_key(
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer],
) -> None:
    a, b = servers
    own = (CandidateRoute(), CandidateRoute(model=MODELS[1], base_url=b.base_url))
    llm = LLMClient(base_url=a.base_url, api_key=MAIN_KEY, max_retries=0, candidates=own)
    state = drafted(llm, 2)
    assert state.draft is not None and state.draft.ended is None, state.draft
    [request] = b.requests
    assert MAIN_KEY not in request.headers.get("Authorization", "")
    assert programmer_calls(a)[0].model == "gpt-4o-mini"  # the entry keeps the role's model


# -- the whole crew: report.json, metadata, and the route a queued request carries -------------
CONFIG = """
[llm]
candidates = [
  {{model = "gpt-4o"}},
  {{model = "qwen2.5-coder:32b", base_url = "{b}", api_key_env = "{env}"}},
]
"""


@pytest.mark.docker
def test_the_report_lists_each_candidates_endpoint_tokens_and_cost_and_each_models(
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer],
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The caller's [llm] candidates travel in the request's route, as a request queued for the
    daemon does: the process running it (configured with one draft of its own) calls them."""
    a, b = servers
    (isolated_home / "codegen.toml").write_text(CONFIG.format(b=b.base_url, env=QWEN_ENV))
    monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", MAIN_KEY)
    monkeypatch.setenv(QWEN_ENV, QWEN_KEY)
    caller = get_settings()
    route = composition.llm_route(caller)
    assert [c.model for c in route.candidates] == list(MODELS)
    stored = LLMRoute.from_dict(json.loads(json.dumps(route.to_dict())))
    assert stored == route and QWEN_KEY not in json.dumps(route.to_dict())
    req = RequestStore(isolated_home / "requests").add(
        REQUEST, {"max_rounds": 1}, source="cli", route=route.to_dict()
    )
    # The process running it has its own settings: one draft, which names B and the variable
    # of B's key (a daemon sends a key variable only where its own settings pair it).
    own = [{"base_url": b.base_url, "api_key_env": QWEN_ENV}]
    runner = LLMResource.from_settings(Settings(llm={"candidates": own, "max_retries": 0}))
    assert len(runner.candidates) == 1  # the runner's own default: one draft
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("requests", [req.id])
        result = materialize(
            [*codegen.REQUEST_ASSETS.values()],
            partition_key=req.id,
            instance=instance,
            resources={
                "settings": SettingsResource(),
                "llm": runner,
                "sandbox": SandboxResource(backend="docker", pool_size=1, timeout_s=20),
                "retriever": RetrieverResource(),
            },
            raise_on_error=False,
        )
        assert result.success
        metadata = {
            e.asset_key.path[-1]: e.materialization.metadata
            for e in result.get_asset_materialization_events()
        }
        run_config = instance.get_run_by_id(result.run_id)
    folder = isolated_home / "artifacts" / req.id
    report: dict[str, Any] = json.loads((folder / "report.json").read_text())
    assert report["status"] == "passed", report["reason"]
    entries = report["endpoints"]["programmer"]
    # Two drafts (the route's number of candidates), each on its own model and base URL.
    assert [(e["candidate"], e["model"], e["base_url"]) for e in entries] == [
        (0, MODELS[0], a.base_url),
        (1, MODELS[1], b.base_url),
    ]
    assert {r.model for r in b.requests} == {MODELS[1]} and {r.candidate for r in b.requests} == {1}
    assert all(e["total_tokens"] > 0 for e in entries)
    priced, unpriced = entries[0], entries[1]
    assert priced["cost_usd"] > 0 and unpriced["cost_usd"] is None  # unknown, never zero
    per_model = report["usage"]["per_model"]
    assert set(per_model) == {"gpt-4o-mini", *MODELS}  # the other roles keep the default
    assert per_model[MODELS[1]]["total_tokens"] == unpriced["total_tokens"]
    assert per_model[MODELS[1]]["cost_usd"] is None and per_model[MODELS[0]]["cost_usd"] > 0
    assert report["usage"]["cost_usd"] is None
    assert metadata["solution_draft"]["per_model"].value == {
        m: v for m, v in per_model.items() if m in MODELS
    }
    # No key anywhere: run config, report, metadata, stored files.
    assert run_config is not None and QWEN_KEY not in json.dumps(run_config.run_config)
    for path in isolated_home.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            data = path.read_bytes()
            assert QWEN_KEY.encode() not in data and MAIN_KEY.encode() not in data, path
