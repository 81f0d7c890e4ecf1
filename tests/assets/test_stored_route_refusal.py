"""The daemon's key goes only where its own settings send it (issue 38, item 4).

Two real loopback OpenAI-compatible servers: the daemon's own endpoint and a foreign one. A
request row edited to route its calls to the foreign endpoint, or to send a key variable there,
is refused by the run itself (the process that would make the calls) in one line, and neither
server receives anything; listed in ``[llm] allowed_base_urls``, the same route runs, and the
foreign server sees the key, which shows the check is what kept it away.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import instance_for_test, materialize

from codegen.agents.llm import CandidateRoute, LLMRoute
from codegen.assets import codegen
from codegen.assets.resources import LLMResource, SettingsResource
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
    assert foreign_endpoint(LLMRoute(base_url=own + "/"), own, ()) is None  # same endpoint
    assert foreign_endpoint(LLMRoute(base_url=other), own, ()) is not None
    assert foreign_endpoint(LLMRoute(base_url=other), own, (), [other]) is None
    # A candidate's variable goes only to the endpoint the daemon's own entry pairs it with.
    assert foreign_endpoint(LLMRoute(base_url=own, candidates=paired), own, paired) is None
    swapped = (CandidateRoute(api_key_env=OTHER),)  # OTHER's key to the main endpoint
    assert foreign_endpoint(LLMRoute(base_url=own, candidates=swapped), own, paired)
    # A keyless candidate may use the daemon's candidates' hosts, and no other.
    keyless = (CandidateRoute(base_url=other),)
    assert foreign_endpoint(LLMRoute(base_url=own, candidates=keyless), own, paired) is None
    assert foreign_endpoint(LLMRoute(base_url=own, candidates=keyless), own, ())


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
