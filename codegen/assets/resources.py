"""Dagster resources: thin adapters that hand settings to the domain packages."""

import contextlib
import hashlib
import importlib
import multiprocessing.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NotRequired, TypedDict

from dagster import Config, ConfigurableResource, InitResourceContext
from pydantic import Field, field_validator

from codegen import composition
from codegen.agents.llm import (
    LLMClient,
    LLMRoute,
    RoleModel,
    first_call_started,
    structured_modes_file,
)
from codegen.agents.options import CrewOptions
from codegen.agents.pick import FILE_NAME as HISTORY_FILE
from codegen.agents.pick import ReliabilityHistory
from codegen.corpus.store import chunks_path
from codegen.json_types import JSONObject
from codegen.replay.recording import FileRecorder
from codegen.retrieval.embedders import Embedder, make_build_embedder, make_embedder
from codegen.retrieval.grounding import Grounding, corpus_chunk_ids, grounding_of, no_index
from codegen.retrieval.index import LazyRetriever, StoreConfig, open_store
from codegen.retrieval.stores import VectorStore
from codegen.retrieval.types import Retriever, SearchHit
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits
from codegen.settings import (
    AgentModel,
    CandidateModel,
    ContextSettings,
    LLMSettings,
    SandboxSettings,
    Settings,
    get_settings,
    parse_candidates,
)


class SettingsResource(ConfigurableResource):
    """The platform settings (see codegen/settings/__init__.py), optionally re-rooted.

    ``home`` overrides the data directory, which is how tests get an isolated one.
    """

    home: str | None = None

    def load(self) -> Settings:
        settings = get_settings()
        if self.home:
            settings = settings.model_copy(update={"home": Path(self.home)})
        return settings


# -- the crew (issue 4) ---------------------------------------------------------------------
# Each resource's fields are the settings model's own (inherited, never restated), so a
# default lives in codegen/settings/ only. The code location serves them with no run config
# (codegen/orchestration/resources.py): the values are the deployment's settings alone.
class RoleModelConfig(AgentModel, Config):
    """One role's model (``[llm.default]``, ``[llm.agents.<role>]``)."""


class CandidateConfig(CandidateModel, Config):
    """One programmer draft's model and endpoint (an entry of ``[llm] candidates``)."""


class ContextConfig(ContextSettings, Config):
    """How much retrieved context the programmer gets (``[retrieval] top_k`` and budget)."""


# The recording a request's run appends every reply to (``codegen generate --record``), by
# request id: set by the CLI around the run it executes in its own process (the request job's
# steps run on threads of it). Not a run tag: any launch may set tags, and a path there would
# make the daemon write its replies wherever the launch said.
_recordings: dict[str, Path] = {}


@contextmanager
def recording_here(request_id: str, path: Path | None) -> Iterator[None]:
    """While this is open, the run of ``request_id`` in this process records to ``path``."""
    if path is not None:
        _recordings[request_id] = path
    try:
        yield
    finally:
        _recordings.pop(request_id, None)


def recording_of(request_id: str) -> Path | None:
    """Where this process's run of ``request_id`` records (None: it does not)."""
    return _recordings.get(request_id)


