"""Typed values the crew passes around: the spec, usage accounting, options and the outcome."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codegen.agents.records import ContextChunk, Round
from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.types import Limits, TestReport


class Status(StrEnum):
    PASSED = "passed"
    FAILED_TESTS = "failed_tests"
    REJECTED = "rejected"
    BUDGET_EXCEEDED = "budget_exceeded"
    # The model ended it: no usable code after the re-asks (or a reply breaking the wire
    # contract). Scored 0 and cached, like failed_tests: a weak model's score, not an outage.
    NO_CODE = "no_code"
    # A replay server's answer for a turn it never recorded (UNRECORDED_CODE): the end of the
    # recording, scored with the code so far.
    UNRECORDED = "unrecorded"
    # An outage (endpoint down, any other HTTP error, sandbox down): not a score, retried.
    ERROR = "error"
    # Not an ending: the tests pass and a person's verdict is awaited (no run holds it).
    AWAITING_REVIEW = "awaiting_review"


# Statuses the model ended a request with (not passed, not an outage): `codegen generate`
# exits 3 for them, and an evaluation scores and caches them.
MODEL_ENDED = frozenset(
    {
        Status.FAILED_TESTS,
        Status.REJECTED,
        Status.NO_CODE,
        Status.BUDGET_EXCEEDED,
        Status.UNRECORDED,
    }
)


def is_outage(status: Status) -> bool:
    """Whether an ending is an outage (endpoint, transport or sandbox down: ``error``) rather
    than the model's doing. An outage is no result: Dagster fails the step and the run, nothing
    is materialized, a re-run retries. Every other ending (``failed_tests``, ``rejected``,
    ``budget_exceeded``, and the model-failure statuses such as ``no_code`` or ``unrecorded``)
    is the request's result: materialized, with a failing check."""
    return status is Status.ERROR


class ReviewMode(StrEnum):
    """Who signs off on code whose tests pass: the Reviewer agent, a person, or the agent then
    a person (``[review] mode``, overridable per request). Members are named as their values,
    which is how Dagster's launchpad shows an enum."""

    agent = "agent"
    human = "human"
    both = "both"


REVIEW_MODES = tuple(m.value for m in ReviewMode)


class BadOptions(ValueError):
    """A request's options are wrong: the one-line reason, before any model is called."""


class StoredOptions(TypedDict, total=False):
    """``RequestOptions`` as a request stores them: the values that were set, as JSON."""

    max_rounds: int
    candidates: int
    budget_tokens: int
    budget_usd: float
    review: str  # one of REVIEW_MODES


class RequestOptions(BaseModel):
    """What a person may set on one request: the one definition of the names, types and ranges
    behind `codegen generate`'s flags, an inbox file's ``"options"`` and the launchpad config
    of ``submit_request_job``. Unset (None): the configured default."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int | None = Field(
        default=None, ge=1, le=20, description="Refinement rounds, 1-20 (default: [llm] max_rounds)"
    )
    candidates: int | None = Field(
        default=None,
        ge=1,
        le=20,
        description="Programmer drafts, one picked by execution, 1-20 (default: [llm] candidates)",
    )
    budget_tokens: int | None = Field(
        default=None, ge=1, description="Stop after this many tokens (default: none)"
    )
    budget_usd: float | None = Field(
        default=None, gt=0, description="Dollar budget, above 0 (default: none)"
    )
    review: ReviewMode | None = Field(
        default=None,
        description="Who signs off once the tests pass: agent, human or both "
        "(default: [review] mode)",
    )

    @classmethod
    def check(cls, raw: object) -> StoredOptions:
        """``raw`` validated into the stored form (set values only); BadOptions says why not."""
        if not isinstance(raw, dict):
            raise BadOptions('"options" must be an object')
        try:
            options = cls.model_validate(raw)
        except ValidationError as exc:
            raise BadOptions(
                "bad options: "
                + "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'options'}: "
                    + ("unknown option" if e["type"] == "extra_forbidden" else e["msg"])
                    for e in exc.errors()
                )
            ) from exc
        return options.stored()

    def stored(self) -> StoredOptions:
        return cast(StoredOptions, self.model_dump(mode="json", exclude_none=True))

    @classmethod
    def bounds(cls, name: str) -> dict[str, float | bool]:
        """A numeric option's range as click's IntRange/FloatRange keywords."""
        out: dict[str, float | bool] = {}
        for rule in cls.model_fields[name].metadata:
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


# -- the analyzer's output ----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionSpec(_Strict):
    name: str = Field(min_length=1)
    signature: str = Field(min_length=1)
    description: str


class Example(_Strict):
    call: str = Field(min_length=1)
    expected: str


class Spec(_Strict):
    purpose: str = Field(min_length=1)
    functions: list[FunctionSpec] = Field(min_length=1)
    behaviours: list[str]
    edge_cases: list[str]
    examples: list[Example]
    constraints: list[str]


def _strict_schema(model: type[BaseModel]) -> JSONObject:
    """Pydantic's schema, reshaped for OpenAI strict mode: every property required, no extras,
    no keywords strict mode rejects (minLength, titles)."""

    def fix(node: JSONValue) -> JSONValue:
        if isinstance(node, dict):
            node = {
                k: fix(v) for k, v in node.items() if k not in ("title", "minLength", "minItems")
            }
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            return node
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    schema = fix(model.model_json_schema())
    assert isinstance(schema, dict)  # a model's schema is an object
    return schema


SPEC_JSON_SCHEMA: JSONObject = _strict_schema(Spec)


@dataclass(frozen=True)
class Analysis:
    """The analyzer's spec, and how the server was asked for it (``StructuredMode`` value)."""

    spec: Spec
    structured_outputs: str


