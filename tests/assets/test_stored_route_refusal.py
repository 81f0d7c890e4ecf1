"""The daemon's key goes only where its own settings send it (issue 38, item 4).

Two real loopback OpenAI-compatible servers: the daemon's own endpoint and a foreign one. A
request row edited to route its calls to the foreign endpoint, or to send a key variable there,
is refused by the run itself (the process that would make the calls) in one line, and neither
server receives anything; listed in ``[llm] allowed_base_urls``, the same route runs, and the
foreign server sees the key, which shows the check is what kept it away. With no key anywhere in
the process that runs it, the same route runs, its calls carry no Authorization header, and the
report's endpoints name the foreign server (the offline setup: a replay server, no key).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import instance_for_test, materialize

from codegen.agents.llm import CandidateRoute, LLMRoute
from codegen.assets import codegen
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.requests.route import foreign_endpoint, publish_daemon_environment, refusal
from codegen.requests.store import RequestStore

KEY = "sk-daemon-canary-4471"
OTHER = "CODEGEN_TEST_OTHER_KEY"


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedOpenAIServer, ScriptedOpenAIServer]]:
    with (
        ScriptedOpenAIServer(handler=primes_handler) as own,
        ScriptedOpenAIServer(handler=primes_handler) as foreign,
    ):
        yield own, foreign


def run_spec_step(home: Path, route: LLMRoute, llm: LLMResource) -> tuple[bool, str]:
    """Materialize the request's first step as the daemon's run would; (success, failure)."""
    req = RequestStore(home / "requests").add(
        "Write primes_up_to(n).", {}, state="queued", route=route.to_dict()
    )
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("requests", [req.id])
        result = materialize(
            [codegen.REQUEST_ASSETS["spec"]],
            partition_key=req.id,
            instance=instance,
            resources={"settings": SettingsResource(), "llm": llm},
            raise_on_error=False,
        )
    failures = [
        (e.step_failure_data.user_failure_data.description or "")
        for e in result.get_step_failure_events()
        if e.step_failure_data.user_failure_data is not None
    ]
    return result.success, " ".join(failures)


def test_a_row_edited_to_a_foreign_base_url_is_refused_before_any_call(
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer],
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own, foreign = servers
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv(OTHER, "sk-other-canary")
    daemon = LLMResource(base_url=own.base_url, max_retries=0, cache=False)
    edited = [
        LLMRoute(base_url=foreign.base_url),
        # The daemon's endpoint, but a candidate's key variable sent to the foreign one.
        LLMRoute(
            base_url=own.base_url,
            candidates=(CandidateRoute(base_url=foreign.base_url, api_key_env=OTHER),),
        ),
        # Or a variable the daemon's settings never name, sent to its own endpoint.
        LLMRoute(base_url=own.base_url, candidates=(CandidateRoute(api_key_env="HOME"),)),
    ]
    for route in edited:
        ok, why = run_spec_step(isolated_home, route, daemon)
        assert not ok and why.startswith("refused:") and "\n" not in why, why
        assert KEY not in why
    assert own.requests == [] and foreign.requests == []  # nothing sent, no key, no text
    assert foreign.base_url in run_spec_step(isolated_home, edited[0], daemon)[1]

    # Listed by the daemon's own settings, the same route runs, and the key goes with it.
    allowed = LLMResource(
        base_url=own.base_url, max_retries=0, cache=False, allowed_base_urls=[foreign.base_url]
    )
    ok, why = run_spec_step(isolated_home, edited[0], allowed)
    assert ok, why
    sent = {r.headers.get("authorization") for r in foreign.requests}
    assert sent == {f"Bearer {KEY}"} and own.requests == []


def test_the_rules_of_where_each_key_may_go() -> None:
    own, other = "http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1"
    paired = (CandidateRoute(base_url=other, api_key_env=OTHER),)
    keys = {"OPENAI_API_KEY": KEY, OTHER: "sk-other"}

    def refused(
        route: LLMRoute,
        candidates: tuple[CandidateRoute, ...] = (),
        allowed: tuple[str, ...] = (),
        environ: dict[str, str] = keys,
    ) -> str | None:
        return foreign_endpoint(route, own, candidates, allowed, environ=environ)

    assert refused(LLMRoute(base_url=own + "/")) is None  # same endpoint
    problem = refused(LLMRoute(base_url=other))
    assert problem and own in problem and other in problem and "OPENAI_API_KEY" in problem
    assert KEY not in problem
    assert refused(LLMRoute(base_url=other), allowed=(other,)) is None
    # A candidate's variable goes only to the endpoint the daemon's own entry pairs it with.
    assert refused(LLMRoute(base_url=own, candidates=paired), paired) is None
    swapped = (CandidateRoute(api_key_env=OTHER),)  # OTHER's key to the main endpoint
    assert refused(LLMRoute(base_url=own, candidates=swapped), paired)
    # A keyless candidate may use the daemon's candidates' hosts, and no other.
    keyless = (CandidateRoute(base_url=other),)
    assert refused(LLMRoute(base_url=own, candidates=keyless), paired) is None
    assert refused(LLMRoute(base_url=own, candidates=keyless))
    # No key the calls could send: any endpoint. Any one key set: refused as above.
    for route in (LLMRoute(base_url=other), LLMRoute(base_url=own, candidates=keyless)):
        assert refused(route, environ={}) is None
        assert refused(route, environ={"OPENAI_API_KEY": KEY})
    assert refused(LLMRoute(base_url=other), paired, environ={OTHER: "sk-other"})
    assert refused(LLMRoute(base_url=other, candidates=swapped), environ={OTHER: "sk-other"})


def test_with_no_key_anywhere_the_run_takes_the_named_endpoint_and_sends_no_key(
    servers: tuple[ScriptedOpenAIServer, ScriptedOpenAIServer],
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own, foreign = servers  # the daemon's endpoint and a replay server its settings never name
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    daemon = LLMResource(base_url=own.base_url, max_retries=0, cache=False)
    route = LLMRoute(base_url=foreign.base_url)
    # The whole request job; a budget the analyzer's reply exceeds ends it there (no sandbox).
    req = RequestStore(isolated_home / "requests").add(
        "Write primes_up_to(n).", {"budget_tokens": 50}, state="queued", route=route.to_dict()
    )
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("requests", [req.id])
        result = materialize(
            list(codegen.REQUEST_ASSETS.values()),
            partition_key=req.id,
            instance=instance,
            resources={
                "settings": SettingsResource(),
                "llm": daemon,
                "sandbox": SandboxResource(),
                "retriever": RetrieverResource(),
            },
            raise_on_error=False,
        )
    assert result.success
    assert own.requests == [] and [r.role for r in foreign.requests] == ["analyzer"]
    assert all("authorization" not in r.headers for r in foreign.requests)
    report = json.loads((isolated_home / "artifacts" / req.id / "report.json").read_text())
    assert report["status"] == "budget_exceeded"
    assert report["endpoints"]["analyzer"]["base_url"] == foreign.base_url

    # A key in the run's process: the same row is refused in one line naming both endpoints.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    ok, why = run_spec_step(isolated_home, route, daemon)
    assert not ok and "\n" not in why and KEY not in why
    assert own.base_url in why and foreign.base_url in why, why
    assert [r.role for r in foreign.requests] == ["analyzer"] and own.requests == []


def test_the_caller_is_told_only_when_a_key_would_go_to_the_endpoint(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = LLMRoute(base_url="http://b.example/v1")
    keyless = publish_daemon_environment(isolated_home, "http://a.example/v1")
    assert refusal(isolated_home, route, keyless) is None  # no key on either side
    # The daemon's own candidate has a key: it could travel, so the endpoint must be listed.
    monkeypatch.setenv(OTHER, "sk-other-canary")
    with_candidate_key = publish_daemon_environment(
        isolated_home, "http://a.example/v1", key_envs=[OTHER]
    )
    assert "allowed_base_urls" in (refusal(isolated_home, route, with_candidate_key) or "")


def test_the_caller_is_told_before_queueing(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    daemon = publish_daemon_environment(isolated_home, "http://a.example/v1")
    problem = refusal(isolated_home, LLMRoute(base_url="http://b.example/v1"), daemon)
    assert problem and "allowed_base_urls" in problem and "http://b.example/v1" in problem
    listed = publish_daemon_environment(
        isolated_home, "http://a.example/v1", allowed_base_urls=["http://b.example/v1"]
    )
    assert refusal(isolated_home, LLMRoute(base_url="http://b.example/v1"), listed) is None
