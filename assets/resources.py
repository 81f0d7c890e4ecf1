"""Dagster resources: thin adapters that hand settings to the domain packages."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import Config, ConfigurableResource
from pydantic import Field

from agents.llm import LLMClient, RoleModel
from agents.replay.recording import recorder_from_environment
from agents.types import CrewOptions
from orchestration import retrieval as retrieval_wiring
from orchestration.config import Settings, get_settings
from retrieval.embedders import Embedder, make_embedder
from retrieval.index import LazyRetriever, StoreConfig, open_store
from retrieval.stores import VectorStore
from retrieval.types import Retriever, SearchHit
from sandbox.api import Sandbox
from sandbox.types import Limits


class SettingsResource(ConfigurableResource):
    """The platform settings (see orchestration/config.py), optionally re-rooted.

    ``home`` overrides the data directory, which is how tests get an isolated one.
    """

    home: str | None = None

    def load(self) -> Settings:
        settings = get_settings()
        if self.home:
            settings = settings.model_copy(update={"home": Path(self.home)})
        return settings


# -- the crew (issue 4) ---------------------------------------------------------------------
class RoleModelConfig(Config):
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 4096


class LLMResource(ConfigurableResource):
    """The crew's LLM endpoint and per-role models.

    No key field on purpose: ``base_url`` None and the key come from the openai SDK's own
    environment (OPENAI_BASE_URL, OPENAI_API_KEY), so the key never enters run config,
    metadata or logs.
    """

    base_url: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 4
    default: RoleModelConfig = RoleModelConfig()
    agents: dict[str, RoleModelConfig] = Field(default_factory=dict)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    cache_dir: str | None = None  # None: no response cache
    max_rounds: int = 3
    budget_tokens: int | None = None
    budget_usd: float | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMResource":
        llm = settings.llm
        return cls(
            base_url=llm.base_url,
            timeout_s=llm.request_timeout_s,
            max_retries=llm.max_retries,
            default=RoleModelConfig(**llm.default.model_dump()),
            agents={k: RoleModelConfig(**v.model_dump()) for k, v in llm.agents.items()},
            prices=llm.prices,
            cache_dir=str(settings.cache_dir / "llm") if llm.cache else None,
            max_rounds=llm.max_rounds,
            budget_tokens=llm.budget_tokens,
            budget_usd=llm.budget_usd,
        )

    def client(self) -> LLMClient:
        return LLMClient(
            base_url=self.base_url,
            default=RoleModel(**self.default.model_dump()),
            roles={k: RoleModel(**v.model_dump()) for k, v in self.agents.items()},
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            prices=self.prices,
            recorder=recorder_from_environment(),  # `--record FILE` (agents/replay)
        )

    def crew_options(self, overrides: dict[str, Any] | None = None) -> CrewOptions:
        """Defaults from this resource, overridden by the request's own stored options."""
        base = {
            "max_rounds": self.max_rounds,
            "budget_tokens": self.budget_tokens,
            "budget_usd": self.budget_usd,
        }
        return CrewOptions.from_dict({**base, **(overrides or {})})


class SandboxResource(ConfigurableResource):
    """Where generated code and tests run (see sandbox/): backend, pool and limits."""

    backend: str = "auto"
    image: str = "multiagent-codegen-sandbox:1"
    pool_size: int = 1
    isolation: str = "pooled"
    timeout_s: float = 30.0
    memory_mb: int = 512
    pids: int = 128
    cpus: float = 1.0
    workdir_mb: int = 64
    max_output_bytes: int = 1_000_000

    @classmethod
    def from_settings(cls, settings: Settings) -> "SandboxResource":
        return cls(**settings.sandbox.model_dump())

    def limits(self) -> Limits:
        return Limits(
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            pids=self.pids,
            cpus=self.cpus,
            workdir_mb=self.workdir_mb,
            max_output_bytes=self.max_output_bytes,
        )

    @contextmanager
    def open(self) -> Iterator[Sandbox]:
        from sandbox import open_sandbox  # imported late: it probes Docker

        box = open_sandbox(
            backend=self.backend,
            image=self.image,
            pool_size=self.pool_size,
            isolation=self.isolation,
        )
        try:
            yield box
        finally:
            box.close()


class _EmptyIndex:
    """The retrieval interface over an index with nothing in it."""

    def search(
        self, query: str, k: int = 8, *, source: str | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        return []


class RetrieverResource(ConfigurableResource):
    """Hands the crew a ``retrieval.types.Retriever``; this default one is an empty index."""

    def get_retriever(self) -> Retriever | None:
        return _EmptyIndex()


# -- the vector index (issue 6) -------------------------------------------------------------
class VectorIndexResource(RetrieverResource):
    """The chunk index: its store, its embedder, and a ``Retriever`` over both.

    A ``RetrieverResource`` too, so the crew's ``retriever`` key can be bound to the real
    index; a missing or empty index searches as empty, never as an error.
    ``embedder`` overrides the configured one (tests, benchmarks).
    """

    home: str | None = None
    embedder: str | None = None

    def load_settings(self) -> Settings:
        return SettingsResource(home=self.home).load()

    def store_config(self) -> StoreConfig:
        return retrieval_wiring.store_config(self.load_settings())

    def open_store(self) -> VectorStore:
        return open_store(self.store_config())

    def make_embedder(self) -> Embedder:
        settings = self.load_settings()
        return make_embedder(retrieval_wiring.embedder_config(settings, self.embedder))

    def get_retriever(self) -> Retriever | None:
        # The embedder (seconds to load) is built on the first search of a non-empty index.
        return LazyRetriever(self.open_store(), self.make_embedder)