# -- usage and budget ------------------------------------------------------------------------
@dataclass
class AgentUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = 0.0
    cache_hits: int = 0


@dataclass
class EndpointCalls:
    """Calls one role (and programmer draft) made to one base URL and model; ``cached``:
    how many a cached reply answered."""

    role: str
    candidate: int | None
    base_url: str
    model: str
    calls: int = 0
    cached: int = 0

    def same_place(self, other: EndpointCalls) -> bool:
        return (self.role, self.candidate, self.base_url, self.model) == (
            other.role,
            other.candidate,
            other.base_url,
            other.model,
        )


@dataclass
class Usage:
    """Tokens, cost, latency and cache counts. Cached replies cost nothing and send nothing.

    ``cost_usd`` is None as soon as one real call used a model missing from the price table:
    an unknown cost is reported as unknown, never as zero.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    unpriced_calls: int = 0
    per_agent: dict[str, AgentUsage] = field(default_factory=dict)
    # Where the calls went: one entry per (role, candidate, base URL, model) with its number
    # of calls and how many of them a cached reply answered (``codegen.agents.llm``).
    endpoints: list[EndpointCalls] = field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def record(
        self,
        role: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float | None,
        latency_s: float,
        cached: bool,
        base_url: str | None = None,
        model: str | None = None,
        candidate: int | None = None,
    ) -> None:
        if base_url is not None and model is not None:
            self._count_endpoint(EndpointCalls(role, candidate, base_url, model, 1, int(cached)))
        agent = self.per_agent.setdefault(role, AgentUsage())
        agent.calls += 1
        agent.latency_s += latency_s
        self.calls += 1
        if cached:
            self.cache_hits += 1
            agent.cache_hits += 1
            return
        self.cache_misses += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        agent.prompt_tokens += prompt_tokens
        agent.completion_tokens += completion_tokens
        if cost_usd is None:
            self.unpriced_calls += 1
            self.cost_usd = None
            agent.cost_usd = None
        else:
            if self.cost_usd is not None:
                self.cost_usd += cost_usd
            if agent.cost_usd is not None:
                agent.cost_usd += cost_usd

    def _count_endpoint(self, counted: EndpointCalls) -> None:
        for entry in self.endpoints:
            if entry.same_place(counted):
                entry.calls += counted.calls
                entry.cached += counted.cached
                return
        self.endpoints.append(replace(counted))

    def merge(self, other: Usage) -> Usage:
        """A new Usage holding both (used to add up usage across Dagster assets)."""
        out = Usage.from_dict(self.to_dict())
        for entry in other.endpoints:
            out._count_endpoint(entry)
        out.prompt_tokens += other.prompt_tokens
        out.completion_tokens += other.completion_tokens
        out.calls += other.calls
        out.cache_hits += other.cache_hits
        out.cache_misses += other.cache_misses
        out.unpriced_calls += other.unpriced_calls
        out.cost_usd = _add_cost(out.cost_usd, other.cost_usd)
        for role, theirs in other.per_agent.items():
            mine = out.per_agent.setdefault(role, AgentUsage())
            mine.calls += theirs.calls
            mine.prompt_tokens += theirs.prompt_tokens
            mine.completion_tokens += theirs.completion_tokens
            mine.latency_s += theirs.latency_s
            mine.cache_hits += theirs.cache_hits
            mine.cost_usd = _add_cost(mine.cost_usd, theirs.cost_usd)
        return out

    def to_dict(self) -> JSONObject:
        data: JSONObject = asdict(self)
        data["total_tokens"] = self.total_tokens
        if self.cost_usd is not None:
            data["cost_usd"] = round(self.cost_usd, 8)
        return data

    @classmethod
    def from_dict(cls, data: JSONObject | None) -> Usage:
        data = dict(data or {})
        data.pop("total_tokens", None)
        per_agent = {k: AgentUsage(**v) for k, v in (data.pop("per_agent", None) or {}).items()}
        endpoints = [EndpointCalls(**e) for e in data.pop("endpoints", None) or []]
        return cls(**data, per_agent=per_agent, endpoints=endpoints)

    def endpoints_by_role(self) -> JSONObject:
        """Per role, the base URL and model it called (``cached``: replies from the cache);
        the programmer's is a list, one entry per candidate draft. Roles never called are
        absent: an endpoint is only reported where a call went."""
        out: JSONObject = {}
        drafts: list[JSONValue] = []
        for entry in sorted(self.endpoints, key=lambda e: (e.role, e.candidate or 0)):
            shown: JSONObject = {
                "base_url": entry.base_url,
                "model": entry.model,
                "calls": entry.calls,
                "cached": entry.cached,
            }
            if entry.role == "programmer":
                if not drafts:
                    out["programmer"] = drafts
                drafts.append({"candidate": entry.candidate or 0, **shown})
            elif entry.role in out:  # the same role on two endpoints: list both
                prior = out[entry.role]
                out[entry.role] = [*(prior if isinstance(prior, list) else [prior]), shown]
            else:
                out[entry.role] = shown
        return out


def _add_cost(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


class BudgetExceeded(Exception):
    """The request spent its token or dollar budget; the crew stops with budget_exceeded."""


@dataclass(frozen=True)
class Budget:
    tokens: int | None = None
    usd: float | None = None

    def violation(self, usage: Usage) -> str | None:
        if self.tokens is not None and usage.total_tokens > self.tokens:
            return f"token budget exceeded: {usage.total_tokens} tokens used, limit {self.tokens}"
        if self.usd is not None:
            if usage.cost_usd is None:
                return "dollar budget cannot be enforced: a model's price is unknown"
            if usage.cost_usd > self.usd:
                return f"dollar budget exceeded: ${usage.cost_usd:.6f} spent, limit ${self.usd}"
        return None


class Meter:
    """Usage of one request plus its budget; thread-safe (test designer and programmer run in
    parallel). ``prior`` is what earlier steps of the same request already spent."""

    def __init__(self, budget: Budget | None = None, prior: Usage | None = None) -> None:
        self.budget = budget or Budget()
        self.prior = prior or Usage()
        self.usage = Usage()
        self._lock = threading.Lock()

    def total(self) -> Usage:
        with self._lock:
            return self.prior.merge(self.usage)

    def check(self) -> None:
        reason = self.budget.violation(self.total())
        if reason:
            raise BudgetExceeded(reason)

    def record(
        self,
        role: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float | None,
        latency_s: float,
        cached: bool,
        base_url: str | None = None,
        model: str | None = None,
        candidate: int | None = None,
    ) -> None:
        """``Usage.record`` under the lock."""
        with self._lock:
            self.usage.record(
                role,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cost_usd=cost_usd,
                latency_s=latency_s,
                cached=cached,
                base_url=base_url,
                model=model,
                candidate=candidate,
            )

    def add(self, usage: Usage) -> None:
        """Count what another meter of this request spent (a parallel draft's)."""
        with self._lock:
            self.usage = self.usage.merge(usage)


# -- options and outcome ---------------------------------------------------------------------
@dataclass(frozen=True)
class CrewOptions:
    max_rounds: int = 3
    candidates: int = 1  # programmer drafts, one picked by execution (agents.selection)
    budget_tokens: int | None = None
    budget_usd: float | None = None
    # Retrieved context is cut to this many (estimated) tokens.
    context_token_budget: int = 1500
    top_k: int = 8
    # Sandbox limits for each test run; None means the sandbox's defaults.
    limits: Limits | None = None
    review: str = "agent"  # one of REVIEW_MODES

    @property
    def budget(self) -> Budget:
        return Budget(tokens=self.budget_tokens, usd=self.budget_usd)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject | None) -> CrewOptions:
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in (data or {}).items() if k in known}
        if isinstance(values.get("limits"), dict):
            values["limits"] = Limits(**values["limits"])
        if values.get("review", "agent") not in REVIEW_MODES:
            raise TypeError(f"review must be one of {', '.join(REVIEW_MODES)}")
        return cls(**values)


