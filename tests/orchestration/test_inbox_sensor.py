"""The inbox sensor and the launchpad's submit job, against a real Dagster instance."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context, instance_for_test

from codegen.agents.artifacts import is_request_id, new_request_id
from codegen.agents.roles import BadRequest
from codegen.assets.resources import SettingsResource
from codegen.orchestration.instance import storage_overrides
from codegen.orchestration.launch import build_inbox_sensor, codegen_request_job, submit_request_job
from codegen.requests.inbox import parse_request_file
from codegen.requests.store import RequestStore

inbox_sensor = build_inbox_sensor(codegen_request_job)


pytestmark = pytest.mark.dagster_instance


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    # Postgres when the session runs on it (CI's second pass), else SQLite.
    with instance_for_test(overrides=storage_overrides()) as inst:
        yield inst


def tick(instance: DagsterInstance, cursor: str | None = None) -> SensorResult:
    """One evaluation, from ``cursor`` (the one the daemon kept: the last finished tick's)."""
    context = build_sensor_context(
        instance=instance, resources={"settings": SettingsResource()}, cursor=cursor
    )
    result = inbox_sensor(context)
    assert isinstance(result, SensorResult)
    return result


def test_one_run_per_new_file_and_malformed_files_moved_aside(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    inbox = isolated_home / "inbox"
    inbox.mkdir()
    (inbox / "primes.txt").write_text("Write primes_up_to(n) using a sieve.\n")
    (inbox / "fib.json").write_text(
        json.dumps({"request": "Write fib(n).", "options": {"max_rounds": 2}})
    )
    (inbox / "broken.json").write_text('{"request": ')
    (inbox / "wrong.json").write_text(json.dumps({"text": "no request key"}))
    (inbox / "badopt.json").write_text(json.dumps({"request": "x", "options": {"rm": "-rf"}}))
    (inbox / "empty.txt").write_text("   \n")
    (inbox / "blob.bin").write_bytes(b"\x00\xff\xfe" * 100)
    (inbox / "writing.txt.part").write_text("half a req")

    result = tick(instance)
    assert len(result.run_requests) == 2
    keys = [r.partition_key for r in result.run_requests]
    assert all(is_request_id(k) for k in keys)
    assert [r.run_key for r in result.run_requests] == keys
    [add] = result.dynamic_partitions_requests
    assert add.partitions_def_name == "requests" and sorted(add.partition_keys) == sorted(keys)

    store = RequestStore(isolated_home / "requests")
    stored = {store.get(k).text: store.get(k) for k in keys}
    assert stored["Write fib(n)."].options == {"max_rounds": 2}
    assert stored["Write primes_up_to(n) using a sieve."].source == "inbox:primes.txt"

    rejected = inbox / "rejected"
    reasons = {
        p.name.removesuffix(".reason.txt"): p.read_text().strip()
        for p in rejected.glob("*.reason.txt")
    }
    assert set(reasons) == {"broken.json", "wrong.json", "badopt.json", "empty.txt", "blob.bin"}
    assert "invalid JSON" in reasons["broken.json"]
    assert '"request"' in reasons["wrong.json"]
    assert "bad options: rm: unknown option" in reasons["badopt.json"]
    assert "empty" in reasons["empty.txt"]
    assert "UTF-8" in reasons["blob.bin"]
    # Nothing is lost: every rejected file is kept as it was, next to its reason.
    assert (rejected / "blob.bin").read_bytes() == b"\x00\xff\xfe" * 100
    assert len(list((inbox / "processed").iterdir())) == 2
    assert (inbox / "writing.txt.part").exists()  # still being written: left alone

    # The next tick, from the cursor Dagster kept, finds nothing new: one run per file.
    again = tick(instance, result.cursor)
    assert not again.run_requests
    assert {store.get(k).state for k in keys} == {"launched"}


def test_a_second_file_with_the_same_name_keeps_both(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    inbox = isolated_home / "inbox"
    inbox.mkdir()
    for _ in range(2):
        (inbox / "bad.json").write_text("nope")
        tick(instance)
    assert sorted(p.name for p in (inbox / "rejected").iterdir()) == [
        "bad.json",
        "bad.json.1",
        "bad.json.1.reason.txt",
        "bad.json.reason.txt",
    ]


def test_launchpad_submit_job_queues_a_request_the_sensor_launches(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    result = submit_request_job.execute_in_process(
        run_config={
            "ops": {
                "submit_request": {
                    "config": {"request": "Write is_palindrome(s).", "max_rounds": 4}
                }
            }
        },
        resources={"settings": SettingsResource()},
        instance=instance,
    )
    request_id = result.output_for_node("submit_request")
    stored = RequestStore(isolated_home / "requests").get(request_id)
    assert stored.state == "queued" and stored.options == {"max_rounds": 4}

    launched = tick(instance)
    assert [r.partition_key for r in launched.run_requests] == [request_id]
    assert not tick(instance, launched.cursor).run_requests
    assert RequestStore(isolated_home / "requests").get(request_id).state == "launched"


def test_submit_job_refuses_an_empty_request(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    # The launchpad's default config: every field defaulted, the request empty.
    result = submit_request_job.execute_in_process(
        resources={"settings": SettingsResource()}, instance=instance, raise_on_error=False
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    error = str(failure.event_specific_data.error)
    assert "request refused" in error and "empty" in error
    bad = submit_request_job.execute_in_process(
        run_config={"ops": {"submit_request": {"config": {"request": "x", "max_rounds": 500}}}},
        resources={"settings": SettingsResource()},
        instance=instance,
        raise_on_error=False,
    )
    assert not bad.success
    assert not RequestStore(isolated_home / "requests").all()  # nothing was stored


def test_bad_option_values_go_to_rejected_before_any_model_call(
    instance: DagsterInstance, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegen.orchestration.definitions import build_definitions
    from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler

    inbox = isolated_home / "inbox"
    if inbox.exists():  # importing the definitions module (first use) loads them already
        inbox.rmdir()
    build_definitions()  # loading the code location makes the inbox the README writes into
    assert inbox.is_dir()
    files = {
        "lots.json": {"request": "Write fib(n).", "options": {"max_rounds": "lots"}},
        "many.json": {"request": "Write fib(n).", "options": {"max_rounds": 500}},
        "top.json": {"request": "Write fib(n).", "max_rounds": 500},
        "review.json": {"request": "Write fib(n).", "options": {"review": 3}},
        "mode.json": {"request": "Write fib(n).", "options": {"review": "boss"}},
    }
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for name, body in files.items():
            (inbox / name).write_text(json.dumps(body))
        result = tick(instance)
        assert not result.run_requests and not server.requests  # no run, no model call
    reasons = {
        p.name.removesuffix(".reason.txt"): p.read_text().strip()
        for p in (inbox / "rejected").glob("*.reason.txt")
    }
    assert set(reasons) == set(files)
    assert "max_rounds" in reasons["lots.json"] and "integer" in reasons["lots.json"]
    assert "max_rounds" in reasons["many.json"] and "20" in reasons["many.json"]
    assert "unknown keys: max_rounds" in reasons["top.json"]
    assert "review" in reasons["review.json"] and "'agent'" in reasons["review.json"]
    assert "review" in reasons["mode.json"]
    assert not RequestStore(isolated_home / "requests").all()


def test_huge_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("a" * 2_000_000)
    with pytest.raises(BadRequest, match="limit"):
        parse_request_file(big)


def test_a_tick_cut_short_loses_no_request_and_makes_none_twice(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    """The daemon killed inside a tick, before Dagster recorded its run requests: the daemon
    keeps the previous cursor, and the next tick asks for the same requests again."""
    inbox = isolated_home / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("Write a(n).")
    lost = tick(instance)  # its result never reaches Dagster
    [first] = [r.run_key for r in lost.run_requests]
    (inbox / "b.txt").write_text("Write b(n).")
    retried = tick(instance)  # same (empty) cursor as before the lost tick
    assert sorted(r.run_key for r in retried.run_requests) == sorted(
        [first, request_id_of(inbox, "b.txt")]
    )
    assert not tick(instance, retried.cursor).run_requests
    assert len(RequestStore(isolated_home / "requests").all()) == 2


@pytest.mark.parametrize("stored_before_crash", [False, True])
def test_a_file_claimed_when_the_scan_died_is_taken_once(
    instance: DagsterInstance, isolated_home: Path, stored_before_crash: bool
) -> None:
    """Killed after claiming a file (renaming it to its hidden claim name), with or without
    having stored its request: the next scan finishes the claim, under the claimed id."""
    inbox = isolated_home / "inbox"
    inbox.mkdir()
    request_id = new_request_id()
    (inbox / f".{request_id}__c.txt.claim").write_text("Write c(n).")
    store = RequestStore(isolated_home / "requests")
    if stored_before_crash:
        store.add("Write c(n).", source="inbox:c.txt", state="queued", request_id=request_id)
    (inbox / ".editor-swap").write_text("not ours")  # other hidden files stay untouched

    result = tick(instance)
    assert [r.run_key for r in result.run_requests] == [request_id]
    assert [(r.id, r.text, r.source) for r in store.all()] == [
        (request_id, "Write c(n).", "inbox:c.txt")
    ]
    assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == [".editor-swap"]
    assert (inbox / "processed" / f"{request_id}__c.txt").read_text() == "Write c(n)."


def test_a_cursor_that_is_not_request_ids_is_ignored(
    instance: DagsterInstance, isolated_home: Path
) -> None:
    store = RequestStore(isolated_home / "requests")
    queued = store.add("Write d(n).", state="queued")
    for cursor in ("not json", '{"a": 1}', '["../../etc"]'):
        assert [r.run_key for r in tick(instance, cursor).run_requests] == [queued.id]
    assert store.get(queued.id).state == "queued"


def request_id_of(inbox: Path, name: str) -> str:
    [path] = (inbox / "processed").glob(f"req-*__{name}")
    return path.name.split("__")[0]
