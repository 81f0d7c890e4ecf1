"""The LLM client against the scripted OpenAI-compatible server over real loopback HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.llm import (
    CANDIDATE_HEADER,
    ROLE_HEADER,
    TASK_HEADER,
    Budget,
    BudgetExceeded,
    Draft,
    LLMClient,
    LLMError,
    Meter,
    RoleModel,
)
from codegen.agents.llm import client as llm
from codegen.agents.roles import AgentOutputError, analyze, design_tests
from codegen.agents.spec import Spec
from codegen.replay.scripted import PRIMES_SPEC, Reply, ScriptedOpenAIServer

PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def client(server: ScriptedOpenAIServer, tmp_path: Path, **kw: object) -> LLMClient:
    options: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": "sk-test",
        "cache_dir": tmp_path / "cache",
        "prices": PRICES,
        "max_retries": 2,
        "timeout_s": 10.0,
    }
    options.update(kw)
    return LLMClient(**options)  # type: ignore[arg-type]


def test_analyzer_sends_role_header_and_strict_json_schema(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue("analyzer", PRIMES_SPEC)
    spec = analyze(client(server, tmp_path), Meter(), "primes up to n").spec
    assert spec.functions[0].name == "primes_up_to"
    [req] = server.requests
    assert req.headers[ROLE_HEADER] == "analyzer" and req.role == "analyzer"
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])


def test_malformed_analyzer_output_then_valid_on_reask(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    broken = {k: v for k, v in PRIMES_SPEC.items() if k != "functions"}
    server.enqueue("analyzer", "this is not json {", broken, "still not", PRIMES_SPEC)
    llm = client(server, tmp_path)
    with pytest.raises(AgentOutputError, match="after one re-ask"):
        analyze(llm, Meter(), "first request")
    assert len(server.requests) == 2
    assert "not valid JSON" in server.requests[1].prompt_text

    spec = analyze(llm, Meter(), "second request").spec
    assert spec.purpose == PRIMES_SPEC["purpose"]
    assert len(server.requests) == 4
    assert "not a valid specification" in server.requests[3].prompt_text


def test_429_with_retry_after_then_success(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.enqueue("analyzer", Reply.error(429, "slow down", {"Retry-After": "0.2"}), PRIMES_SPEC)
    meter = Meter()
    analyze(client(server, tmp_path), meter, "primes")
    assert [r.role for r in server.requests] == ["analyzer", "analyzer"]
    # Only the successful call is accounted for.
    assert meter.usage.calls == 1 and meter.usage.cache_misses == 1


def test_5xx_exhausting_retries_is_an_llm_error(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue("analyzer", *[Reply.error(503, "overloaded", {"Retry-After": "0.05"})] * 3)
    with pytest.raises(LLMError, match="HTTP 503"):
        analyze(client(server, tmp_path, max_retries=2), Meter(), "primes")
    assert len(server.requests) == 3  # first try + 2 retries, then it gives up


def test_timeouts_exhaust_retries(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.enqueue("analyzer", *[Reply.delay(3.0, PRIMES_SPEC)] * 2)
    llm = client(server, tmp_path, timeout_s=0.3, max_retries=1)
    with pytest.raises(LLMError, match="timed out"):
        analyze(llm, Meter(), "primes")
    assert len(server.requests) == 2


def test_cost_from_price_table_and_unknown_model_is_unknown(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue(
        "analyzer", Reply.json(PRIMES_SPEC, usage={"prompt_tokens": 1000, "completion_tokens": 500})
    )
    meter = Meter()
    analyze(client(server, tmp_path), meter, "primes")
    assert meter.usage.cost_usd == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)

    server.enqueue("test_designer", "```python\ndef test_x():\n    assert True\n```")
    unknown = client(server, tmp_path, default=RoleModel(model="my-local-model"))
    design_tests(unknown, meter, Spec.model_validate(PRIMES_SPEC))
    assert meter.usage.cost_usd is None  # never silently 0
    assert meter.usage.per_agent["test_designer"].cost_usd is None
    assert meter.usage.per_agent["analyzer"].cost_usd is not None
    assert meter.usage.unpriced_calls == 1
    assert json.loads(json.dumps(meter.usage.to_dict()))["cost_usd"] is None


def test_deterministic_calls_are_cached_on_disk(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue("analyzer", PRIMES_SPEC)
    first, second = Meter(), Meter()
    analyze(client(server, tmp_path), first, "primes")
    # A new client (another process, say) over the same cache directory.
    again = analyze(client(server, tmp_path), second, "primes")
    assert again.spec.functions[0].name == "primes_up_to"
    assert len(server.requests) == 1
    assert (first.usage.cache_hits, first.usage.cache_misses) == (0, 1)
    assert (second.usage.cache_hits, second.usage.cache_misses) == (1, 0)
    assert second.usage.total_tokens == 0  # nothing was sent

    # Sampling calls are never cached.
    server.enqueue("analyzer", PRIMES_SPEC)
    warm = client(server, tmp_path, default=RoleModel(temperature=0.7))
    analyze(warm, Meter(), "primes")
    assert len(server.requests) == 2


def test_budget_stops_before_the_next_call(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.enqueue(
        "analyzer", Reply.json(PRIMES_SPEC, usage={"prompt_tokens": 80, "completion_tokens": 40})
    )
    meter = Meter(Budget(tokens=100))
    with pytest.raises(BudgetExceeded, match="120 tokens used, limit 100"):
        analyze(client(server, tmp_path), meter, "primes")
    with pytest.raises(BudgetExceeded):
        design_tests(client(server, tmp_path), meter, Spec.model_validate(PRIMES_SPEC))
    assert len(server.requests) == 1  # the second call never left the process


def test_dollar_budget_with_unknown_price_cannot_be_enforced(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue("analyzer", PRIMES_SPEC)
    llm = client(server, tmp_path, default=RoleModel(model="mystery"))
    with pytest.raises(BudgetExceeded, match="price is unknown"):
        analyze(llm, Meter(Budget(usd=1.0)), "primes")


def test_replayed_calls_beside_priced_ones_leave_the_dollar_budget_enforced() -> None:
    # A replay spends nothing and has no price; a real draft beside it still spends money, and
    # the budget must stop it (the total cost is unknown, what was spent is not).
    meter = Meter(Budget(usd=0.01))
    common = {"prompt_tokens": 10, "completion_tokens": 10, "latency_s": 0.1, "cached": False}
    meter.record("programmer", cost_usd=None, replayed=True, **common)
    assert meter.usage.cost_usd is None and meter.usage.replayed_calls == 1
    assert Budget(usd=0.01).violation(meter.usage) is None
    meter.record("programmer", cost_usd=0.02, **common)
    assert Budget(usd=0.01).violation(meter.usage) == (
        "dollar budget exceeded: $0.020000 spent, limit $0.01"
    )


def test_key_comes_from_the_sdk_environment(
    server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.enqueue("analyzer", PRIMES_SPEC)
    llm = LLMClient(cache_dir=None)
    analyze(llm, Meter(), "primes")
    assert server.requests[0].headers["Authorization"] == "Bearer sk-from-env-123"


def test_drafts_of_one_request_do_not_share_a_cached_reply(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue("programmer", "draft zero", "draft one")
    llm = client(server, tmp_path).for_task("req-0123456789abcdef")
    messages = [{"role": "user", "content": "write it"}]
    zero = llm.complete("programmer", messages, Meter(), draft=Draft(candidate=0, round=1))
    one = llm.complete("programmer", messages, Meter(), draft=Draft(candidate=1, round=1))
    again = llm.complete("programmer", messages, Meter(), draft=Draft(candidate=1, round=1))
    assert (zero.content, one.content, again.content) == ("draft zero", "draft one", "draft one")
    assert again.cached and len(server.requests) == 2
    assert [r.headers[CANDIDATE_HEADER] for r in server.requests] == ["0", "1"]
    assert {r.headers[TASK_HEADER] for r in server.requests} == {"req-0123456789abcdef"}


def test_clients_of_one_endpoint_share_one_sdk_client(
    server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each Dagster step builds its own LLMClient; the connection pool and TLS context are
    # built once per endpoint and process.
    first, second = client(server, tmp_path), client(server, tmp_path)
    assert first.client is second.client
    assert client(server, tmp_path, timeout_s=3.0).client is not first.client
    with ScriptedOpenAIServer() as other:
        assert client(other, tmp_path).client is not first.client
        # An endpoint from the environment is resolved before the lookup, so a changed
        # OPENAI_BASE_URL gets its own client.
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        from_env = LLMClient(cache_dir=None).client
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        assert LLMClient(cache_dir=None).client is not from_env
        other.enqueue("analyzer", PRIMES_SPEC)
        analyze(LLMClient(cache_dir=None), Meter(), "primes")
        assert len(other.requests) == 1 and not server.requests


def test_the_first_request_sent_or_answered_from_the_cache_is_announced(
    server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sandbox warm-up waits for it (codegen/assets/resources.py).
    for cached in (False, True):
        started = threading.Event()
        monkeypatch.setattr(llm, "first_call_started", started)
        server.enqueue("analyzer", PRIMES_SPEC)
        meter = Meter()
        analyze(client(server, tmp_path), meter, "primes")
        assert meter.usage.cache_hits == int(cached)
        assert started.is_set()
