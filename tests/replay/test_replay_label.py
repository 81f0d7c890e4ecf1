"""A replayed run says it was replayed (issue 49, point 6): a replay server names the model its
recording says wrote each reply (``unknown`` when it does not say) and marks its completions
``codegen-replay``; the crew labels those calls ``replay:<model>`` and prices none of them, in
its usage, a request's ``report.json``, an evaluation's history and ``codegen eval list``. The
scripted endpoint, which plays the model asked for, still shows the configured model and
its price.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from codegen.agents.llm import (
    REPLAY_FINGERPRINT,
    ROLE_HEADER,
    SCRIPTED_FINGERPRINT,
    TASK_HEADER,
    Budget,
    LLMClient,
    Meter,
    request_key,
)
from codegen.evaluation.humaneval import get_problem
from codegen.orchestration.cli import main
from codegen.replay.openai_server import OpenAICompatibleServer
from codegen.replay.recording import Entry, read_recording, write_recording
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.replay.server import ReplayServer
from tests.replay.test_record_round_trip import replay_serve

CODEGEN = str(Path(sys.executable).parent / "codegen")
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}
MESSAGES = [{"role": "user", "content": "write it"}]


def llm_client(server: OpenAICompatibleServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        cache_dir=tmp_path / "cache",
        prices=PRICES,
        max_retries=0,
        timeout_s=10.0,
    )


def replay_of(tmp_path: Path, model: str | None) -> ReplayServer:
    path = tmp_path / f"rec-{model}.jsonl"
    write_recording(path, [Entry("reviewer", "T/1", None, None, "APPROVED", model=model)], "test")
    return ReplayServer(read_recording(path), log=io.StringIO())


@pytest.mark.parametrize(
    ("recorded", "label"), [("gpt-4-turbo", "replay:gpt-4-turbo"), (None, "replay:unknown")]
)
def test_a_replayed_reply_names_the_recorded_model_and_costs_nothing(
    tmp_path: Path, recorded: str | None, label: str
) -> None:
    with replay_of(tmp_path, recorded) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        headers = {ROLE_HEADER: "reviewer", TASK_HEADER: "T/1"}
        raw = sdk.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, extra_headers=headers
        )
        # Never the model the request asked for: that model was not called.
        assert raw.model == (recorded or "unknown")
        assert raw.system_fingerprint == REPLAY_FINGERPRINT
        llm = llm_client(srv, tmp_path)
        llm.task = "T/1"
        meter = Meter(Budget(usd=0.01))
        done = llm.complete("reviewer", MESSAGES, meter)
        # Answered from the response cache the second time: still the replay's label.
        again = llm.complete("reviewer", MESSAGES, meter)
    assert (done.model, done.cost_usd, done.replayed) == (label, None, True)
    assert again.cached and again.model == label
    usage = meter.usage
    assert usage.cost_usd is None and usage.replayed_calls == 1 and usage.unpriced_calls == 0
    assert [(e.model, e.cost_usd) for e in usage.endpoints] == [(label, None)]
    assert list(usage.per_model()) == [label]
    meter.check()  # a replay spent nothing: a dollar budget does not stop it


def test_the_scripted_endpoint_plays_the_configured_model_and_is_priced(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(script={"reviewer": ["APPROVED", "APPROVED"]}) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        raw = sdk.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, extra_headers={ROLE_HEADER: "reviewer"}
        )
        assert (raw.model, raw.system_fingerprint) == ("gpt-4o-mini", SCRIPTED_FINGERPRINT)
        meter = Meter()
        done = llm_client(srv, tmp_path).complete("reviewer", MESSAGES, meter)
    assert done.model == "gpt-4o-mini" and not done.replayed
    assert done.cost_usd is not None and done.cost_usd > 0
    assert meter.usage.replayed_calls == 0 and meter.usage.cost_usd == done.cost_usd


# -- an evaluation, then `codegen eval list` -----------------------------------------------
def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["eval", "humaneval", "--json", "--task", "HumanEval/0", *args])
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    return json.loads(out)


def listed(capsys: pytest.CaptureFixture[str]) -> tuple[list[dict[str, Any]], str]:
    capsys.readouterr()
    assert main(["eval", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert main(["eval", "list"]) == 0
    return rows, capsys.readouterr().out


@pytest.mark.docker
def test_an_evaluation_against_a_replay_is_listed_as_a_replay_without_a_price(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from codegen.testing.scripted_crew import make_handler

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # The scripted endpoint first: the configured model, at its price.
    with ScriptedOpenAIServer(handler=make_handler(solve=["HumanEval-0"])) as scripted:
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        played = run_eval(capsys)
    assert played["models"] == ["gpt-4o-mini"] and played["cost_usd"] > 0
    # Then a MapCoder file (which does not say which model wrote it), replayed.
    p = get_problem("HumanEval-0")
    row = {"task_id": "HumanEval/0", "prompt": p.prompt, "entry_point": p.entry_point}
    row |= {"responses": [f"```python\n{p.prompt}{p.canonical_solution}```\n"]}
    mapcoder = tmp_path / "mapcoder.jsonl"
    mapcoder.write_text(json.dumps(row) + "\n")
    recording = tmp_path / "replay.jsonl"
    assert main(["replay", "import", "--format", "mapcoder", str(mapcoder), str(recording)]) == 0
    with ReplayServer(read_recording(recording), log=io.StringIO()) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        replayed = run_eval(capsys)
    assert replayed["pass_at_k"] == {"pass@1": 1.0}
    assert replayed["models"] == ["replay:unknown"] and replayed["cost_usd"] is None
    rows, text = listed(capsys)
    assert [(r["model"], r["cost_usd"] is None) for r in rows] == [
        ("gpt-4o-mini", False),
        ("replay:unknown", True),
    ]
    [replay_line] = [line for line in text.splitlines() if "replay:unknown" in line]
    assert "gpt-4o-mini" not in replay_line
    at = text.splitlines()[0].index("cost_usd")  # the columns are padded to line up
    assert replay_line[at:].split()[0] == "-"


# -- a request, replayed through `codegen generate` ------------------------------------------
REQUEST = "Write a function primes_up_to(n) that returns all primes <= n."
RECORDED_MODEL = "gpt-4o-2024-08-06"


@pytest.mark.docker
def test_a_replayed_request_reports_the_replay_and_no_price(tmp_path: Path) -> None:
    key = request_key(REQUEST)
    entries = [
        Entry(
            role,
            "req-recorded",
            *((0, 1) if role == "programmer" else (None, None)),
            content=reply if isinstance(reply, str) else json.dumps(reply),
            model=RECORDED_MODEL,
            request=key,
        )
        for role in ("analyzer", "test_designer", "programmer", "reviewer", "documenter")
        for reply in [primes_handler(role, {})]
    ]
    recording = tmp_path / "request.jsonl"
    write_recording(recording, entries, source="test")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["CODEGEN_SANDBOX__POOL_SIZE"] = "1"
    with replay_serve(recording) as base_url:
        proc = subprocess.run(
            [CODEGEN, "generate", "--json", "--launch", "here", REQUEST],
            capture_output=True,
            text=True,
            env=env | {"OPENAI_BASE_URL": base_url},
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["status"] == "passed" and out["cost_usd"] is None
    report = json.loads((Path(out["artifact_dir"]) / "report.json").read_text())
    shown = [
        entry
        for entries in report["endpoints"].values()
        for entry in (entries if isinstance(entries, list) else [entries])
    ]
    label = f"replay:{RECORDED_MODEL}"
    assert len(shown) == 5 and all((e["model"], e["cost_usd"]) == (label, None) for e in shown)
    usage = report["usage"]
    assert usage["cost_usd"] is None and usage["replayed_calls"] == 5
    assert list(usage["per_model"]) == [label]
    assert "gpt-4o-mini" not in json.dumps(report["endpoints"])
