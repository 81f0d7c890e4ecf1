"""The one way to configure the platform.

Precedence, highest first: environment variables (``CODEGEN_*``, nested keys joined
with ``__``, e.g. ``CODEGEN_SANDBOX__BACKEND=bwrap``), then the TOML file named by
``CODEGEN_CONFIG`` (default ``$CODEGEN_HOME/codegen.toml``, else ``codegen.toml`` in the
project root), then the defaults below.

The LLM endpoint and key are deliberately *not* settings of ours: the ``openai`` SDK reads
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` itself, so the key never lands in a config object
that could be logged or stored. ``llm.base_url`` exists only to override the SDK's variable.
A programmer candidate on another endpoint names the *variable* that holds its key
(``api_key_env``), never the key.

Settings that cannot be used raise ``BadSettings``: one line naming each bad key and why,
never the value given (it may be a key pasted into the wrong place).
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

if TYPE_CHECKING:  # nothing of the package at run time (tests/test_wiring.py)
    from codegen.json_types import JSONObject

# The checkout this package lives in (editable install) holds pyproject.toml; an installed
# wheel has no project root, so the working directory stands in.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]
PROJECT_ROOT = _PACKAGE_PARENT if (_PACKAGE_PARENT / "pyproject.toml").exists() else Path.cwd()

# The crew's roles, as they go over the wire in X-Codegen-Agent; a TOML override for any other
# name is a typo, rejected when the settings load.
AgentRole = Literal["analyzer", "test_designer", "programmer", "reviewer", "documenter"]


class Environment(StrEnum):
    LOCAL = "local"
    PRODUCTION = "production"


def default_home() -> Path:
    return Path(os.environ.get("CODEGEN_HOME") or PROJECT_ROOT / ".codegen").resolve()


def user_cache_dir() -> Path:
    """This machine user's cache, shared by every CODEGEN_HOME: $XDG_CACHE_HOME/multiagent-codegen
    (``~/.cache/multiagent-codegen``)."""
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "multiagent-codegen"


class AgentModel(BaseModel):
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 4096


class BadSettings(ValueError):
    """The configuration cannot be used: one line naming each bad key and why."""


MAX_CANDIDATES = 20  # programmer drafts per request, the same bound as RequestOptions'
# An environment variable's name as `api_key_env` takes it: capitals, digits and _. A key pasted
# there instead (``sk-...``, mixed case) does not look like one.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


class CandidateModel(BaseModel):
    """One programmer candidate's overrides (an entry of ``[llm] candidates``); a key left out
    keeps the programmer role's (``[llm.agents.programmer]``, else ``[llm.default]``), and
    ``base_url`` the crew's endpoint. ``api_key_env`` names the environment variable that holds
    the key for ``base_url``; a candidate with its own ``base_url`` and no ``api_key_env`` sends
    no key, so the main key never goes to another host unasked."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    base_url: str | None = None
    api_key_env: str | None = None
    # The model's history: the share of its drafts verified correct before (e.g. its pass@1 on
    # a past evaluation). Drafts of a model with a history weigh its log-odds in the pick
    # (agents.pick.reliability); with no entry giving one, every draft counts the same.
    reliability: float | None = Field(default=None, gt=0, lt=1)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        scheme, sep, rest = value.partition("://")
        if scheme not in ("http", "https") or not sep or not rest.split("/")[0]:
            raise ValueError("must be an http:// or https:// URL")
        if "@" in rest.split("/")[0]:
            raise ValueError("holds credentials: name the variable with the key in api_key_env")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must name an environment variable (capitals, digits and _, e.g. "
                "QWEN_API_KEY), never hold the key itself"
            )
        return value


# Keys an entry might be given a secret under by mistake: refused with a pointer to api_key_env.
_KEY_FIELDS = ("api_key", "key", "apikey", "token", "secret", "password")


def _candidate_entry(index: int, raw: object) -> CandidateModel:
    where = f"[{index}]"  # describe() writes it after the key: llm.candidates[1]
    if not isinstance(raw, dict):
        raise ValueError(f'{where}: must be a table such as {{model = "gpt-4o"}}')
    for name in raw:
        if str(name).lower() in _KEY_FIELDS:
            raise ValueError(
                f"{where}.{name}: a key is never a setting; name the environment variable "
                "that holds it with api_key_env"
            )
    try:
        return CandidateModel.model_validate(raw)
    except ValidationError as exc:
        known = ", ".join(CandidateModel.model_fields)
        problems = []
        for e in exc.errors():
            field = ".".join(map(str, e["loc"]))
            if e["type"] == "extra_forbidden":
                problems.append(f"{where}: unknown key {field!r} (known: {known})")
            else:
                problems.append(f"{where}.{field}: {_message(e['msg'])}")
        raise ValueError("; ".join(problems)) from None