class LLMResource(LLMSettings, ConfigurableResource):
    """The crew's LLM endpoint, per-role models, budgets and context size.

    No key field on purpose: ``base_url`` None and the key come from the openai SDK's own
    environment (OPENAI_BASE_URL, OPENAI_API_KEY), so the key never enters run config,
    metadata or logs.
    """

    default: RoleModelConfig = RoleModelConfig()
    agents: dict[str, RoleModelConfig] = Field(default_factory=dict)
    # ``[llm] candidates`` one entry per draft (Dagster config has no number-or-list type):
    # its length is the default number of drafts, and each entry a draft's model and endpoint.
    candidates: list[CandidateConfig] = Field(default_factory=lambda: [CandidateConfig()])
    context: ContextConfig = ContextConfig()

    @field_validator("candidates", mode="before")
    @classmethod
    def _candidates(cls, value: object) -> list[CandidateConfig]:
        """A number of drafts or a list of entries, read as ``[llm] candidates`` is (this
        replaces the settings model's validator of the same name)."""
        parsed = parse_candidates(value)
        entries = [CandidateModel()] * parsed if isinstance(parsed, int) else parsed
        return [CandidateConfig(**e.model_dump()) for e in entries]

    # Where ``cache`` keeps responses; derived from CODEGEN_HOME, so not a setting itself.
    cache_dir: str | None = None
    # Where each endpoint's working Structured Outputs mode is remembered (None: in memory);
    # derived from CODEGEN_HOME like cache_dir.
    modes_file: str | None = None
    # What this home learned of each model's reliability (agents.pick.reliability_history; None:
    # nothing); derived from CODEGEN_HOME like cache_dir.
    reliability_file: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMResource":
        llm = settings.llm
        context = {k: getattr(settings.retrieval, k) for k in ContextSettings.model_fields}
        return cls(
            **llm.model_dump(exclude={"candidates"}),
            candidates=[CandidateConfig(**c.model_dump()) for c in llm.candidate_entries()],
            context=ContextConfig(**context),
            cache_dir=str(settings.cache_dir / "llm") if llm.cache else None,
            modes_file=str(structured_modes_file(settings.cache_dir)),
            reliability_file=str(settings.home / HISTORY_FILE),
        )

    def client(self, route: LLMRoute | None = None, *, record_to: Path | None = None) -> LLMClient:
        """The client of this configuration; ``route`` (a queued request's caller's base URL
        and models) replaces this process's own. The keys stay this process's: its
        ``OPENAI_API_KEY`` and the variables the candidates name. ``record_to`` (``--record``):
        every reply is appended to that recording, and the response cache is neither read nor
        written, so every call reaches the endpoint and the recording."""
        own = tuple(composition.candidate_route(c) for c in self.candidates)
        return LLMClient(
            base_url=route.base_url if route else self.base_url,
            default=route.default if route else RoleModel(**self.default.model_dump()),
            roles=(
                dict(route.roles)
                if route
                else {k: RoleModel(**v.model_dump()) for k, v in self.agents.items()}
            ),
            timeout_s=self.request_timeout_s,
            max_retries=self.max_retries,
            cache_dir=(
                Path(self.cache_dir)
                if self.cache and self.cache_dir and record_to is None
                else None
            ),
            prices=self.prices,
            modes_file=Path(self.modes_file) if self.modes_file else None,
            recorder=FileRecorder(record_to) if record_to is not None else None,
            candidates=route.candidates if route else own,
        )

    def reliability_history(self) -> ReliabilityHistory | None:
        """What the home learned of each model's reliability, for a request's pick (an
        evaluation's picks do not use it: it learns its own, and its cache key must not move
        with the home)."""
        return ReliabilityHistory(Path(self.reliability_file)) if self.reliability_file else None

    def crew_options(
        self, overrides: JSONObject | None = None, route: LLMRoute | None = None
    ) -> CrewOptions:
        """Defaults from this resource (the number of drafts: the route's candidates when a
        queued request carries them), overridden by the request's own stored options."""
        base = {
            "max_rounds": self.max_rounds,
            "candidates": len((route.candidates if route else ()) or self.candidates),
            "budget_tokens": self.budget_tokens,
            "budget_usd": self.budget_usd,
            **self.context.model_dump(),
        }
        return CrewOptions.from_dict({**base, **(overrides or {})})


class SandboxResource(SandboxSettings, ConfigurableResource):
    """Where generated code and tests run (see codegen/sandbox/): backend, pool and limits.

    ``open()`` hands out one sandbox per process and configuration, opened on first use and
    closed at exit: a request's steps (and requests in one process) share its warm pool
    instead of starting containers per step.
    """

    @classmethod
    def from_settings(cls, settings: Settings) -> "SandboxResource":
        return cls(**settings.sandbox.model_dump())

    def limits(self) -> Limits:
        return composition.sandbox_limits(self)

    @contextmanager
    def open(self) -> Iterator[Sandbox]:
        yield _shared_sandbox(
            self.backend,
            composition.sandbox_image(self),
            self.pool_size,
            self.isolation,
            self.bwrap_host_usr,
            self.package_set,
        )

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # Open (and so fill) the pool in the background while the run's first model calls are
        # in flight: the first test run then finds a box ready instead of starting one.
        # Failures stay quiet here; ``open`` raises them, with their one-line reason, on use.
        threading.Thread(target=self._open_quietly, name="sandbox-warm-up", daemon=True).start()

    def _open_quietly(self) -> None:
        # Once the run's first model call is on its way (or after WARM_UP_WAIT_S): before it,
        # this process's CPU is the request's critical path, and the sandbox's imports and
        # container start would slow it; a box is needed only once code comes back.
        first_call_started.wait(WARM_UP_WAIT_S)
        with contextlib.suppress(Exception):
            _shared_sandbox(
                self.backend,
                composition.sandbox_image(self),
                self.pool_size,
                self.isolation,
                self.bwrap_host_usr,
                self.package_set,
            )


# The longest a run's sandbox warm-up waits for its first model call (a run that makes none,
# such as scoring a samples file, opens the sandbox on first use anyway).
WARM_UP_WAIT_S = 5.0

_sandboxes: dict[tuple[str, str, int, str, bool], Sandbox] = {}
_sandboxes_lock = threading.Lock()


def _shared_sandbox(
    backend: str, image: str, pool_size: int, isolation: str, host_usr: bool, set_name: str
) -> Sandbox:
    # The set only names the build command when the image is missing: the image is the box.
    key = (backend, image, pool_size, isolation, host_usr)
    with _sandboxes_lock:
        box = _sandboxes.get(key)
        if box is None:
            from codegen.sandbox import open_sandbox  # imported late: it probes Docker

            box = open_sandbox(
                backend=backend,
                image=image,
                pool_size=pool_size,
                isolation=isolation,
                host_usr=host_usr,
                set_name=set_name,
            )
            _sandboxes[key] = box
            if len(_sandboxes) == 1:
                # Finalize, not atexit: it also runs when a multiprocessing child (a step
                # of the multiprocess executor) exits, where atexit handlers never run.
                multiprocessing.util.Finalize(None, close_shared_sandboxes, exitpriority=10)
        return box


