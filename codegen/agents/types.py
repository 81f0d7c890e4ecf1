"""Typed values the crew passes around: the spec, usage accounting, options and the outcome."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from codegen.sandbox.types import Limits, TestReport


class Status(StrEnum):
    PASSED = "passed"
    FAILED_TESTS = "failed_tests"
    REJECTED = "rejected"
    BUDGET_EXCEEDED = "budget_exceeded"
    ERROR = "error"
    # Not an ending: the tests pass and a person's verdict is awaited (no run holds it).
    AWAITING_REVIEW = "awaiting_review"


# Who signs off on code whose tests pass: the Reviewer agent, a person, or the agent then a
# person (``[review] mode``, overridable per request).
REVIEW_MODES = ("agent", "human", "both")


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


def _strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Pydantic's schema, reshaped for OpenAI strict mode: every property required, no extras,
    no keywords strict mode rejects (minLength, titles)."""

    def fix(node: Any) -> Any:
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

    return fix(model.model_json_schema())


SPEC_JSON_SCHEMA: dict[str, Any] = _strict_schema(Spec)


@dataclass(frozen=True)
class Analysis:
    """The analyzer's spec, and how the server was asked for it (``StructuredMode`` value)."""

    spec: dict[str, Any]
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
    ) -> None:
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

    def merge(self, other: Usage) -> Usage:
        """A new Usage holding both (used to add up usage across Dagster assets)."""
        out = Usage.from_dict(self.to_dict())
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

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["total_tokens"] = self.total_tokens
        if self.cost_usd is not None:
            data["cost_usd"] = round(self.cost_usd, 8)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        data = dict(data or {})
        data.pop("total_tokens", None)
        per_agent = {k: AgentUsage(**v) for k, v in (data.pop("per_agent", None) or {}).items()}
        return cls(**data, per_agent=per_agent)


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

    def record(self, role: str, **kw: Any) -> None:
        with self._lock:
            self.usage.record(role, **kw)

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CrewOptions:
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
    spec: dict[str, Any] = field(default_factory=dict)
    solution: str = ""
    tests: str = ""
    docs: str = ""
    rounds: int = 0
    test_report: TestReport | None = None
    usage: Usage = field(default_factory=Usage)
    review: str = ""
    context: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    structured_outputs: str = ""  # how the analyzer's server took the JSON request

    def to_dict(self) -> dict[str, Any]:
        report = self.test_report
        return {
            "status": self.status.value,
            "reason": self.reason,
            "spec": self.spec,
            "solution": self.solution,
            "tests": self.tests,
            "docs": self.docs,
            "rounds": self.rounds,
            "tests_passed": report.passed if report else 0,
            "tests_total": report.total if report else 0,
            "test_report": report.to_dict() if report else None,
            "usage": self.usage.to_dict(),
            "review": self.review,
            "context": self.context,
            "history": self.history,
            "structured_outputs": self.structured_outputs,
        }