def _message(msg: str) -> str:
    return msg.removeprefix("Value error, ")


def parse_candidates(value: object) -> int | list[CandidateModel]:
    """``[llm] candidates``: a number of drafts, or a list of per-candidate overrides."""
    if isinstance(value, list):
        if not value:
            raise ValueError("an empty list: give at least one entry, or a number of drafts")
        if len(value) > MAX_CANDIDATES:
            raise ValueError(f"{len(value)} entries: at most {MAX_CANDIDATES}")
        return [
            v if isinstance(v, CandidateModel) else _candidate_entry(i, v)
            for i, v in enumerate(value)
        ]
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_CANDIDATES:
            raise ValueError(f"must be 1-{MAX_CANDIDATES} drafts, or a list of entries")
        return value
    if isinstance(value, str) and value.strip().isdigit():  # an environment variable's text
        return parse_candidates(int(value))
    raise ValueError(
        f"must be a number of drafts (1-{MAX_CANDIDATES}) or a list of per-candidate entries "
        '(e.g. [{model = "gpt-4o"}, {model = "qwen2.5-coder:32b", base_url = "http://..."}])'
    )


class LLMSettings(BaseModel):
    base_url: str | None = None
    request_timeout_s: float = 120.0
    max_retries: int = 4
    default: AgentModel = AgentModel()
    # Per-role overrides, keyed by role name.
    agents: dict[AgentRole, AgentModel] = Field(default_factory=dict)
    # USD per million tokens: {model: {"input": x, "output": y}}. Unknown models cost "unknown".
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: {
            "gpt-4o": {"input": 2.50, "output": 10.00},
            "gpt-4o-mini": {"input": 0.15, "output": 0.60},
            "gpt-4.1": {"input": 2.00, "output": 8.00},
            "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
        }
    )
    cache: bool = True
    max_rounds: int = 3
    # Programmer drafts per request, picked by execution (agents.pick.matrix); 1 until the
    # measurements in CHANGELOG.md justify more. A list gives each draft its own model,
    # temperature or endpoint (CandidateModel); its length is the number of drafts.
    candidates: int | list[CandidateModel] = 1
    budget_tokens: int | None = None
    budget_usd: float | None = None
    # Endpoints besides base_url that a request queued with another caller's route may send
    # this process's OPENAI_API_KEY to; any other endpoint in a stored route is refused.
    allowed_base_urls: list[str] = Field(default_factory=list)

    @field_validator("candidates", mode="before")
    @classmethod
    def _candidates(cls, value: object) -> int | list[CandidateModel]:
        return parse_candidates(value)

    def candidate_entries(self) -> list[CandidateModel]:
        """One entry per draft: a number N is N entries that keep the programmer's model."""
        if isinstance(self.candidates, int):
            return [CandidateModel() for _ in range(self.candidates)]
        return list(self.candidates)

    def candidates_for(self, count: int) -> int | list[CandidateModel]:
        """``candidates`` with ``count`` drafts (``--candidates N``): a number becomes N; a
        list gives its first N entries, repeated from the start when N is longer."""
        if isinstance(self.candidates, int):
            return count
        return [self.candidates[i % len(self.candidates)] for i in range(count)]


class SandboxSettings(BaseModel):
    backend: Literal["auto", "docker", "bwrap"] = "auto"
    # None keeps the sandbox's own value, defined once there: the image tag is the package
    # set's (codegen.sandbox.packages.image_tag), each limit a field of codegen.sandbox.Limits
    # (composition.sandbox_limits fills in what is set here).
    image: str | None = None
    # The sandbox's third-party Python distributions, installed into the image and the
    # bubblewrap root at build time only (codegen/sandbox/packages.py): a named set, plus
    # extra requirements ("name==version"; one of a set's names replaces its pin).
    package_set: Literal["none", "default", "classeval"] = "default"
    packages: list[str] = []
    pool_size: int = Field(default=2, ge=1, le=64)
    isolation: Literal["pooled", "strict"] = "pooled"
    # bubblewrap without the debootstrapped root: bind the host's /usr instead (reported as
    # backend "bwrap-host"); off, such a machine has no bubblewrap sandbox at all.
    bwrap_host_usr: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, ge=16)
    pids: int | None = Field(default=None, ge=8)
    cpus: float | None = Field(default=None, gt=0)
    workdir_mb: int | None = Field(default=None, ge=1)
    max_output_bytes: int | None = Field(default=None, ge=1024)


class ContextSettings(BaseModel):
    """How much retrieved context the crew's programmer gets (``[retrieval]`` keys)."""

    top_k: int = 8  # hits per query; also `codegen search`'s default -k
    context_token_budget: int = 1500  # retrieved context is cut to this many (estimated) tokens


