"""The first `make run` starts the first corpus and index build by itself, once, and a setting
turns it off (as the test suite does for every daemon it starts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    SensorResult,
    SkipReason,
    build_sensor_context,
    instance_for_test,
)

import codegen.settings as config
from codegen.assets.corpus import CORPUS_SOURCES
from codegen.assets.resources import SettingsResource, VectorIndexResource
from codegen.orchestration.corpus import first_build_sensor


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


def tick(instance: DagsterInstance, cursor: str | None = None) -> SensorResult | SkipReason:
    context = build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"settings": SettingsResource(), "vector_index": VectorIndexResource()},
    )
    return first_build_sensor(context)


def test_a_fresh_home_starts_the_first_build_once(
    instance: DagsterInstance, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = tick(instance)  # the suite's setting: off
    assert isinstance(off, SkipReason) and "build_on_first_run" in (off.skip_message or "")

    monkeypatch.setenv("CODEGEN_CORPUS__BUILD_ON_FIRST_RUN", "true")
    config.get_settings.cache_clear()
    first = tick(instance)
    assert isinstance(first, SensorResult)
    assert sorted(r.partition_key for r in first.run_requests or []) == sorted(CORPUS_SOURCES)
    assert all(r.tags["codegen/command"] == "first-build" for r in first.run_requests or [])
    again = tick(instance, first.cursor)
    assert isinstance(again, SkipReason)  # once per instance, even before the build ends

    built = isolated_home / "corpus" / "chunks.jsonl"
    built.parent.mkdir()
    built.write_text("")
    other = tick(instance)  # a corpus exists (built by `codegen corpus build`): nothing to do
    assert isinstance(other, SensorResult) and not other.run_requests
