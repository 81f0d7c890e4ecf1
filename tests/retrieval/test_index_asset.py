"""The index asset and its blocking quality check, on a real Dagster instance and LanceDB."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from dagster import AssetKey, build_resources, instance_for_test, materialize

from codegen.assets.corpus_builds import PROGRESS_TAG
from codegen.assets.index import index, index_retrieval_quality
from codegen.assets.resources import SettingsResource, VectorIndexResource
from codegen.corpus.model import Chunk
from codegen.corpus.store import chunks_path, write_jsonl_atomic
from codegen.retrieval.embedders import Embedder


class ReversedBatchEmbedder:
    """A realistic embedder bug: vectors come back in the wrong order within a batch."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def identity(self) -> str:
        return f"broken({self.inner.identity})"

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def provenance(self) -> dict[str, str]:
        return self.inner.provenance

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)[::-1].copy()

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


class BrokenIndexResource(VectorIndexResource):
    def make_embedder(self) -> Embedder:
        return ReversedBatchEmbedder(super().make_embedder())

    def make_build_embedder(self) -> Embedder:
        return ReversedBatchEmbedder(super().make_build_embedder())


def _write_chunks(home: Path, chunks: list[Chunk]) -> None:
    write_jsonl_atomic(chunks_path(home / "corpus"), (c.to_dict() for c in chunks))


def _run(home: Path, instance, resource: VectorIndexResource, check: bool = True):  # type: ignore[no-untyped-def]
    return materialize(
        [index, index_retrieval_quality] if check else [index],
        instance=instance,
        resources={"settings": SettingsResource(home=str(home)), "vector_index": resource},
        raise_on_error=False,
    )


def _meta(result, key: str):  # type: ignore[no-untyped-def]
    mats = result.asset_materializations_for_node("index")
    return mats[-1].metadata[key].value


def _check(result):  # type: ignore[no-untyped-def]
    evals = result.get_asset_check_evaluations()
    assert len(evals) == 1
    return evals[0]


@pytest.fixture
def small_quality_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEGEN_RETRIEVAL__QUALITY_QUERIES", "40")


def test_incremental_materializations_and_passing_check(
    home_with_exported_model: Path,
    stdlib_chunks: list[Chunk],
    small_quality_sample: None,
) -> None:
    isolated_home = home_with_exported_model
    _write_chunks(isolated_home, stdlib_chunks[:60])
    resource = VectorIndexResource(home=str(isolated_home))
    with instance_for_test() as instance:
        first = _run(isolated_home, instance, resource)
        assert first.success
        assert _meta(first, "embedded") == 60
        assert _meta(first, "rows") == 60
        assert _meta(first, "embedder").startswith("minilm-onnx:all-MiniLM-L6-v2@53aa5117")
        # The run says how far its embedding got, where the UI shows it (the run's tags).
        tags = instance.get_run_by_id(first.run_id).tags  # type: ignore[union-attr]
        assert tags[PROGRESS_TAG] == "100% embedded (60 of 60 new chunks)"
        check = _check(first)
        assert check.passed, check.metadata
        assert check.metadata["vector_mrr_at_10"].value >= 0.4

        # Same chunks again: nothing is embedded, nothing deleted.
        second = _run(isolated_home, instance, resource, check=False)
        assert second.success
        assert (_meta(second, "embedded"), _meta(second, "deleted")) == (0, 0)
        assert _meta(second, "unchanged") == 60

        # 10 removed, 20 added: exactly those are deleted and embedded.
        _write_chunks(isolated_home, stdlib_chunks[10:80])
        third = _run(isolated_home, instance, resource, check=False)
        assert (_meta(third, "embedded"), _meta(third, "deleted")) == (20, 10)
        assert _meta(third, "rows") == 70

        # A different embedder identity re-embeds everything.
        broken = BrokenIndexResource(home=str(isolated_home))
        fourth = _run(isolated_home, instance, broken, check=False)
        assert _meta(fourth, "embedded") == 70
        assert _meta(fourth, "reset") is True

        # Switching the setting to the torch path is a new identity too; staying on it is not.
        torch_path = VectorIndexResource(home=str(isolated_home), embedder="minilm-torch")
        torch_run = _run(isolated_home, instance, torch_path, check=False)
        assert (_meta(torch_run, "embedded"), _meta(torch_run, "reset")) == (70, True)
        assert _meta(torch_run, "embedder").startswith("minilm:all-MiniLM-L6-v2@53aa5117")
        torch_again = _run(isolated_home, instance, torch_path, check=False)
        assert (_meta(torch_again, "embedded"), _meta(torch_again, "reset")) == (0, False)
        latest = instance.get_latest_materialization_event(AssetKey("index"))
        assert latest is not None


def test_broken_embedder_fails_the_blocking_check(
    home_with_exported_model: Path, stdlib_chunks: list[Chunk], small_quality_sample: None
) -> None:
    isolated_home = home_with_exported_model
    _write_chunks(isolated_home, stdlib_chunks)
    with instance_for_test() as instance:
        result = _run(isolated_home, instance, BrokenIndexResource(home=str(isolated_home)))
        check = _check(result)
        assert not check.passed
        assert check.severity.value == "ERROR"
        assert check.blocking
        assert check.metadata["vector_mrr_at_10"].value < 0.4
        assert not result.success  # a failed blocking check fails the run


def test_missing_chunks_fail_with_a_clear_message(isolated_home: Path) -> None:
    with instance_for_test() as instance:
        result = _run(isolated_home, instance, VectorIndexResource(home=str(isolated_home)))
        assert not result.success
        failure = result.get_step_failure_events()[0]
        assert "no chunks at" in str(failure.event_specific_data.error.message)


def test_definitions_wire_the_index_after_chunks() -> None:
    from codegen.orchestration.definitions import defs

    graph = defs.resolve_asset_graph()
    assert AssetKey("chunks") in graph.get(AssetKey("index")).parent_keys
    assert any(k.asset_key == AssetKey("index") for k in graph.asset_check_keys)
    with build_resources({"retriever": defs.resources["retriever"]}) as served:
        assert isinstance(served.retriever, VectorIndexResource)
