"""HumanEval through the real crew, a scripted OpenAI-compatible server and the real sandbox."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from codegen.evaluation.humaneval import get_problem, hidden_check_lines, task_keys
from codegen.orchestration.cli import main
from codegen.replay.scripted import Reply, ScriptedOpenAIServer
from codegen.testing.scripted_crew import make_handler

pytestmark = pytest.mark.docker
API_KEY = "sk-eval-test-0123456789-not-a-real-key"


@pytest.fixture
def endpoint_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    def point_at(server: ScriptedOpenAIServer) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)

    return point_at


def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["eval", "humaneval", "--json", *args])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def task_args(keys: list[str]) -> list[str]:
    return [arg for k in keys for arg in ("--task", k)]


def test_pass_at_1_is_the_exact_fraction_solved(
    endpoint_env: Any, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    keys = task_keys()[:8]
    solve = {keys[1], keys[4], keys[6]}
    with ScriptedOpenAIServer(handler=make_handler(solve)) as server:
        endpoint_env(server)
        code, result = run_eval(capsys, *task_args(keys))
    assert code == 0, result
    assert result["pass_at_k"] == {"pass@1": 3 / 8}
    assert result["solved_tasks"] == 3 and result["tasks_scored"] == 8
    assert (
        result["failures_by_category"]["wrong_answer"]
        + result["failures_by_category"]["runtime_error"]
        == 5
    )
    assert result["crew_statuses"] == {"passed": 8}
    assert result["prompt_tokens"] > 0 and result["completion_tokens"] > 0
    assert result["cost_usd"] > 0  # gpt-4o-mini is in the price table
    # The key never lands in anything the evaluation stores.
    for path in (isolated_home / "eval").rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


def test_code_that_passes_its_own_tests_but_solves_nothing_scores_zero(
    endpoint_env: Any, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    keys = task_keys()[10:16]
    with ScriptedOpenAIServer(handler=make_handler(solve=keys[:2])) as server:
        endpoint_env(server)
        code, result = run_eval(capsys, *task_args(keys))
    assert code == 0
    assert result["crew_statuses"] == {"passed": 6}  # the crew is satisfied with itself...
    assert result["pass_at_k"] == {"pass@1": 2 / 6}  # ...the hidden tests are not
    assert result["solved_tasks"] == 2
    # So its `passed` is right 2 times in 6, and it called every correct sample passed.
    assert result["precision"] == {
        "passed": 6,
        "correct": 2,
        "hidden_passed": 2,
        "precision": 2 / 6,
        "recall": 1.0,
    }
    config_dir = Path(result["results_dir"])
    for key in keys:
        cand = json.loads((config_dir / "samples" / f"{key}.json").read_text())["candidates"][0]
        assert cand["own_tests_total"] >= 1 and cand["own_tests_passed"] == cand["own_tests_total"]


# Tasks whose prompts define helpers or several functions, and some plain ones.
LEAK_KEYS = [
    "HumanEval-0",
    "HumanEval-10",
    "HumanEval-32",
    "HumanEval-38",
    "HumanEval-50",
    "HumanEval-87",
    "HumanEval-129",
    "HumanEval-163",
]


def leaked_lines(text: str, keys: list[str]) -> list[str]:
    found = [line for k in keys for line in hidden_check_lines(get_problem(k)) if line in text]
    if "def check(" in text:
        found.append("def check(")
    return found


def test_no_hidden_test_code_reaches_any_agent(
    endpoint_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(handler=make_handler(solve=LEAK_KEYS[::2])) as server:
        endpoint_env(server)
        code, result = run_eval(capsys, *task_args(LEAK_KEYS))
        requests = [r for r in server.requests if r.method == "POST"]
    assert code == 0 and result["tasks_scored"] == len(LEAK_KEYS)
    roles = {r.role for r in requests}
    assert roles == {"analyzer", "test_designer", "programmer", "reviewer", "documenter"}
    for req in requests:
        assert leaked_lines(req.prompt_text, LEAK_KEYS) == [], req.role
    # The recording is real: each task's own prompt did reach the analyzer.
    analyzer_text = "\n".join(r.prompt_text for r in requests if r.role == "analyzer")
    for key in LEAK_KEYS:
        assert get_problem(key).prompt.rstrip() in analyzer_text
    # And the detector is not blind: a prompt carrying a hidden test is caught.
    assert leaked_lines(get_problem("HumanEval-38").test, LEAK_KEYS)


def test_rerun_is_a_cache_hit_and_a_failed_task_is_retried_alone(
    endpoint_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = task_keys()[20:24]
    flaky = keys[2]
    solver = make_handler(solve=keys)
    broken = {"on": True}
    marker = f'"name": "{get_problem(flaky).entry_point}"'  # as the spec JSON names it

    def handler(role: str, body: dict[str, Any]) -> Any:
        text = "\n".join(str(m.get("content")) for m in body["messages"])
        if broken["on"] and role == "programmer" and marker in text:
            return Reply.error(400, "scripted outage for one task")
        return solver(role, body)

    with ScriptedOpenAIServer(handler=handler) as server:
        endpoint_env(server)
        capsys.readouterr()
        code = main(["eval", "humaneval", "--json", *task_args(keys)])
        out, err = capsys.readouterr()
        first = json.loads(out)  # the results are printed, then the run is marked an outage
        assert code == 5
        last = err.strip().splitlines()[-1]
        assert last.startswith("codegen: error: 1 of 4 tasks could not run"), err
        assert "crew status error" in last and "HTTP 400" in last, last
        # The outage is not a score: the task is unscored, nothing of it is stored.
        assert first["crew_statuses"] == {"passed": 3} and first["tasks_scored"] == 3
        assert list(first["errors"]) == [flaky] and first["missing"] == [flaky]
        assert first["passed_samples"] == 3
        assert not (Path(first["results_dir"]) / "samples" / f"{flaky}.json").exists()
        sent = len(server.requests)

        broken["on"] = False
        code, second = run_eval(capsys, *task_args(keys))
        assert code == 0
        assert second["pass_at_k"] == {"pass@1": 1.0}
        assert second["cached_tasks"] == 3  # the three finished tasks: no work at all
        retried = server.requests[sent:]
        assert retried, "the failed task was not retried"
        # Every request of the second run belongs to the failed task.
        others = [get_problem(k).entry_point for k in keys if k != flaky]
        for r in retried:
            assert get_problem(flaky).entry_point in r.prompt_text
            assert not any(name in r.prompt_text for name in others)
        sent = len(server.requests)

        code, third = run_eval(capsys, *task_args(keys))
        assert code == 0 and third["cached_tasks"] == 4
        assert len(server.requests) == sent  # a finished run re-run costs nothing


def test_n_samples_report_pass_at_10(
    endpoint_env: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sampling at temperature > 0 (no response cache); the scripted model alternates between
    # the right and a wrong answer, so 5 of 10 samples pass.
    monkeypatch.setenv("CODEGEN_LLM__DEFAULT__TEMPERATURE", "0.8")
    key = "HumanEval-2"
    right, wrong = make_handler(solve=[key]), make_handler(solve=())
    calls = {"programmer": 0}
    lock = threading.Lock()  # samples run concurrently

    def handler(role: str, body: dict[str, Any]) -> Any:
        if role == "programmer":
            with lock:
                calls["programmer"] += 1
                odd = calls["programmer"] % 2 == 1
            return (right if odd else wrong)(role, body)
        return right(role, body)

    with ScriptedOpenAIServer(handler=handler) as server:
        endpoint_env(server)
        code, result = run_eval(capsys, "--task", key, "--samples", "10")
    assert code == 0, result
    assert calls["programmer"] == 10
    assert result["samples"] == 10 and result["passed_samples"] == 5
    assert result["pass_at_k"] == {"pass@1": 0.5, "pass@10": 1.0}


def never_defines_the_function(role: str, body: dict[str, Any]) -> Any:
    """A weak model: every reply well-formed except the programmer's, which never defines the
    spec's function (as small local models do)."""
    if role == "programmer":
        return "```python\ndef helper(x):\n    return x\n```"
    return make_handler(solve=())(role, body)


