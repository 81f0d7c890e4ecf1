"""The retriever is part of an evaluation's crew identity, and the direct ``codegen eval`` path
searches the same index the Dagster backfill's crew does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from dagster import build_resources

from codegen.assets.resources import RetrieverResource, VectorIndexResource
from codegen.corpus.chunk import chunk_id
from codegen.corpus.model import Chunk
from codegen.evaluation.harness import CREW, EvalConfig
from codegen.orchestration.launch import eval_config
from codegen.orchestration.resources import resources_for
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.settings import get_settings


def test_the_index_is_part_of_the_crew_identity_and_cache_key() -> None:
    settings = get_settings()
    empty = eval_config(settings, CREW, 1, retriever=RetrieverResource())
    index = eval_config(settings, CREW, 1, retriever=VectorIndexResource.for_crew(settings))
    assert empty.identity["retriever"] == {"kind": "empty"}
    assert index.identity["retriever"]["kind"] == settings.retrieval.vector_store
    assert index.identity["retriever"]["where"] == settings.index_uri
    assert empty.config_id != index.config_id


def test_direct_evaluations_use_the_backfill_index() -> None:
    settings = get_settings()
    # What the code location serves a backfill's steps (the resource behind its fixed config).
    with build_resources({"retriever": resources_for(settings)["retriever"]}) as served:
        backfill = served.retriever
    assert isinstance(backfill, VectorIndexResource)
    # eval_config without a retriever (the CLI's direct path) is the backfill's crew.
    assert eval_config(settings, CREW, 1).config_id == (
        eval_config(settings, CREW, 1, retriever=backfill).config_id
    )


def test_an_index_with_other_chunks_or_vectors_is_another_crew(isolated_home: Path) -> None:
    """Same chunk count, other contents (or the same chunks embedded by another recipe): the
    evaluation cache must not hand back the other index's results."""
    settings = get_settings()
    store = LanceDBStore(uri=settings.index_uri)

    def fill(texts: list[str], embedder_identity: str) -> EvalConfig:
        store.reset(embedder_identity, 4)
        chunks = [
            Chunk(chunk_id(t), "d", "local", "file:///x.py", t, t, "python", 1, 1, "function")
            for t in texts
        ]
        store.upsert(chunks, np.eye(4, dtype=np.float32)[: len(chunks)])
        return eval_config(settings, CREW, 1, retriever=VectorIndexResource.for_crew(settings))

    first = fill(["def a(): pass", "def b(): pass"], "test-embedder:r1")
    assert first.identity["retriever"]["chunks"] == 2
    other_chunks = fill(["def a(): pass", "def c(): pass"], "test-embedder:r1")
    other_vectors = fill(["def a(): pass", "def b(): pass"], "test-embedder:r2")
    same_again = fill(["def b(): pass", "def a(): pass"], "test-embedder:r1")
    assert len({first.config_id, other_chunks.config_id, other_vectors.config_id}) == 3
    assert same_again.config_id == first.config_id
