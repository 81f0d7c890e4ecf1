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

Settings are strict: an unknown section or key, a value of the wrong type or out of range, in
the file or in a ``CODEGEN_<SECTION>__<KEY>`` variable, raises ``BadSettings``: one line naming
the file or the variable, the key and why (with the nearest valid name for a typo), never the
value given (it may be a key pasted into the wrong place). ``CODEGEN_*`` variables without the
``__`` separator are not settings (CODEGEN_CONFIG, CODEGEN_REQUIRE_*, ...), except the two
top-level ones, ``CODEGEN_HOME`` and ``CODEGEN_ENV``. ``setting_origins`` says where each
effective value came from.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
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


# -- ranges ------------------------------------------------------------------------------------
# The ranges that a setting shares with a request's option or a CLI flag, one definition each:
# RequestOptions and the commands' IntRange read them (bounds_of).
MAX_CANDIDATES = 20  # programmer drafts per request
DRAFTS = Field(ge=1, le=MAX_CANDIDATES)
ROUNDS = Field(ge=1, le=20)  # refinement rounds per request
TOKEN_BUDGET = Field(ge=1)
USD_BUDGET = Field(gt=0)
TOP_K = Field(ge=1, le=100)  # retrieved hits per query (`codegen search -k`)
SAMPLES = Field(ge=1, le=200)  # an evaluation's candidates per task
WORKERS = Field(ge=1, le=64)  # an evaluation's tasks worked on at once
TEMPERATURE = Field(ge=0, le=2)  # the range OpenAI-compatible endpoints take
MAX_TOKENS = Field(ge=1)
MODEL_NAME = Field(min_length=1)
MEMORY_MB = Field(ge=16)  # as the sandbox's own floor ([sandbox] memory_mb)
SHARE = Field(ge=0, le=1)  # a fraction: an MRR floor, a recall, a ratio
POSITIVE = Field(gt=0)  # a timeout, a delay that must pass, a size
AT_LEAST_ONE = Field(ge=1)  # a count of pages, items, bytes, queries, workers
NOT_NEGATIVE = Field(ge=0)  # retries, waits


def bounds_of(field: FieldInfo) -> dict[str, float | bool]:
    """A numeric range as click's IntRange/FloatRange keywords (min, max, min_open, max_open)."""
    out: dict[str, float | bool] = {}
    for rule in field.metadata:
        for attr, key, is_open in (
            ("ge", "min", False),
            ("gt", "min", True),
            ("le", "max", False),
            ("lt", "max", True),
        ):
            if getattr(rule, attr, None) is not None:
                out[key] = getattr(rule, attr)
                if is_open:
                    out[f"{key}_open"] = True
    return out


class Section(BaseModel):
    """A table of ``codegen.toml`` (and its ``CODEGEN_<SECTION>__<KEY>`` variables): a key it
    does not define is a typo, refused when the settings load."""

    model_config = ConfigDict(extra="forbid")


def _http_url(value: str | None) -> str | None:
    """An endpoint: http(s), a host, and no credentials in it (a key belongs in a variable)."""
    if value is None:
        return None
    scheme, sep, rest = value.partition("://")
    if scheme not in ("http", "https") or not sep or not rest.split("/")[0]:
        raise ValueError("must be an http:// or https:// URL")
    if "@" in rest.split("/")[0]:
        raise ValueError("holds credentials: name the variable with the key in api_key_env")
    return value


class AgentModel(Section):
    model: Annotated[str, MODEL_NAME] = "gpt-4o-mini"
    temperature: Annotated[float, TEMPERATURE] = 0.0
    max_tokens: Annotated[int, MAX_TOKENS] = 4096


class BadSettings(ValueError):
    """The configuration cannot be used: one line naming each bad key and why."""


# An environment variable's name as `api_key_env` takes it: capitals, digits and _. A key pasted
# there instead (``sk-...``, mixed case) does not look like one.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


