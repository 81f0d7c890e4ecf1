"""`codegen info` says what is true: the daemon's keys in plain words (no key on either side
is said so, not "the same key"), and an index being built as building, with the fraction of
the corpus's chunks embedded so far, not "none".

The daemon's heartbeats and published environment and the build's run are written into a
real instance as a daemon and a build would write them; info reads them back.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from dagster import DagsterRun, DagsterRunStatus, load_assets_from_modules
from dagster._daemon.types import DaemonHeartbeat

from codegen.assets import corpus as corpus_assets
from codegen.assets import index as index_assets
from codegen.assets.corpus_builds import BUILD_ASSETS
from codegen.composition import store_config
from codegen.corpus.model import Chunk
from codegen.corpus.store import chunks_path, write_jsonl_atomic
from codegen.orchestration.cli import main
from codegen.orchestration.instance import configured_instance
from codegen.requests.route import KEY_ENV, publish_daemon_environment
from codegen.retrieval.index import open_store
from codegen.sandbox.protocol import kernel_fence
from codegen.settings import get_settings

pytestmark = pytest.mark.dagster_instance  # CI runs these again on Postgres


def info_lines(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return {line[:14].strip(): line[14:] for line in lines if line[:14].strip()}


def beat(daemon_types: tuple[str, ...] = ("SENSOR", "QUEUED_RUN_COORDINATOR")) -> None:
    instance = configured_instance(get_settings())
    try:
        for kind in daemon_types:
            instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), kind, "test-daemon", None))
    finally:
        instance.dispose()


def test_a_daemon_and_a_shell_without_keys_are_said_to_have_none(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    beat()
    publish_daemon_environment(isolated_home, "https://api.openai.com/v1")
    daemon = info_lines(capsys)["daemon"]
    assert "neither it nor this shell has an OPENAI_API_KEY" in daemon, daemon
    assert "same" not in daemon, daemon
    # The shell with a key, the daemon without: refused, and said so.
    monkeypatch.setenv(KEY_ENV, "sk-shell-only")
    daemon = info_lines(capsys)["daemon"]
    assert "it has no OPENAI_API_KEY and this shell has one" in daemon, daemon
    assert "refused" in daemon and "sk-shell-only" not in daemon, daemon
    # Both with the same key.
    publish_daemon_environment(isolated_home, "https://api.openai.com/v1")
    daemon = info_lines(capsys)["daemon"]
    assert "it has this shell's OPENAI_API_KEY: queued requests run on" in daemon, daemon
    # The same key, but an endpoint the daemon does not send it to: refused, and said so.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://b.example/v1")
    daemon = info_lines(capsys)["daemon"]
    assert "this shell's OPENAI_API_KEY, but it refuses requests queued from here" in daemon


def chunk(i: int) -> Chunk:
    return Chunk(f"c{i}", "d", "local", f"file:///m{i}.py", f"m{i}", f"def f{i}(): ...", "py", 1, 1)


def test_an_index_under_construction_is_building_with_the_fraction_embedded(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = get_settings()
    assert info_lines(capsys)["index"].startswith("none: no index to search")
    # A build's run in progress, before any chunk exists: building, not none.
    instance = configured_instance(settings)
    try:
        instance.add_run(
            DagsterRun(
                job_name="corpus_raw_job",
                run_id=str(uuid.uuid4()),
                status=DagsterRunStatus.STARTED,
                tags={"codegen/kind": "corpus", "codegen/command": "first-build"},
            )
        )
    finally:
        instance.dispose()
    index = info_lines(capsys)["index"]
    assert index.startswith("none: building (0% embedded: no chunks written yet); 1 run"), index
    # Four chunks written, one embedded so far.
    chunks = [chunk(i) for i in range(4)]
    path = chunks_path(settings.corpus_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(path, [c.to_dict() for c in chunks])
    store = open_store(store_config(settings))
    store.reset("test-embedder", 4)
    store.upsert(chunks[:1], np.ones((1, 4), dtype=np.float32))
    index = info_lines(capsys)["index"]
    assert index.startswith("partial: building (25% embedded: 1 of 4 chunks); 1 run"), index
    assert main(["info", "--json"]) == 0
    assert '"building": {' in capsys.readouterr().out
    assert info_lines(capsys)["built on"].startswith("no build recorded")


def test_info_says_how_the_indexs_vectors_were_made(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert info_lines(capsys)["built on"] == "no build yet; the next embeds on device auto"
    store = open_store(store_config(get_settings()))
    store.reset("test-embedder", 4)
    store.upsert([chunk(0), chunk(1)], np.ones((2, 4), dtype=np.float32))
    gpu = {"runtime": "torch 2.11", "device": "cuda (NVIDIA H200)", "precision": "fp16"}
    store.record_build({**gpu, "space": "shared with the default: mean cosine 0.994"}, 2)
    store.record_build({"runtime": "onnxruntime 1.23", "device": "cpu", "precision": "int8"}, 1)
    built = info_lines(capsys)["built on"]
    assert built.startswith("last build cpu int8 (onnxruntime 1.23); vectors: ")
    assert "2 by cuda (NVIDIA H200) fp16 torch 2.11" in built
    assert "1 by cpu int8 onnxruntime 1.23" in built
    store.reset("another-embedder", 4)  # the old vectors' record goes with them
    assert info_lines(capsys)["built on"].startswith("no build recorded")


def test_info_says_which_file_fence_the_sandbox_gives(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fence = kernel_fence()  # this host's kernel, which both backends run on
    assert info_lines(capsys)["fence"].startswith(fence)
    assert main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sandbox_fence"] == fence


def test_the_build_assets_are_the_corpus_groups_assets() -> None:
    grouped = {
        key.to_user_string()
        for a in load_assets_from_modules([corpus_assets, index_assets])
        for key, group in a.group_names_by_key.items()
        if group == "corpus"
    }
    assert grouped == set(BUILD_ASSETS)
