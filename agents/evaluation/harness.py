"""Generate candidates for HumanEval tasks, score them in the sandbox, cache both.

Generation and scoring are separate steps with separate caches, so the Dagster layer can put
them in different concurrency pools (LLM versus sandbox) and a generator never holds the
hidden tests: it receives a :class:`PublicTask`, built from the prompt alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.evaluation.humaneval import Problem, get_problem, public_request
from agents.evaluation.scoring import HARNESS_VERSION, SampleScore, score_candidate
from agents.evaluation.store import EvalStore, digest
from sandbox.api import Sandbox
from sandbox.types import Limits

CANONICAL = "canonical"
CREW = "crew"
MODES = (CANONICAL, CREW)


@dataclass(frozen=True)
class PublicTask:
    """Everything a generator may see of a problem: no hidden test, no canonical solution."""

    key: str
    entry_point: str
    prompt: str
    request: str


def public_task(problem: Problem) -> PublicTask:
    return PublicTask(problem.key, problem.entry_point, problem.prompt, public_request(problem))


@dataclass
class Candidate:
    """One generated sample with what it cost to produce."""

    code: str | None
    status: str  # the crew's final status, or "canonical"
    reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: some call used a model without a price
    latency_s: float = 0.0
    llm_calls: int = 0
    cache_hits: int = 0
    rounds: int = 0
    own_tests_passed: int | None = None  # the crew's own generated suite, for contrast
    own_tests_total: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


# (task, sample index) -> Candidate. Exceptions mean "could not run" and fail the task.
Generator = Callable[[PublicTask, int], Candidate]


def canonical_generator(task: PublicTask, index: int) -> Candidate:
    """The benchmark's own solution (looked up here, never passed through a PublicTask)."""
    return Candidate(code=get_problem(task.key).canonical_module(), status=CANONICAL)


# Crew statuses that say "nothing could be produced" rather than "this is the answer":
# they are scored (as failures) but never cached, so a re-run retries them.
RETRYABLE_STATUSES = frozenset({"error"})


@dataclass
class EvalConfig:
    mode: str
    samples: int = 1
    limits: Limits = field(default_factory=lambda: Limits(timeout_s=10.0))
    # What identifies the generator (models, temperatures, rounds, prompt versions); part of
    # the cache key. Must never hold a secret: it is stored in config.json.
    identity: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.samples < 1:
            raise ValueError(f"samples must be at least 1, got {self.samples}")
        if self.mode == CANONICAL and self.samples != 1:
            raise ValueError("canonical mode scores the one canonical solution: samples must be 1")

    @property
    def config_id(self) -> str:
        ident = {"mode": self.mode, "samples": self.samples, "identity": self.identity}
        return f"{self.mode}-{digest(ident)}"

    def describe(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "samples": self.samples,
            "identity": self.identity,
            "harness_version": HARNESS_VERSION,
            "limits": asdict(self.limits),
        }


@dataclass
class TaskOutcome:
    key: str
    n: int
    c: int
    candidates: list[Candidate]
    scores: list[SampleScore]
    generation_cached: bool
    scoring_cached: bool
    wall_s: float = 0.0

    @property
    def categories(self) -> list[str]:
        return [s.category for s in self.scores]


def _map(fn: Callable[[int], Any], count: int, workers: int) -> list[Any]:
    """``[fn(0), .., fn(count - 1)]``, ``workers`` at a time, in order."""
    if workers <= 1 or count <= 1:
        return [fn(i) for i in range(count)]
    with ThreadPoolExecutor(max_workers=min(workers, count)) as pool:
        return list(pool.map(fn, range(count)))


