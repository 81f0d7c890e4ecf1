"""Settings -> the plain values the ``retrieval`` package takes (store and embedder choice).

Shared by the Dagster resource (assets/resources.py) and ``codegen search``, which stays
free of Dagster imports so that it answers quickly.
"""

from __future__ import annotations

import os

from retrieval.embedders import EmbedderConfig
from retrieval.index import StoreConfig
from settings import Settings


def store_config(settings: Settings) -> StoreConfig:
    r = settings.retrieval
    return StoreConfig(
        kind=r.vector_store,
        uri=settings.index_uri,
        weaviate_url=r.weaviate_url or os.environ.get("WEAVIATE_URL"),
        collection=r.weaviate_collection,
    )


def embedder_config(settings: Settings, name: str | None = None) -> EmbedderConfig:
    r = settings.retrieval
    return EmbedderConfig(
        name=name or r.embedder,
        cache_dir=str(settings.cache_dir),
        openai_model=r.openai_embedding_model,
        openai_dimensions=r.openai_embedding_dimensions,
        openai_base_url=settings.llm.base_url,
    )
