"""Human review (HITL): the CLI flow, both mode, the timeout, and racing verdicts.

Real Dagster runs on the configured instance (the CLI) or a fresh test instance, a real
Docker sandbox, the scripted OpenAI server over HTTP.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    AssetSelection,
    DagsterInstance,
    Definitions,
    SensorResult,
    build_sensor_context,
    instance_for_test,
    materialize,
)

import codegen.settings as config
from codegen.assets import codegen, codegen_checks
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.orchestration.cli import main
from codegen.orchestration.instance import storage_overrides
from codegen.orchestration.launch import build_review_sensor, review_request_job
from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer, primes_handler
from codegen.requests.review import ReviewError, ReviewStore
from codegen.requests.store import RequestStore

pytestmark = pytest.mark.dagster_instance

REQUEST = "Write a function primes_up_to(n) that returns all primes <= n (Sieve of Eratosthenes)."
POINTS = "Name the algorithm in the module docstring; say what n < 2 returns."
# The programmer's answer to the person's points: distinct, so we can see it is what passed.
REVISED = PRIMES_SOLUTION.replace("```python\n", "```python\n# revised after human review\n", 1)
SELECTION = [
    *codegen.REQUEST_ASSETS.values(),
    codegen_checks.review_not_pending,
]
# What the review_request job rematerializes (its upstream assets load from storage).
CODEGEN = str(Path(sys.executable).parent / "codegen")
REVIEW_SELECTION = AssetSelection.assets(
    codegen.REQUEST_ASSETS["review"], codegen.REQUEST_ASSETS["docs"]
)


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process: for commands that run no job."""
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def run_job_cli(*args: str) -> tuple[int, str, str]:
    """The CLI in its own process, as a user runs it: a command that runs a job loads the
    code location, whose resources hold this test's CODEGEN_HOME (read when it loads)."""
    proc = subprocess.run(
        [CODEGEN, *args], capture_output=True, text=True, timeout=300, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.docker
def test_cli_human_review_reject_then_approve(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        server.enqueue("programmer", PRIMES_SOLUTION, REVISED)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-review")
        monkeypatch.setenv("CODEGEN_SANDBOX__BACKEND", "docker")
        monkeypatch.setenv("CODEGEN_SANDBOX__POOL_SIZE", "1")
        config.get_settings.cache_clear()

        rc, out, err = run_job_cli(
            "generate", REQUEST, "--review", "human", "--launch", "here", "--json"
        )
        assert rc == 4, err
        first = json.loads(out)
        request_id = first["request_id"]
        assert first["status"] == "awaiting_review", first
        assert first["tests_passed"] == first["tests_total"] == 5
        folder = Path(first["artifact_dir"])
        assert {"solution.py", "test_solution.py", "spec.json"} <= set(first["artifacts"])
        assert not (folder / "README.md").exists()
        assert "codegen review" in err
        # Human mode: the person reviews instead of the agent; no docs before approval.
        assert not server.requests_for("reviewer") and not server.requests_for("documenter")

        rc, out, _ = run_cli(capsys, "requests", "--status", "awaiting_review", "--json")
        [listed] = json.loads(out)
        assert listed["request_id"] == request_id and listed["review_round"] == 1
        assert listed["rounds"] == 1 and listed["cost_usd"] >= 0

        # Bad verdicts: one line each, nothing stored changes.
        before = digest(folder)
        for args, code, words in [
            (["review", request_id, "--approve", "--reject", "x"], 2, "exactly one"),
            (["review", request_id], 2, "exactly one"),
            (["review", request_id, "--reject", "  "], 2, "points"),
            (["review", "../etc", "--approve"], 2, "not a request id"),
            (["review", "req-0000000000000000", "--approve"], 2, "unknown request"),
        ]:
            rc, _, err = run_cli(capsys, *args)
            lines = err.strip().splitlines()
            assert rc == code and len(lines) == 1, (args, err)
            assert lines[0].startswith("codegen: error:") and words in lines[0], lines
        assert digest(folder) == before

        rc, out, err = run_job_cli("review", request_id, "--reject", POINTS, "--json")
        assert rc == 4, err
        second = json.loads(out)
        assert second["status"] == "awaiting_review" and second["rounds"] == 2
        # The person's points reached the programmer's prompt, with the code they judged.
        revision = server.requests_for("programmer")[-1]
        assert POINTS in revision.prompt_text and "def primes_up_to" in revision.prompt_text
        assert revision.headers["X-Codegen-Round"] == "2"
        assert "# revised after human review" in (folder / "solution.py").read_text()

        rc, out, err = run_job_cli(
            "review", request_id, "--approve", "--note", "ship it", "--reviewer", "alice"
        )
        assert rc == 0, err
        assert "passed" in out

        # A verdict for a finished request: one line, nothing changes.
        done = digest(folder)
        rc, _, err = run_cli(capsys, "review", request_id, "--reject", "too late")
        assert rc == 2 and "not awaiting review" in err and len(err.strip().splitlines()) == 1
        assert digest(folder) == done

        rc, out, _ = run_cli(capsys, "requests", "--json")
        assert [(r["request_id"], r["status"]) for r in json.loads(out)] == [(request_id, "passed")]

    report = json.loads((folder / "report.json").read_text())
    assert report["status"] == "passed" and report["rounds"] == 2
    assert "# revised after human review" in (folder / "solution.py").read_text()
    assert (folder / "README.md").read_text().startswith("# primes_up_to")
    verdicts = report["human_review"]["verdicts"]
    assert report["human_review"]["mode"] == "human"
    assert [(v["verdict"], v["text"], v["review_round"]) for v in verdicts] == [
        ("reject", POINTS, 1),
        ("approve", "ship it", 2),
    ]
    assert verdicts[1]["reviewer"] == "alice" and verdicts[0]["reviewer"]
    assert all(v["decided_at"].endswith("+00:00") for v in verdicts)
    # The documenter documented the approved (second round's) code.
    [documenter] = server.requests_for("documenter")
    assert "# revised after human review" in documenter.prompt_text

    # The verdicts are in the asset metadata too.
    instance = DagsterInstance.get()
    try:
        event = instance.get_latest_materialization_event(AssetKey("human_review"))
        assert event is not None and event.asset_materialization is not None
        meta = event.asset_materialization.metadata
        assert [v["verdict"] for v in meta["verdicts"].value] == ["reject", "approve"]
        assert meta["status"].value == "passed"
    finally:
        instance.dispose()


# -- through Dagster directly: both mode, the launchpad's config, the timeout ----------------
@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test(overrides=storage_overrides()) as inst:
        yield inst


def resources(server: ScriptedOpenAIServer) -> dict[str, Any]:
    return {
        "settings": SettingsResource(),
        "llm": LLMResource(base_url=server.base_url, cache_dir=None, max_retries=1),
        "sandbox": SandboxResource(backend="docker", pool_size=1, timeout_s=20),
        "retriever": RetrieverResource(),
    }


def new_request(instance: DagsterInstance, home: Path, options: dict[str, Any]) -> str:
    req = RequestStore(home / "requests").add(REQUEST, options)
    instance.add_dynamic_partitions("requests", [req.id])
    return req.id


def verdict_config(verdict: str, note: str = "", claim: str = "") -> dict[str, Any]:
    fields = {"verdict": verdict, "note": note, "reviewer": "", "claim": claim}
    return {"ops": {"human_review": {"config": fields}}}


def report_of(home: Path, request_id: str) -> dict[str, Any]:
    return json.loads((home / "artifacts" / request_id / "report.json").read_text())


@pytest.mark.docker
def test_both_mode_agent_rejects_first_then_a_person_approves_from_the_launchpad(
    instance: DagsterInstance, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-review")
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        server.enqueue("programmer", PRIMES_SOLUTION, REVISED)
        server.enqueue("reviewer", "REJECTED\nSay which algorithm this is.")
        request_id = new_request(instance, isolated_home, {"review": "both"})
        first = materialize(
            SELECTION, partition_key=request_id, instance=instance, resources=resources(server)
        )
        assert first.success
        report = report_of(isolated_home, request_id)
        assert report["status"] == "awaiting_review" and report["rounds"] == 2
        assert len(server.requests_for("reviewer")) == 2  # the agent rejected, then approved
        [check] = first.get_asset_check_evaluations()
        assert check.check_name == "review_not_pending" and not check.passed
        assert "awaiting review (round 1)" in (check.description or "")

        # The review_request job, as the launchpad launches it: the verdict is run config,
        # and the run claims the round itself. Without a verdict it refuses, changing nothing.
        job = Definitions(
            assets=SELECTION[:-1],
            asset_checks=[codegen_checks.review_not_pending],
            jobs=[review_request_job],
            resources=resources(server),
        ).resolve_job_def("review_request")
        folder = isolated_home / "artifacts" / request_id
        before = digest(folder)
        empty = job.execute_in_process(
            partition_key=request_id, instance=instance, raise_on_error=False
        )
        assert not empty.success and digest(folder) == before
        second = job.execute_in_process(
            partition_key=request_id,
            instance=instance,
            run_config=verdict_config("approve", "fine by me"),
        )
        assert second.success
        # A second verdict for the same round (launchpad again) fails and changes nothing.
        before = digest(folder)
        third = job.execute_in_process(
            partition_key=request_id,
            instance=instance,
            run_config=verdict_config("reject", "again"),
            raise_on_error=False,
        )
        assert not third.success and digest(folder) == before
    report = report_of(isolated_home, request_id)
    assert report["status"] == "passed" and (folder / "README.md").exists()
    [verdict] = report["human_review"]["verdicts"]
    assert (verdict["verdict"], verdict["reviewer"], verdict["text"]) == (
        "approve",
        "launchpad",
        "fine by me",
    )
    assert len(server.requests_for("reviewer")) == 2  # no agent review after the person's


@pytest.mark.docker
def test_a_forgotten_review_times_out_as_rejected(
    instance: DagsterInstance, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-review")
    monkeypatch.setenv("CODEGEN_REVIEW__MODE", "human")  # the default mode, from settings
    monkeypatch.setenv("CODEGEN_REVIEW__TIMEOUT_HOURS", "0.0002")  # under a second
    config.get_settings.cache_clear()
    sensor = build_review_sensor(review_request_job)
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        request_id = new_request(instance, isolated_home, {})
        assert materialize(
            SELECTION, partition_key=request_id, instance=instance, resources=resources(server)
        ).success
        assert report_of(isolated_home, request_id)["status"] == "awaiting_review"
        time.sleep(1.0)
        context = build_sensor_context(
            instance=instance, resources={"settings": SettingsResource()}
        )
        tick = sensor(context)
        assert isinstance(tick, SensorResult)
        [run] = tick.run_requests
        assert run.partition_key == request_id
        # The next tick finds nothing to time out: the round is claimed.
        again = sensor(context)
        assert isinstance(again, SensorResult) and not again.run_requests
        assert materialize(
            SELECTION,
            selection=REVIEW_SELECTION,
            partition_key=request_id,
            instance=instance,
            resources=resources(server),
            run_config=run.run_config,
        ).success
    report = report_of(isolated_home, request_id)
    assert report["status"] == "rejected"
    assert report["reason"] == "review timed out: no verdict within 0.0002 hours"
    assert report["human_review"]["verdicts"][0]["verdict"] == "timeout"
    assert not server.requests_for("documenter")


# -- racing verdicts ---------------------------------------------------------------------------
def _claim(root: str, request_id: str, n: int, start: Any, results: Any) -> None:
    start.wait()
    try:
        ReviewStore(Path(root)).claim(request_id, "approve", f"verdict {n}", f"reviewer-{n}")
        results.put(("won", n))
    except ReviewError as exc:
        results.put(("lost", str(exc)))


def test_racing_verdicts_exactly_one_wins(isolated_home: Path) -> None:
    from codegen.agents.state import ReviewResult

    root = isolated_home / "requests"
    request_id = RequestStore(root).add(REQUEST, {"review": "human"}).id
    store = ReviewStore(root)
    for review_round in (1, 2):  # a fresh round is open to a verdict again
        assert store.open_round(request_id, ReviewResult(mode="human")) == review_round
        # Forked processes (each its own SQLite connection) start fast: imports are inherited.
        ctx = multiprocessing.get_context("fork")
        start, results = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_claim, args=(str(root), request_id, n, start, results))
            for n in range(4)
        ]
        for proc in procs:
            proc.start()
        start.set()
        outcomes = [results.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(timeout=30)
        won = [o for o in outcomes if o[0] == "won"]
        assert len(won) == 1, outcomes
        assert all("already given" in o[1] for o in outcomes if o[0] == "lost"), outcomes
        [verdict] = [v for v in store.verdicts(request_id) if v.review_round == review_round]
        assert verdict.text == f"verdict {won[0][1]}"
    assert [v.review_round for v in store.verdicts(request_id)] == [1, 2]

    # A late verdict meant for round 1 never lands on round 3.
    assert store.open_round(request_id, ReviewResult(mode="human")) == 3
    with pytest.raises(ReviewError, match=r"review round 1 .* was already given"):
        store.claim(request_id, "reject", "late", "bob", review_round=1)
    # A claim whose run failed is released: the round takes a verdict again, once.
    claim = store.claim(request_id, "approve", "", "bob", review_round=3)
    store.release(request_id, claim.token)
    assert store.get(request_id).status == "awaiting"  # type: ignore[union-attr]
    store.claim(request_id, "approve", "", "carol")
    with pytest.raises(ReviewError, match="already given"):
        store.claim(request_id, "approve", "", "dave")
    assert [v.reviewer for v in store.verdicts(request_id)][-1] == "carol"


# -- the review mode's ways in ---------------------------------------------------------------
def test_review_mode_from_an_inbox_json_and_bad_modes_refused(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from codegen.agents.roles import BadRequest
    from codegen.requests.inbox import parse_request_file

    good = tmp_path / "good.json"
    good.write_text(json.dumps({"request": REQUEST, "options": {"review": "both"}}))
    assert parse_request_file(good)[1] == {"review": "both"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"request": REQUEST, "options": {"review": "nobody"}}))
    with pytest.raises(BadRequest, match="review: Input should be 'agent', 'human' or 'both'"):
        parse_request_file(bad)
    rc, _, err = run_cli(capsys, "generate", REQUEST, "--review", "nobody")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "nobody" in err
    assert not (isolated_home / "requests").exists()  # nothing was stored
