"""The retriever is part of an evaluation's crew identity, and the direct ``codegen eval`` path
searches the same index the Dagster backfill's crew does."""

from __future__ import annotations

from agents.evaluation.harness import CREW
from assets.evaluation_session import eval_config
from assets.resources import RetrieverResource, VectorIndexResource
from orchestration.resources import resources_for
from settings import get_settings


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
    backfill = resources_for(settings)["retriever"]
    assert isinstance(backfill, VectorIndexResource)
    # eval_config without a retriever (the CLI's direct path) is the backfill's crew.
    assert eval_config(settings, CREW, 1).config_id == (
        eval_config(settings, CREW, 1, retriever=backfill).config_id
    )