class CandidateModel(Section):
    """One programmer candidate's overrides (an entry of ``[llm] candidates``); a key left out
    keeps the programmer role's (``[llm.agents.programmer]``, else ``[llm.default]``), and
    ``base_url`` the crew's endpoint. ``api_key_env`` names the environment variable that holds
    the key for ``base_url``; a candidate with its own ``base_url`` and no ``api_key_env`` sends
    no key, so the main key never goes to another host unasked."""

    model: Annotated[str | None, MODEL_NAME] = None
    temperature: Annotated[float | None, TEMPERATURE] = None
    max_tokens: Annotated[int | None, MAX_TOKENS] = None
    base_url: str | None = None
    api_key_env: str | None = None
    # The model's history: the share of its drafts verified correct before (e.g. its pass@1 on
    # a past evaluation). Drafts of a model with a history weigh its log-odds in the pick
    # (agents.reliability); with no entry giving one, every draft counts the same.
    reliability: float | None = Field(default=None, gt=0, lt=1)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _http_url(value)

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
    where = f"[{index}]"  # written after the key: [llm] candidates[1]
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
        problems = []
        for e in exc.errors():
            field = ".".join(map(str, e["loc"]))
            if e["type"] == "extra_forbidden":
                hint = _nearest(field, CandidateModel.model_fields, quote=repr)
                problems.append(f"{where}: unknown key {field!r} ({hint})")
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


# A model's price table: USD per million tokens in and out, both needed to price a call.
_PRICE_KEYS = ("input", "output")


class LLMSettings(Section):
    base_url: str | None = None
    request_timeout_s: Annotated[float, POSITIVE] = 120.0
    max_retries: Annotated[int, NOT_NEGATIVE] = 4
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
    max_rounds: Annotated[int, ROUNDS] = 3
    # Programmer drafts per request, picked by execution (agents.selection); 1 until the
    # measurements in CHANGELOG.md justify more. A list gives each draft its own model,
    # temperature or endpoint (CandidateModel); its length is the number of drafts.
    candidates: int | list[CandidateModel] = 1
    budget_tokens: Annotated[int | None, TOKEN_BUDGET] = None
    budget_usd: Annotated[float | None, USD_BUDGET] = None
    # Endpoints besides base_url that a request queued with another caller's route may send
    # this process's OPENAI_API_KEY to; any other endpoint in a stored route is refused.
    allowed_base_urls: list[str] = Field(default_factory=list)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _http_url(value)

    @field_validator("allowed_base_urls")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        for i, url in enumerate(value):
            try:
                _http_url(url)
            except ValueError as exc:
                raise ValueError(f"entry {i}: {exc}") from None
        return value

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for model, price in value.items():
            for key in price:
                if key not in _PRICE_KEYS:
                    hint = _nearest(key, _PRICE_KEYS, quote=repr)
                    raise ValueError(f"{model}: unknown key {key!r} ({hint})")
            missing = [k for k in _PRICE_KEYS if k not in price]
            if missing:
                raise ValueError(f"{model}: needs {' and '.join(missing)} (USD per 1M tokens)")
            if any(v < 0 for v in price.values()):
                raise ValueError(f"{model}: a price is never negative")
        return value

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


class SandboxSettings(Section):
    backend: Literal["auto", "docker", "bwrap"] = "auto"
    # None keeps the sandbox's own value, defined once there: the image tag is the package
    # set's (codegen.sandbox.packages.image_tag), each limit a field of codegen.sandbox.Limits
    # (composition.sandbox_limits fills in what is set here).
    image: str | None = Field(default=None, min_length=1)
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
    timeout_s: Annotated[float | None, POSITIVE] = None
    memory_mb: Annotated[int | None, MEMORY_MB] = None
    pids: int | None = Field(default=None, ge=8)
    cpus: Annotated[float | None, POSITIVE] = None
    workdir_mb: int | None = Field(default=None, ge=1)
    max_output_bytes: int | None = Field(default=None, ge=1024)


class ContextSettings(Section):
    """How much retrieved context the crew's programmer gets (``[retrieval]`` keys)."""

    top_k: Annotated[int, TOP_K] = 8  # hits per query; also `codegen search`'s default -k
    # Retrieved context is cut to this many (estimated) tokens; 0 gives the programmer none.
    context_token_budget: Annotated[int, NOT_NEGATIVE] = 1500