@dataclass
class Verdict:
    approved: bool
    text: str

    @property
    def reasons(self) -> str:
        lines = self.text.strip().splitlines()
        body = "\n".join(lines[1:]).strip() if lines else ""
        return body or self.text.strip() or "(no reasons given)"


@dataclass
class CrewOutcome:
    status: Status
    reason: str
    spec: Spec | None = None
    solution: str = ""
    tests: str = ""
    docs: str = ""
    rounds: int = 0
    test_report: TestReport | None = None
    usage: Usage = field(default_factory=Usage)
    review: str = ""
    context: list[ContextChunk] = field(default_factory=list)
    history: list[Round] = field(default_factory=list)
    structured_outputs: str = ""  # how the analyzer's server took the JSON request

    def to_dict(self) -> JSONObject:
        report = self.test_report
        return {
            "status": self.status.value,
            "reason": self.reason,
            "spec": self.spec.model_dump(mode="json") if self.spec else {},
            "solution": self.solution,
            "tests": self.tests,
            "docs": self.docs,
            "rounds": self.rounds,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "test_report": report.to_dict() if report else None,
            "usage": self.usage.to_dict(),
            "review": self.review,
            "context": [c.to_dict() for c in self.context],
            "history": [r.to_dict() for r in self.history],
            "structured_outputs": self.structured_outputs,
        }
