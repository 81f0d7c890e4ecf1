"""The tables of ``codegen.toml`` ([llm], [sandbox], [retrieval], [corpus], [eval], [storage],
[review]) as models: each key's type, range and default. A key a table does not define is a typo,
refused when the settings load (``Section``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from codegen.settings.ranges import (
    AT_LEAST_ONE,
    MAX_CANDIDATES,
    MAX_TOKENS,
    MEMORY_MB,
    MODEL_NAME,
    NOT_NEGATIVE,
    POSITIVE,
    ROUNDS,
    SAMPLES,
    SHARE,
    TEMPERATURE,
    TOKEN_BUDGET,
    TOP_K,
    USD_BUDGET,
    WORKERS,
)
from codegen.settings.wording import nearest, reason

# The crew's roles, as they go over the wire in X-Codegen-Agent; a TOML override for any other
# name is a typo, rejected when the settings load.
AgentRole = Literal["analyzer", "test_designer", "programmer", "reviewer", "documenter"]


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
    # (agents.pick.reliability); with no entry giving one, every draft counts the same.
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
                hint = nearest(field, CandidateModel.model_fields, quote=repr)
                problems.append(f"{where}: unknown key {field!r} ({hint})")
            else:
                problems.append(f"{where}.{field}: {reason(e['msg'])}")
        raise ValueError("; ".join(problems)) from None


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
    # Programmer drafts per request, picked by execution (agents.pick.matrix); 1 until the
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
                    hint = nearest(key, _PRICE_KEYS, quote=repr)
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
    # One of the sandbox's registered backends, or "auto" (codegen.sandbox.backends): a plain
    # name here, below the registry; composition.sandbox_backend checks it.
    backend: str = Field(default="auto", min_length=1)
    # None keeps the sandbox's own value, defined once there: the image tag is the package
    # set's (codegen.sandbox.image.image_tag), each limit a field of codegen.sandbox.Limits
    # (composition.sandbox_limits fills in what is set here).
    image: str | None = Field(default=None, min_length=1)
    # The sandbox's third-party Python distributions, installed into the image and the
    # bubblewrap root at build time only (codegen/sandbox/image/packages.py): a named set, plus
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
    # each gets its asset family (<name>_samples, ...) beside HumanEval's; or task shapes of
    # their own (codegen.evaluation.shapes.register_shape), imported before a task file is read.
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
