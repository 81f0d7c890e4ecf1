"""The first `make run` starts the first corpus and index build by itself, once, and a setting
turns it off (as the test suite does for every daemon it starts). It runs only the sources the
settings enable; the others are recorded "disabled" without a run, and the chunks and index
still follow once the enabled sources are in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    Definitions,
    SensorResult,
    SkipReason,
    build_sensor_context,
    evaluate_automation_conditions,
    instance_for_test,
)

import codegen.settings as config
from codegen.assets import corpus as corpus_assets
from codegen.assets.corpus import CORPUS_SOURCES
from codegen.assets.resources import SettingsResource, VectorIndexResource
from codegen.orchestration.launch import first_build_sensor


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
    # The default settings enable the standard library alone: one run, for it.
    assert [r.partition_key for r in first.run_requests or []] == ["local"]
    assert all(r.tags["codegen/command"] == "first-build" for r in first.run_requests or [])
    again = tick(instance, first.cursor)
    assert isinstance(again, SkipReason)  # once per instance, even before the build ends

    built = isolated_home / "corpus" / "chunks.jsonl"
    built.parent.mkdir(exist_ok=True)
    built.write_text("")
    other = tick(instance)  # a corpus exists (built by `codegen corpus build`): nothing to do
    assert isinstance(other, SensorResult) and not other.run_requests


def test_the_first_build_runs_only_the_enabled_sources_and_still_reaches_the_chunks(
    instance: DagsterInstance, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEGEN_CORPUS__BUILD_ON_FIRST_RUN", "true")
    monkeypatch.setenv("CODEGEN_CORPUS__SOURCES", '["local", "blogs"]')
    config.get_settings.cache_clear()
    first = tick(instance)
    assert isinstance(first, SensorResult)
    assert sorted(r.partition_key for r in first.run_requests or []) == ["blogs", "local"]
    disabled = sorted(set(CORPUS_SOURCES) - {"local", "blogs"})
    recorded = [e for e in first.asset_events if isinstance(e, AssetMaterialization)]
    assert sorted(e.partition or "" for e in recorded) == disabled
    assert {e.metadata["status"].value for e in recorded} == {"disabled"}
    for source in disabled:  # an empty raw stage, as a disabled source's run writes
        assert (isolated_home / "corpus" / "raw" / f"{source}.jsonl").read_text() == ""

    # The daemon records the sensor's events; the two runs then materialize their partitions.
    # The downstream stages wait for every partition: they start now, with no run for the rest.
    defs = Definitions(
        assets=[
            corpus_assets.raw_documents,
            corpus_assets.clean_documents,
            corpus_assets.deduped_documents,
            corpus_assets.chunks,
        ],
        resources={"settings": SettingsResource()},
    )
    for event in recorded:
        instance.report_runless_asset_event(event)
    before = evaluate_automation_conditions(defs=defs, instance=instance)
    assert before.total_requested == 0  # the enabled sources are not in yet
    for source in ("local", "blogs"):
        instance.report_runless_asset_event(
            AssetMaterialization(corpus_assets.raw_documents.key, partition=source)
        )
    after = evaluate_automation_conditions(defs=defs, instance=instance, cursor=before.cursor)
    assert after.get_requested_partitions(AssetKey("clean_documents")) == {None}