def generate_task(
    store: EvalStore,
    cfg: EvalConfig,
    problem: Problem,
    generator: Generator,
    workers: int = 1,
) -> tuple[list[Candidate], bool]:
    """The task's n candidates, from the cache when the prompt and configuration are unchanged."""
    fingerprint = digest([problem.prompt, problem.entry_point, cfg.config_id])
    stored = store.load_samples(cfg.config_id, problem.key)
    if stored and stored.get("fingerprint") == fingerprint:
        cached = [Candidate.from_dict(d) for d in stored["candidates"]]
        if len(cached) == cfg.samples and not any(c.status in RETRYABLE_STATUSES for c in cached):
            return cached, True
    task = public_task(problem)
    candidates = _map(lambda i: generator(task, i), cfg.samples, workers)
    store.save_config(cfg.config_id, cfg.describe())
    store.save_samples(
        cfg.config_id,
        problem.key,
        {
            "task_id": problem.task_id,
            "fingerprint": fingerprint,
            "candidates": [c.to_dict() for c in candidates],
            "generated_at": time.time(),
        },
    )
    return candidates, False


def score_task(
    store: EvalStore, cfg: EvalConfig, problem: Problem, sandbox: Sandbox, workers: int = 1
) -> tuple[list[Candidate], list[SampleScore], bool]:
    """Hidden-test verdicts for the stored candidates; cached while candidates are unchanged."""
    stored = store.load_samples(cfg.config_id, problem.key)
    if not stored:
        raise LookupError(f"{problem.key}: no generated samples to score; generate them first")
    candidates = [Candidate.from_dict(d) for d in stored["candidates"]]
    fingerprint = digest(
        [
            [c.code for c in candidates],
            problem.fingerprint,
            HARNESS_VERSION,
            asdict(cfg.limits),
        ]
    )
    existing = store.load_scores(cfg.config_id, problem.key)
    if existing and existing.get("fingerprint") == fingerprint:
        return candidates, [SampleScore.from_dict(s) for s in existing["scores"]], True
    scores = _map(
        lambda i: score_candidate(sandbox, problem, candidates[i].code, cfg.limits),
        len(candidates),
        workers,
    )
    store.save_scores(
        cfg.config_id,
        problem.key,
        {
            "task_id": problem.task_id,
            "fingerprint": fingerprint,
            "n": len(scores),
            "c": sum(s.passed for s in scores),
            "scores": [s.to_dict() for s in scores],
            "scored_at": time.time(),
        },
    )
    return candidates, scores, False


def run_task(
    store: EvalStore,
    cfg: EvalConfig,
    key: str,
    generator: Generator,
    sandbox: Sandbox,
    workers: int = 1,
) -> TaskOutcome:
    """Generate then score one task; its n samples run ``workers`` at a time."""
    start = time.perf_counter()
    problem = get_problem(key)
    _, gen_cached = generate_task(store, cfg, problem, generator, workers)
    candidates, scores, score_cached = score_task(store, cfg, problem, sandbox, workers)
    return TaskOutcome(
        key=key,
        n=len(scores),
        c=sum(s.passed for s in scores),
        candidates=candidates,
        scores=scores,
        generation_cached=gen_cached,
        scoring_cached=score_cached,
        wall_s=time.perf_counter() - start,
    )


def evaluate(
    store: EvalStore,
    cfg: EvalConfig,
    keys: Sequence[str],
    generator: Generator,
    sandbox: Sandbox,
    *,
    workers: int = 1,
    on_done: Callable[[str, TaskOutcome | None, str | None, int], None] | None = None,
) -> tuple[list[TaskOutcome], dict[str, str]]:
    """Run every task, ``workers`` at a time.

    Returns the outcomes in ``keys`` order and, per task that could not run (endpoint down,
    sandbox unavailable), the error: one broken task never discards the others' results.
    ``on_done(key, outcome, error, finished_count)`` reports progress.
    """
    outcomes: dict[str, TaskOutcome] = {}
    errors: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        # Samples of one task share the workers: n = 10 on one task still runs in parallel.
        futures = {
            pool.submit(run_task, store, cfg, k, generator, sandbox, workers): k for k in keys
        }
        for future in as_completed(futures):
            key = futures[future]
            try:
                outcomes[key] = future.result()
            except Exception as exc:
                errors[key] = f"{type(exc).__name__}: {exc}"
            if on_done:
                on_done(key, outcomes.get(key), errors.get(key), len(outcomes) + len(errors))
    return [outcomes[k] for k in keys if k in outcomes], errors