class RetrievalSettings(ContextSettings):
    # Names of the retrieval package's registries (codegen.retrieval), checked there on use.
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
    weaviate_collection: str = Field(default="CodeChunk", min_length=1)
    openai_embedding_model: Annotated[str, MODEL_NAME] = "text-embedding-3-small"
    openai_embedding_dimensions: Annotated[int | None, AT_LEAST_ONE] = None
    # Blocking index check: MRR@10 of docstring-sentence queries over the indexed functions.
    # Dense catches a broken embedder even when BM25 alone would keep hybrid afloat. The floors
    # sit well under the measured stdlib figures (hybrid 0.52, dense 0.50; CHANGELOG.md)
    # and far above a broken embedder's (dense 0.02), so corpus drift does not trip them.
    quality_queries: Annotated[int, AT_LEAST_ONE] = 200
    quality_floor_hybrid_mrr: Annotated[float, SHARE] = 0.3
    quality_floor_dense_mrr: Annotated[float, SHARE] = 0.25
    # The faiss sidecar's probe count (large LanceDB indexes) is calibrated at build time to
    # reach this recall@10 against exact search: the mean, and every calibration query's own.
    ann_recall_mean: Annotated[float, SHARE] = 0.95
    ann_recall_min: Annotated[float, SHARE] = 0.5