def close_shared_sandboxes() -> None:
    """Close every sandbox ``SandboxResource.open`` handed out (at exit, or in tests)."""
    with _sandboxes_lock:
        boxes = list(_sandboxes.values())
        _sandboxes.clear()
    for box in boxes:
        box.close()


class _EmptyIndex:
    """The retrieval interface over an index with nothing in it."""

    def search(
        self, query: str, k: int = 8, *, source: str | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        return []


class RetrieverIdentity(TypedDict):
    """What the crew searches: ``kind`` alone for the empty index; a vector index adds where
    it lives, its embedder and a digest of its contents."""

    kind: str
    where: NotRequired[str]
    embedder: NotRequired[str]
    vectors: NotRequired[str | None]  # the identity that embedded them: a new recipe re-embeds
    chunks: NotRequired[int]
    content: NotRequired[str]


class RetrieverResource(ConfigurableResource):
    """Hands the crew a ``codegen.retrieval.types.Retriever``; this default one is an empty
    index."""

    def get_retriever(self) -> Retriever | None:
        return _EmptyIndex()

    def identity(self) -> RetrieverIdentity:
        """What the crew searches, for an evaluation's identity and cache key."""
        return {"kind": "empty"}

    def grounding(self) -> Grounding:
        """How much of the corpus a search can find now (this default: nothing)."""
        return no_index()


# -- the vector index (issue 6) -------------------------------------------------------------
class VectorIndexResource(RetrieverResource):
    """The chunk index: its store, its embedder, and a ``Retriever`` over both.

    A ``RetrieverResource`` too, so the crew's ``retriever`` key can be bound to the real
    index; a missing or empty index searches as empty, never as an error.
    ``embedder`` overrides the configured one (tests, benchmarks).
    """

    home: str | None = None
    embedder: str | None = None

    @classmethod
    def for_crew(cls, settings: Settings) -> "VectorIndexResource":
        """The index the crew searches; evaluations run outside Dagster use the same one."""
        return cls(home=str(settings.home))

    def load_settings(self) -> Settings:
        return SettingsResource(home=self.home).load()

    def store_config(self) -> StoreConfig:
        return composition.store_config(self.load_settings())

    def open_store(self) -> VectorStore:
        return open_store(self.store_config())

    def make_embedder(self) -> Embedder:
        settings = self.load_settings()
        return make_embedder(composition.embedder_config(settings, self.embedder))

    def make_build_embedder(self) -> Embedder:
        """What fills the index: ``make_embedder``'s embedder, or its weights in fp16 on a GPU
        (``[retrieval] device``); searches use ``make_embedder``."""
        settings = self.load_settings()
        return make_build_embedder(composition.embedder_config(settings, self.embedder))

    def local_index_missing(self) -> bool:
        """A LanceDB index that was never built: an empty directory, or none at all."""
        store = self.store_config()
        if store.kind != "lancedb" or "://" in store.uri:
            return False
        path = Path(store.uri)
        return not path.is_dir() or not any(path.iterdir())

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # Searching a built index starts by importing LanceDB (seconds of CPU). Importing it
        # now, while the run's first step waits on the model, keeps that off the path
        # between the analyzer and the programmer, which then overlaps the test designer.
        if not self.local_index_missing():
            threading.Thread(target=importlib.import_module, args=("lancedb",), daemon=True).start()

    def get_retriever(self) -> Retriever | None:
        if self.local_index_missing():
            return _EmptyIndex()  # nothing to search: no store to open, no LanceDB to import
        # The embedder (seconds to load) is built on the first search of a non-empty index.
        return LazyRetriever(self.open_store(), self.make_embedder)

    def grounding(self) -> Grounding:
        """The index's chunks against the corpus's ``chunks.jsonl``: none, partial, full."""
        corpus = corpus_chunk_ids(chunks_path(self.load_settings().corpus_dir))
        if self.local_index_missing():
            return no_index(corpus)
        try:
            index_ids = self.open_store().ids()
        except Exception:  # a missing or unreadable index searches as empty
            return no_index(corpus)
        return grounding_of(corpus, index_ids)

    def identity(self) -> RetrieverIdentity:
        """Store, embedder and contents of the index: a re-built index is another crew.
        Chunk ids hash their text, so the digest of the sorted ids is a content hash: an
        index whose chunks changed is another identity even at the same chunk count, and
        one re-embedded by another embedder recipe is another through ``vectors``."""
        store = self.store_config()
        try:
            opened = self.open_store()
            ids, vectors = sorted(opened.ids()), opened.embedder_identity()
        except Exception:  # a missing index searches as empty
            ids, vectors = [], None
        embedder = composition.embedder_config(self.load_settings(), self.embedder).name
        where = store.weaviate_url if store.kind == "weaviate" else store.uri
        return {
            "kind": store.kind,
            "where": where,
            "embedder": embedder,
            "vectors": vectors,  # the identity that embedded them: a new recipe re-embeds
            "chunks": len(ids),
            "content": hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16],
        }
