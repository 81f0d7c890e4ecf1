"""Tokens, cost, latency and cache counts per agent, per endpoint and programmer candidate,
and per model, and the budget ``Meter`` that stops a request when it is spent."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, replace

from codegen.json_types import JSONObject, JSONValue


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
    how many a cached reply answered; the tokens and cost of the others (``cost_usd`` None
    once one of them used a model missing from the price table)."""

    role: str
    candidate: int | None
    base_url: str
    model: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0

    def add(self, other: EndpointCalls) -> None:
        self.calls += other.calls
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd = _add_cost(self.cost_usd, other.cost_usd)

    def shown(self) -> JSONObject:
        """As the report lists it: where, what, how many calls, tokens and cost."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "calls": self.calls,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 8),
        }

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

    ``cost_usd`` is None as soon as one real call used a model missing from the price table
    (``unpriced_calls``) or a replay server answered (``replayed_calls``: no model was called,
    so no price applies): an unknown cost is reported as unknown, never as zero.
    ``spent_usd`` is what the priced calls cost (replays and cache hits spend nothing): the
    dollar budget holds on it, so replayed drafts beside real ones leave the real ones bounded.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    unpriced_calls: int = 0
    replayed_calls: int = 0
    spent_usd: float = 0.0
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
        replayed: bool = False,
    ) -> None:
        if base_url is not None and model is not None:
            spent = (0, 0, 0.0) if cached else (prompt_tokens, completion_tokens, cost_usd)
            self._count_endpoint(
                EndpointCalls(role, candidate, base_url, model, 1, int(cached), *spent)
            )
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
            if replayed:
                self.replayed_calls += 1
            else:
                self.unpriced_calls += 1
            self.cost_usd = None
            agent.cost_usd = None
        else:
            self.spent_usd += cost_usd
            if self.cost_usd is not None:
                self.cost_usd += cost_usd
            if agent.cost_usd is not None:
                agent.cost_usd += cost_usd

    def _count_endpoint(self, counted: EndpointCalls) -> None:
        for entry in self.endpoints:
            if entry.same_place(counted):
                entry.add(counted)
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
        out.replayed_calls += other.replayed_calls
        out.spent_usd += other.spent_usd
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
        data["per_model"] = self.per_model()
        return data

    def per_model(self) -> JSONObject:
        """Per model, over every role, candidate and endpoint that asked for it: calls, cached
        replies, tokens and cost (None: a call's price was unknown)."""
        totals: dict[str, EndpointCalls] = {}
        for entry in self.endpoints:
            total = totals.setdefault(entry.model, EndpointCalls("", None, "", entry.model))
            total.add(entry)
        out: JSONObject = {}
        for model, total in sorted(totals.items()):
            shown = total.shown()
            del shown["base_url"], shown["model"]
            out[model] = shown
        return out

    @classmethod
    def from_dict(cls, data: JSONObject | None) -> Usage:
        data = dict(data or {})
        data.pop("total_tokens", None)
        data.pop("per_model", None)  # derived from the endpoints
        per_agent = {k: AgentUsage(**v) for k, v in (data.pop("per_agent", None) or {}).items()}
        endpoints = [EndpointCalls(**e) for e in data.pop("endpoints", None) or []]
        return cls(**data, per_agent=per_agent, endpoints=endpoints)

    def endpoints_by_role(self) -> JSONObject:
        """Per role, the base URL and model it called (``cached``: replies from the cache) and
        the tokens and cost of those calls; the programmer's is a list, one entry per candidate
        draft. Roles never called are absent: an endpoint is only reported where a call went."""
        out: JSONObject = {}
        drafts: list[JSONValue] = []
        for entry in sorted(self.endpoints, key=lambda e: (e.role, e.candidate or 0)):
            shown = entry.shown()
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
            # Replayed calls spent nothing: only a real call without a price is unknown.
            if usage.unpriced_calls:
                return "dollar budget cannot be enforced: a model's price is unknown"
            if usage.spent_usd > self.usd:
                return f"dollar budget exceeded: ${usage.spent_usd:.6f} spent, limit ${self.usd}"
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
        replayed: bool = False,
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
                replayed=replayed,
            )

    def add(self, usage: Usage) -> None:
        """Count what another meter of this request spent (a parallel draft's)."""
        with self._lock:
            self.usage = self.usage.merge(usage)