class RetrievalSettings(ContextSettings):
    vector_store: str = "lancedb"  # lancedb | weaviate
    lancedb_uri: str | None = None  # default: $CODEGEN_HOME/index
    weaviate_url: str | None = None
    embedder: str = "minilm"  # minilm (ONNX Runtime) | minilm-torch | openai
    # Where the corpus build embeds: auto (a GPU when torch sees one, else the CPU), cpu, cuda.
    # On a GPU the default's weights run in fp16; searches always embed on the CPU.
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # Where the ONNX export of MiniLM is cached, keyed by weights and recipe; default: the
    # user's cache (user_cache_dir()), so a fresh CODEGEN_HOME does not export it again.
    model_cache_dir: str | None = None
    weaviate_collection: str = "CodeChunk"
    openai_embedding_model: str = "text-embedding-3-small"
    openai_embedding_dimensions: int | None = None
    # Blocking index check: MRR@10 of docstring-sentence queries over the indexed functions.
    # Dense catches a broken embedder even when BM25 alone would keep hybrid afloat. The floors
    # sit well under the measured stdlib figures (hybrid 0.52, dense 0.50; CHANGELOG.md)
    # and far above a broken embedder's (dense 0.02), so corpus drift does not trip them.
    quality_queries: int = 200
    quality_floor_hybrid_mrr: float = 0.3
    quality_floor_dense_mrr: float = 0.25
    # The faiss sidecar's probe count (large LanceDB indexes) is calibrated at build time to
    # reach this recall@10 against exact search: the mean, and every calibration query's own.
    ann_recall_mean: float = 0.95
    ann_recall_min: float = 0.5


class GitHubSourceSettings(BaseModel):
    """github_repos / github_issues. The token comes from GITHUB_TOKEN, never from here."""

    api_url: str = "https://api.github.com"
    repos: list[str] = Field(default_factory=list)  # "owner/name" for github_repos
    issue_repos: list[str] = Field(default_factory=list)  # "owner/name" for github_issues
    languages: list[str] = Field(default_factory=lambda: ["python", "markdown"])
    include_paths: list[str] = Field(default_factory=list)  # glob patterns; empty = all
    exclude_paths: list[str] = Field(default_factory=lambda: ["*/tests/*", "*/test/*"])
    max_file_bytes: int = 500_000
    max_issues: int = 500
    # A spent rate limit is waited out until its reset, if that is at most this far away.
    max_rate_limit_wait_s: float = 900.0


class StackOverflowSourceSettings(BaseModel):
    """Stack Exchange API (key from STACKEXCHANGE_KEY) and/or a data-dump Posts.xml."""

    api_url: str = "https://api.stackexchange.com"
    site: str = "stackoverflow"
    tags: list[str] = Field(default_factory=list)
    max_pages: int = 5
    posts_xml: str | None = None


class DocsSourceSettings(BaseModel):
    # Each URL: a sitemap.xml, or a page whose links are crawled under the same prefix.
    urls: list[str] = Field(default_factory=list)
    max_pages: int = 500
    delay_s: float = 1.0  # politeness delay between requests to one host
    user_agent: str = "multiagent-codegen-corpus/0.1"
    # Hosts of the urls that may resolve to loopback, private or link-local addresses (an IP
    # literal or localhost in a URL needs no entry); any other such address is refused.
    private_hosts: list[str] = Field(default_factory=list)


class BlogSourceSettings(BaseModel):
    feeds: list[str] = Field(default_factory=list)  # RSS or Atom URLs
    fetch_articles: bool = True  # fetch the linked page when the feed has only a summary
    private_hosts: list[str] = Field(default_factory=list)  # as [corpus.docs] private_hosts


class CorpusSettings(BaseModel):
    # Empty means "the running interpreter's standard library".
    local_paths: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=lambda: ["local"])
    reindex_cron: str = "0 3 * * *"
    # The daemon's first tick on an instance with no corpus and no index starts the first
    # build (one run per source, then the chunks and the index); off for tests and for users
    # who build elsewhere.
    build_on_first_run: bool = True
    max_document_bytes: int = 1_000_000
    # None keeps the corpus package's own measured default, defined once there: the chunk
    # budget in codegen.corpus.chunk.Budget, near-duplicate detection in
    # codegen.corpus.dedupe.DedupeParams (Lee et al. 2022: 5-gram shingles, Jaccard 0.8).
    chunk_max_tokens: int | None = Field(default=None, ge=16)
    chunk_min_tokens: int | None = Field(default=None, ge=1)
    dedupe_shingle_size: int | None = Field(default=None, ge=1)
    dedupe_num_perm: int | None = Field(default=None, ge=16)
    dedupe_threshold: float | None = Field(default=None, gt=0, le=1)
    # Asset check bounds on the share of documents removed as duplicates.
    dedupe_ratio_max: float = 0.5
    http_timeout_s: float = 30.0
    http_retries: int = 3
    github: GitHubSourceSettings = GitHubSourceSettings()
    stackoverflow: StackOverflowSourceSettings = StackOverflowSourceSettings()
    docs: DocsSourceSettings = DocsSourceSettings()
    blogs: BlogSourceSettings = BlogSourceSettings()