def test_a_model_that_never_writes_the_function_is_scored_zero_and_cached(
    endpoint_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(handler=never_defines_the_function) as server:
        endpoint_env(server)
        code, result = run_eval(capsys, "--limit", "5")
        assert code == 0, result
        assert result["pass_at_k"] == {"pass@1": 0.0} and result["tasks_scored"] == 5
        assert result["model_failures"] == {"no_code": 5} and result["outages"] == 0
        assert result["crew_statuses"] == {"no_code": 5} and result["errors"] == {}
        assert result["failures_by_category"]["crew_status"] == 5  # nothing to score
        sent = len(server.requests)
        # A score, so cached: the re-run asks the model nothing.
        code, again = run_eval(capsys, "--limit", "5")
        assert code == 0 and again["cached_tasks"] == 5
        assert len(server.requests) == sent


def test_an_endpoint_that_is_down_is_an_outage_and_nothing_is_cached(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("CODEGEN_LLM__MAX_RETRIES", "0")
    capsys.readouterr()
    code = main(["eval", "humaneval", "--json", "--limit", "2"])
    out, err = capsys.readouterr()
    assert code == 5, err
    assert "2 of 2 tasks could not run" in err and "cannot reach the LLM endpoint" in err
    result = json.loads(out)
    assert result["tasks_scored"] == 0 and len(result["errors"]) == 2
    stored = [p for p in (isolated_home / "eval").rglob("*.json") if "samples" in p.parts]
    assert stored == []
    assert not (isolated_home / "eval" / "history.jsonl").exists()  # not a data point
