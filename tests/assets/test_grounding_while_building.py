"""A request made while a corpus build runs (the first build of a fresh home, say) is told
"building (N% embedded)", not to start a build: in the step's check (the UI), its report's
grounding and `codegen generate`'s progress line; with no build running, the old advice."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, instance_for_test, materialize

from codegen.agents.report import grounding_from_json
from codegen.assets import codegen, codegen_checks
from codegen.assets.corpus_builds import COMMAND_TAG, FIRST_BUILD
from codegen.assets.resources import LLMResource, SettingsResource, VectorIndexResource
from codegen.composition import store_config
from codegen.corpus.model import Chunk
from codegen.corpus.store import chunks_path, write_jsonl_atomic
from codegen.orchestration.cli.generate import say_if_building
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.requests.store import RequestStore
from codegen.retrieval.index import open_store
from codegen.settings import get_settings


def start_first_build_run(instance: DagsterInstance) -> None:
    """A first-build run under way, as the first-build sensor starts it."""
    instance.add_run(
        DagsterRun(
            job_name="corpus_raw_job",
            run_id=str(uuid.uuid4()),
            status=DagsterRunStatus.STARTED,
            tags={COMMAND_TAG: FIRST_BUILD},
        )
    )


def grounding_check(home: Path, instance: DagsterInstance, base_url: str) -> str:
    """The spec and context steps of one request; the context_grounded check's description."""
    req = RequestStore(home / "requests").add("Write primes_up_to(n).", {})
    instance.add_dynamic_partitions("requests", [req.id])
    result = materialize(
        [
            codegen.REQUEST_ASSETS["spec"],
            codegen.REQUEST_ASSETS["context"],
            codegen_checks.context_grounded,
        ],
        partition_key=req.id,
        instance=instance,
        resources={
            "settings": SettingsResource(),
            "llm": LLMResource(base_url=base_url, max_retries=0, cache=False),
            "retriever": VectorIndexResource.for_crew(get_settings()),
        },
        raise_on_error=False,
    )
    assert result.success
    [check] = result.get_asset_check_evaluations()
    return check.description or ""


def test_a_request_during_a_build_says_building_with_the_fraction_embedded(
    isolated_home: Path,
) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server, instance_for_test() as instance:
        idle = grounding_check(isolated_home, instance, server.base_url)
        assert "build it with `codegen corpus build`" in idle, idle
        start_first_build_run(instance)
        building = grounding_check(isolated_home, instance, server.base_url)
    assert building == "grounding none: building (0% embedded: no chunks written yet)", building


def test_the_report_and_the_cli_say_how_far_the_build_got(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = get_settings()
    chunks = [
        Chunk(f"c{i}", "d", "local", f"file:///m{i}.py", f"m{i}", f"def f{i}(): ...", "py", 1, 1)
        for i in range(4)
    ]
    path = chunks_path(settings.corpus_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(path, [c.to_dict() for c in chunks])
    store = open_store(store_config(settings))
    store.reset("test-embedder", 4)
    store.upsert(chunks[:1], np.ones((1, 4), dtype=np.float32))
    with instance_for_test() as instance:
        say_if_building(settings, instance)
        assert capsys.readouterr().err == ""  # no build running: nothing to say
        start_first_build_run(instance)
        say_if_building(settings, instance)
    line = capsys.readouterr().err
    assert line.startswith("  index: partial: building (25% embedded: 1 of 4 chunks)"), line
    # The report's grounding (what `codegen generate` prints after "grounding") reads back.
    noted = VectorIndexResource.for_crew(settings).grounding().while_building()
    again = grounding_from_json(noted.to_dict())
    assert again.describe() == "partial: building (25% embedded: 1 of 4 chunks)"