class EvalSettings(BaseModel):
    """HumanEval runs (issue 7): samples per task, scoring limits, backfill concurrency."""

    samples: int = 1  # n candidates per task; pass@10 is reported when n >= 10
    timeout_s: float = 10.0  # per hidden-test execution in the sandbox
    memory_mb: int = 512
    # Limits of the Dagster pools "llm" (crew ops) and "sandbox" (scoring ops), set on the
    # instance by `codegen eval` and the backfill helpers (dagster.yaml holds only a default).
    llm_concurrency: int = 2
    sandbox_concurrency: int = 2
    # Tasks worked on concurrently inside one op (CLI runs and ranged backfill runs).
    workers: int = 2
    # A samples file (JSONL: task_id + completion | solution) the humaneval_file_* assets
    # score; set by `codegen eval humaneval --samples-file FILE --backfill`.
    samples_file: str | None = None
    # Modules that register benchmarks of their own (codegen.evaluation.benchmarks.register):
    # each gets its asset family (<name>_samples, ...) beside HumanEval's.
    benchmarks: list[str] = Field(default_factory=list)


class StorageSettings(BaseModel):
    """Where Dagster's IO manager keeps asset values (the large artefacts live in files)."""

    # Used only when env = production; empty keeps the local filesystem IO manager.
    gcs_bucket: str | None = None
    gcs_prefix: str = "multiagent-codegen"
    gcs_project: str | None = None


class ReviewSettings(BaseModel):
    """Who signs off on code whose tests pass (``[review]``; issue 15)."""

    # agent: the Reviewer agent alone; human: a person alone; both: the agent, then a person.
    mode: Literal["agent", "human", "both"] = "agent"
    # A review waiting longer than this ends as rejected (None: it waits for ever).
    timeout_hours: float | None = Field(default=None, gt=0)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CODEGEN_", env_nested_delimiter="__", extra="ignore"
    )

    home: Path = Field(default_factory=default_home)
    env: Environment = Environment.LOCAL
    llm: LLMSettings = LLMSettings()
    sandbox: SandboxSettings = SandboxSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    corpus: CorpusSettings = CorpusSettings()
    eval: EvalSettings = EvalSettings()
    storage: StorageSettings = StorageSettings()
    review: ReviewSettings = ReviewSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, config_file()))

    # Derived locations, all under the data directory.
    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @property
    def corpus_dir(self) -> Path:
        return self.home / "corpus"

    @property
    def index_uri(self) -> str:
        return self.retrieval.lancedb_uri or str(self.home / "index")

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def model_cache_dir(self) -> Path:
        return Path(self.retrieval.model_cache_dir or user_cache_dir())

    @property
    def eval_dir(self) -> Path:
        return self.home / "eval"

    @property
    def inbox_dir(self) -> Path:
        return self.home / "inbox"

    @property
    def requests_dir(self) -> Path:
        # Request text and options, stored apart from the opaque partition key.
        return self.home / "requests"

    def public_dict(self) -> JSONObject:
        """Settings safe to show or store (they never hold a secret)."""
        return self.model_dump(mode="json")


def config_file() -> Path:
    explicit = os.environ.get("CODEGEN_CONFIG")
    if explicit:
        return Path(explicit)
    in_home = default_home() / "codegen.toml"
    return in_home if in_home.exists() else PROJECT_ROOT / "codegen.toml"


def load_settings() -> Settings:
    """The settings as configured now; BadSettings says, in one line, what is wrong."""
    try:
        return Settings()
    except ValidationError as exc:
        raise BadSettings(f"bad settings ({config_file()}, CODEGEN_*): {describe(exc)}") from None
    except SettingsError as exc:
        raise BadSettings(f"bad settings ({config_file()}, CODEGEN_*): {exc}") from None


def describe(exc: ValidationError) -> str:
    """A validation error as one line: each bad key and why, without the value given."""
    out = []
    for e in exc.errors():
        where = ".".join(map(str, e["loc"]))
        why = "unknown key" if e["type"] == "extra_forbidden" else _message(e["msg"])
        # An entry's own problem names its index: llm.candidates[1].api_key_env: ...
        out.append(f"{where}{why}" if why.startswith("[") else f"{where}: {why}")
    return "; ".join(out)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()


def default_dagster_home(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).home / "dagster_home"