class GitHubSourceSettings(Section):
    """github_repos / github_issues. The token comes from GITHUB_TOKEN, never from here."""

    api_url: str = "https://api.github.com"
    repos: list[str] = Field(default_factory=list)  # "owner/name" for github_repos
    issue_repos: list[str] = Field(default_factory=list)  # "owner/name" for github_issues
    languages: list[str] = Field(default_factory=lambda: ["python", "markdown"])
    include_paths: list[str] = Field(default_factory=list)  # glob patterns; empty = all
    exclude_paths: list[str] = Field(default_factory=lambda: ["*/tests/*", "*/test/*"])
    max_file_bytes: Annotated[int, AT_LEAST_ONE] = 500_000
    max_issues: Annotated[int, AT_LEAST_ONE] = 500
    # A spent rate limit is waited out until its reset, if that is at most this far away.
    max_rate_limit_wait_s: Annotated[float, NOT_NEGATIVE] = 900.0

    @field_validator("api_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value) or value


class StackOverflowSourceSettings(Section):
    """Stack Exchange API (key from STACKEXCHANGE_KEY) and/or a data-dump Posts.xml."""

    api_url: str = "https://api.stackexchange.com"
    site: str = Field(default="stackoverflow", min_length=1)
    tags: list[str] = Field(default_factory=list)
    max_pages: Annotated[int, AT_LEAST_ONE] = 5
    posts_xml: str | None = None

    @field_validator("api_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value) or value


class DocsSourceSettings(Section):
    # Each URL: a sitemap.xml, or a page whose links are crawled under the same prefix.
    urls: list[str] = Field(default_factory=list)
    max_pages: Annotated[int, AT_LEAST_ONE] = 500
    delay_s: Annotated[float, NOT_NEGATIVE] = 1.0  # politeness delay between requests to one host
    user_agent: str = Field(default="multiagent-codegen-corpus/0.1", min_length=1)
    # Hosts of the urls that may resolve to loopback, private or link-local addresses (an IP
    # literal or localhost in a URL needs no entry); any other such address is refused.
    private_hosts: list[str] = Field(default_factory=list)


class BlogSourceSettings(Section):
    feeds: list[str] = Field(default_factory=list)  # RSS or Atom URLs
    fetch_articles: bool = True  # fetch the linked page when the feed has only a summary
    private_hosts: list[str] = Field(default_factory=list)  # as [corpus.docs] private_hosts


class CorpusSettings(Section):
    # Empty means "the running interpreter's standard library".
    local_paths: list[str] = Field(default_factory=list)
    # Names of the corpus package's source registry (codegen.corpus.sources), checked there.
    sources: list[str] = Field(default_factory=lambda: ["local"])
    reindex_cron: str = Field(default="0 3 * * *", min_length=1)
    # The daemon's first tick on an instance with no corpus and no index starts the first
    # build (one run per source, then the chunks and the index); off for tests and for users
    # who build elsewhere.
    build_on_first_run: bool = True
    max_document_bytes: Annotated[int, AT_LEAST_ONE] = 1_000_000
    # None keeps the corpus package's own measured default, defined once there: the chunk
    # budget in codegen.corpus.chunk.Budget, near-duplicate detection in
    # codegen.corpus.dedupe.DedupeParams (Lee et al. 2022: 5-gram shingles, Jaccard 0.8).
    chunk_max_tokens: int | None = Field(default=None, ge=16)
    chunk_min_tokens: int | None = Field(default=None, ge=1)
    dedupe_shingle_size: int | None = Field(default=None, ge=1)
    dedupe_num_perm: int | None = Field(default=None, ge=16)
    dedupe_threshold: float | None = Field(default=None, gt=0, le=1)
    # Asset check bounds on the share of documents removed as duplicates.
    dedupe_ratio_max: Annotated[float, SHARE] = 0.5
    http_timeout_s: Annotated[float, POSITIVE] = 30.0
    http_retries: Annotated[int, NOT_NEGATIVE] = 3
    github: GitHubSourceSettings = GitHubSourceSettings()
    stackoverflow: StackOverflowSourceSettings = StackOverflowSourceSettings()
    docs: DocsSourceSettings = DocsSourceSettings()
    blogs: BlogSourceSettings = BlogSourceSettings()


class EvalSettings(Section):
    """HumanEval runs (issue 7): samples per task, scoring limits, backfill concurrency."""

    # n candidates per task; pass@10 is reported when n >= 10
    samples: Annotated[int, SAMPLES] = 1
    timeout_s: Annotated[float, POSITIVE] = 10.0  # per hidden-test execution in the sandbox
    memory_mb: Annotated[int, MEMORY_MB] = 512
    # Limits of the Dagster pools "llm" (crew ops) and "sandbox" (scoring ops), set on the
    # instance by `codegen eval` and the backfill helpers (dagster.yaml holds only a default).
    llm_concurrency: Annotated[int, AT_LEAST_ONE] = 2
    sandbox_concurrency: Annotated[int, AT_LEAST_ONE] = 2
    # Tasks worked on concurrently inside one op (CLI runs and ranged backfill runs).
    workers: Annotated[int, WORKERS] = 2
    # A samples file (JSONL: task_id + completion | solution) the humaneval_file_* assets
    # score; set by `codegen eval humaneval --samples-file FILE --backfill`.
    samples_file: str | None = None
    # Modules that register benchmarks of their own (codegen.evaluation.benchmarks.register):
    # each gets its asset family (<name>_samples, ...) beside HumanEval's.
    benchmarks: list[str] = Field(default_factory=list)


class StorageSettings(Section):
    """Where Dagster's IO manager keeps asset values (the large artefacts live in files)."""

    # Used only when env = production; empty keeps the local filesystem IO manager.
    gcs_bucket: str | None = None
    gcs_prefix: str = "multiagent-codegen"
    gcs_project: str | None = None


class ReviewSettings(Section):
    """Who signs off on code whose tests pass (``[review]``; issue 15)."""

    # agent: the Reviewer agent alone; human: a person alone; both: the agent, then a person.
    mode: Literal["agent", "human", "both"] = "agent"
    # A review waiting longer than this ends as rejected (None: it waits for ever).
    timeout_hours: float | None = Field(default=None, gt=0)


ENV_PREFIX = "CODEGEN_"
ENV_DELIMITER = "__"  # CODEGEN_<SECTION>__<KEY>: the separator that makes a variable a setting


@dataclass(frozen=True)
class Origin:
    """Where one effective setting came from."""

    source: Literal["environment", "file", "default"]
    name: str | None = None  # the variable, or the file's path; None for a default

    def to_dict(self) -> dict[str, str | None]:
        return {"source": self.source, "from": self.name}


@dataclass(frozen=True)
class Given:
    """What the settings were read from: the file's tables and the setting variables."""

    file: Path
    file_values: Mapping[str, Any]
    variables: Mapping[tuple[str, ...], str]  # a setting's path -> the variable that gives it


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=ENV_DELIMITER, extra="forbid"
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

    # What load_settings read them from (None: built some other way), for setting_origins.
    _given: Given | None = PrivateAttr(default=None)

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


# -- reading and checking ----------------------------------------------------------------------
def _sections() -> dict[str, type[BaseModel]]:
    """The top-level tables: [llm], [sandbox], ..."""
    return {
        name: field.annotation
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }


def setting_variables() -> dict[tuple[str, ...], str]:
    """The environment's setting variables by the setting's path: every ``CODEGEN_<SECTION>__
    <KEY>`` (known or not), and ``CODEGEN_HOME`` / ``CODEGEN_ENV`` (the top-level settings).
    Any other ``CODEGEN_*`` (CODEGEN_CONFIG, CODEGEN_REQUIRE_DOCKER, ...) is not a setting."""
    out: dict[tuple[str, ...], str] = {}
    for name in os.environ:
        upper = name.upper()  # pydantic-settings reads these names case-insensitively
        if not upper.startswith(ENV_PREFIX):
            continue
        path = tuple(upper.removeprefix(ENV_PREFIX).lower().split(ENV_DELIMITER))
        if len(path) > 1 or path[0] in Settings.model_fields:
            out[path] = name
    return out


def _read_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadSettings(f"bad settings: cannot read {path} ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:  # says where (line, column), never the text
        raise BadSettings(f"bad settings: {path} is not valid TOML: {exc}") from None


def _variable_values() -> dict[str, Any]:
    """The setting variables as Settings() reads them (nested, JSON decoded)."""
    try:
        return EnvSettingsSource(Settings)()
    except SettingsError as exc:  # a list or table that is not JSON; it names the section
        raise BadSettings(f"bad settings: {exc}") from None


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """Validates one top-level key on its own (a section, home, env)."""
    field = Settings.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[field.annotation, *field.metadata])


def _nearest(name: str, known: Iterable[str], *, quote: Callable[[str], str] = repr) -> str:
    """``did you mean 'x'?`` for the closest known name, else the known names."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean {quote(close[0])}?"
    return "known: " + ", ".join(names)


def _names_at(path: tuple[str, ...]) -> list[str]:
    """The valid keys of the table at ``path``: a section's fields, or a dict's Literal keys
    (the roles of [llm.agents])."""
    tp: Any = Settings
    for part in path:
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return []
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    if get_origin(tp) is dict and get_origin(get_args(tp)[0]) is Literal:
        return [str(a) for a in get_args(get_args(tp)[0])]
    return []


def _label(loc: tuple[str | int, ...]) -> str:
    """A key as the docs write it: ``[llm] max_rounds``, ``[llm.default] model``, ``env``."""
    names: list[str] = []
    for part in loc:
        if isinstance(part, int) and names:
            names[-1] += f"[{part}]"
        else:
            names.append(str(part))
    *table, key = names
    return f"[{'.'.join(table)}] {key}" if table else key


@dataclass(frozen=True)
class _Source:
    """One place settings come from, as a problem names it: the file, or the variables."""

    file: Path | None  # None: the environment
    variables: Mapping[tuple[str, ...], str]

    def where(self, path: tuple[str, ...]) -> str:
        if self.file is not None:
            return f"of {self.file}"
        for var_path, name in self.variables.items():
            if path[: len(var_path)] == var_path or var_path[: len(path)] == path:
                return f"from {name}"
        return "from the environment"

    def hint(
        self, table: tuple[str, ...], name: str, known: Iterable[str], quote: Callable[[str], str]
    ) -> str:
        """The nearest valid name: the key (``quote``d) in the file, the whole variable in the
        environment (the rest of a longer variable's path kept)."""
        if self.file is not None:
            return _nearest(name, known, quote=quote)
        rest = next(
            (p[len(table) + 1 :] for p in self.variables if p[: len(table) + 1] == (*table, name)),
            (),
        )

        def variable(key: str) -> str:
            return ENV_PREFIX + ENV_DELIMITER.join((*table, key, *rest)).upper()

        return _nearest(name, known, quote=variable)

    def unknown(self, table: tuple[str, ...], name: str, *, is_table: bool = False) -> str:
        """An unknown section or key, with the nearest valid name."""
        where = self.where((*table, name))
        if table:
            hint = self.hint(table, name, _names_at(table), repr)
            return f"unknown key {name!r} in [{'.'.join(table)}] {where} ({hint})"
        if is_table or self.file is None:
            hint = self.hint((), name, _sections(), lambda section: f"[{section}]")
            where = where if self.file is None else f"in {self.file}"
            return f"unknown section [{name}] {where} ({hint})"
        # A key at the top of the file that belongs in a section: say which.
        owners = [s for s, model in _sections().items() if name in model.model_fields]
        hint = (
            f"did you mean [{owners[0]}] {name}?"
            if owners
            else self.hint((), name, Settings.model_fields, repr)
        )
        return f"unknown key {name!r} at the top {where} ({hint})"

    def problems(self, values: Mapping[str, Any]) -> list[str]:
        """Each key of ``values`` checked on its own: unknown names, types, ranges."""
        out: list[str] = []
        for key, value in values.items():
            if key not in Settings.model_fields:
                out.append(self.unknown((), key, is_table=isinstance(value, dict)))
                continue
            try:
                _adapter(key).validate_python(value)
            except ValidationError as exc:
                out += [self._problem((key, *e["loc"]), e["type"], e["msg"]) for e in exc.errors()]
        return out

    def _problem(self, loc: tuple[str | int, ...], kind: str, msg: str) -> str:
        path = tuple(str(p) for p in loc if not isinstance(p, int) and p != "[key]")
        if kind == "extra_forbidden":
            return self.unknown(path[:-1], path[-1])
        if loc[-1] == "[key]":  # a dict keyed by names ([llm.agents]): not one of them
            return self.unknown(path[:-1], path[-1])
        why = _message(msg)
        # An entry's own problem names its index: [llm] candidates[1] of ...: unknown key ...
        index, sep, rest = why.partition(": ") if why.startswith("[") else ("", "", why)
        return f"{_label(loc)}{index} {self.where(path)}: {rest if sep else why}"


def _check(given: Given, variable_values: Mapping[str, Any]) -> None:
    """BadSettings naming every problem of the file and the variables, each on its own."""
    env = _Source(None, given.variables)
    problems = _Source(given.file, {}).problems(given.file_values)
    problems += [
        env.unknown((), path[0])
        for path in given.variables
        if len(path) > 1 and path[0] not in _sections()
    ]
    problems += env.problems(variable_values)
    if problems:
        raise BadSettings("bad settings: " + "; ".join(problems))


def load_settings() -> Settings:
    """The settings as configured now; BadSettings says, in one line, what is wrong."""
    file = config_file()
    given = Given(file, _read_file(file), setting_variables())
    _check(given, _variable_values())
    try:
        settings = Settings()
    except ValidationError as exc:  # the two together; each alone was fine
        raise BadSettings(f"bad settings ({file}, CODEGEN_*): {describe(exc)}") from None
    except SettingsError as exc:
        raise BadSettings(f"bad settings ({file}, CODEGEN_*): {exc}") from None
    settings._given = given
    return settings


def describe(exc: ValidationError) -> str:
    """A validation error as one line: each bad key and why, without the value given."""
    out = []
    for e in exc.errors():
        why = "unknown key" if e["type"] == "extra_forbidden" else _message(e["msg"])
        out.append(
            f"{_label(e['loc'])}{why}" if why.startswith("[") else f"{_label(e['loc'])}: {why}"
        )
    return "; ".join(out)


def _leaves(value: object, path: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """The path of each value that is not a table (a list, an empty table, a number...)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    else:
        yield path


def _holds(values: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether ``values`` (a source's nested tables) give the setting at ``path``."""
    node: object = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def setting_origins(settings: Settings) -> dict[str, Origin]:
    """Where each effective setting (``llm.max_rounds``, ``llm.default.model``, ...) came from:
    its variable, the file, or the default. Settings not made by load_settings are read as
    the environment and file are now."""
    given = settings._given or Given(config_file(), _read_file(config_file()), setting_variables())
    out: dict[str, Origin] = {}
    for path in _leaves(settings.model_dump(mode="json")):
        variable = next((name for p, name in given.variables.items() if path[: len(p)] == p), None)
        if variable is not None:
            out[".".join(path)] = Origin("environment", variable)
        elif _holds(given.file_values, path):
            out[".".join(path)] = Origin("file", str(given.file))
        else:
            out[".".join(path)] = Origin("default")
    return out


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()


def default_dagster_home(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).home / "dagster_home"
