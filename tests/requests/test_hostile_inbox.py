"""One hostile inbox file never stops the inbox: a 200 KB .json of nested brackets (a
RecursionError in ``json.loads``) goes to rejected/ with a one-line reason, and a good file
dropped after it is still taken and launched, on that tick and on later ones."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context, instance_for_test

from codegen.assets.resources import SettingsResource
from codegen.orchestration.instance import storage_overrides
from codegen.orchestration.launch import build_inbox_sensor, codegen_request_job
from codegen.requests.store import RequestStore

pytestmark = pytest.mark.dagster_instance

NESTED = "[" * 100_000 + "]" * 100_000  # 200 KB


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test(overrides=storage_overrides()) as inst:
        yield inst


def tick(instance: DagsterInstance, cursor: str | None = None) -> SensorResult:
    context = build_sensor_context(
        instance=instance, resources={"settings": SettingsResource()}, cursor=cursor
    )
    result = build_inbox_sensor(codegen_request_job)(context)
    assert isinstance(result, SensorResult)
    return result


def drop(inbox: Path, name: str, text: str, mtime: float) -> None:
    (inbox / name).write_text(text)
    os.utime(inbox / name, (mtime, mtime))  # the scan takes files oldest first


@pytest.mark.parametrize(
    "hostile",
    [NESTED, '{"request": "Write f().", "options": {"x": ' + NESTED + "}}"],
    ids=["nested-brackets", "nested-inside-an-object"],
)
def test_a_nested_bracket_file_is_rejected_and_a_good_file_after_it_still_runs(
    hostile: str, instance: DagsterInstance, isolated_home: Path
) -> None:
    inbox = isolated_home / "inbox"
    inbox.mkdir()
    drop(inbox, "bomb.json", hostile, 1_000)
    drop(inbox, "good.json", json.dumps({"request": "Write primes_up_to(n)."}), 2_000)
    first = tick(instance)
    [run] = first.run_requests
    store = RequestStore(isolated_home / "requests")
    assert store.get(run.partition_key or "").text == "Write primes_up_to(n)."
    reason = (inbox / "rejected" / "bomb.json.reason.txt").read_text()
    assert "nested too deeply" in reason and reason.count("\n") == 1, reason
    assert [p.name for p in inbox.iterdir() if p.is_file()] == []  # no claim left behind
    # Later ticks are not stuck on it either.
    drop(inbox, "later.txt", "Write fib(n).", 3_000)
    [later] = tick(instance, first.cursor).run_requests
    assert store.get(later.partition_key or "").text == "Write fib(n)."
