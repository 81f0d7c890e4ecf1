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
from typing import TypeVar, cast

from codegen.evaluation import scoring
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.plus import SCORING_VERSION, expected_outputs, score_plus
from codegen.evaluation.scoring import MAX_BATCH, SampleScore, ScoreDict, score_candidates
from codegen.evaluation.shapes import shape_of
from codegen.evaluation.store import Candidate, ConfigDoc, EvalStore, digest
from codegen.evaluation.tasks import TaskSet, humaneval_tasks
from codegen.json_types import JSONObject
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

CANONICAL = "canonical"
CREW = "crew"
SAMPLES = "samples"  # generations made elsewhere, read from a samples file
MODES = (CANONICAL, CREW, SAMPLES)


@dataclass(frozen=True)
class PublicTask:
    """Everything a generator may see of a problem: no hidden test, no canonical solution."""

    key: str
    entry_point: str
    prompt: str
    request: str
    task_id: str = ""  # the benchmark's own id (a replay recording is keyed by it)


def public_task(problem: Problem) -> PublicTask:
    request = shape_of(problem).request(problem)
    return PublicTask(problem.key, problem.entry_point, problem.prompt, request, problem.task_id)


# (task, sample index) -> Candidate. Exceptions mean "could not run" and fail the task.
Generator = Callable[[PublicTask, int], Candidate]


def canonical_generator(tasks: TaskSet | None = None) -> Generator:
    """The benchmark's own solutions (looked up in the set, never passed through a
    PublicTask)."""
    found = tasks or humaneval_tasks()

    def generate(task: PublicTask, index: int) -> Candidate:
        return Candidate(code=found.get(task.key).canonical_module(), status=CANONICAL)

    return generate


SAMPLE_STATUS = "sample"  # a candidate read from a samples file

# Crew statuses that say "an outage stopped it" (endpoint down, any HTTP error but a replay's
# unrecorded turn, sandbox down) rather than "this is the model's answer": such a task is
# neither scored nor cached (GenerationOutage), so a re-run retries it. A model's own failures
# (no_code, unrecorded, failed_tests, rejected, budget_exceeded) are scores: cached.
RETRYABLE_STATUSES = frozenset({"error"})


class GenerationOutage(RuntimeError):
    """A sample ended with an outage: the task stays unscored and nothing of it is stored."""


@dataclass
class EvalConfig:
    mode: str
    samples: int = 1
    limits: Limits = field(default_factory=lambda: Limits(timeout_s=10.0))
    # What identifies the generator (models, temperatures, rounds, prompt versions); part of
    # the cache key. Must never hold a secret: it is stored in config.json.
    identity: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.samples < 1:
            raise ValueError(f"samples must be at least 1, got {self.samples}")
        if self.mode == SAMPLES and "samples_file" not in self.identity:
            raise ValueError("samples mode needs the samples file's digest in its identity")
        if self.mode == CANONICAL and self.samples != 1:
            raise ValueError("canonical mode scores the one canonical solution: samples must be 1")

    @property
    def config_id(self) -> str:
        ident = {"mode": self.mode, "samples": self.samples, "identity": self.identity}
        return f"{self.mode}-{digest(ident)}"

    def describe(self) -> ConfigDoc:
        return {
            "mode": self.mode,
            "samples": self.samples,
            "identity": self.identity,
            "harness_version": scoring.HARNESS_VERSION,
            "limits": cast(JSONObject, asdict(self.limits)),
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


_T = TypeVar("_T")


def _map(fn: Callable[[int], _T], count: int, workers: int) -> list[_T]:
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
    *,
    fresh: bool = False,
) -> tuple[list[Candidate], bool]:
    """The task's n candidates, from the cache when the prompt and configuration are unchanged;
    ``fresh`` (``--record``): generated again whatever is stored, then stored."""
    fingerprint = digest([problem.prompt, problem.entry_point, cfg.config_id])
    stored = None if fresh else store.load_samples(cfg.config_id, problem.key)
    if stored and stored.get("fingerprint") == fingerprint:
        cached = [Candidate.from_dict(d) for d in stored["candidates"]]
        if len(cached) == cfg.samples and not any(c.status in RETRYABLE_STATUSES for c in cached):
            return cached, True
    task = public_task(problem)
    candidates = _map(lambda i: generator(task, i), cfg.samples, workers)
    outages = [c for c in candidates if c.status in RETRYABLE_STATUSES]
    if outages:
        raise GenerationOutage(
            f"{len(outages)} of {len(candidates)} samples ended with crew status "
            f"{outages[0].status}: {outages[0].reason}"
        )
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


def verdict_key(problem: Problem, code: str | None, limits: Limits, environment: str) -> str:
    """What decides one sample's verdict: its code, the problem, the harness, the limits and
    the sandbox's environment (its package set: a verdict reached without numpy is not one
    with it)."""
    return digest([code, problem.fingerprint, harness_id(problem), asdict(limits), environment])


def harness_id(problem: Problem) -> str:
    """The scorer's version for ``problem``: the hidden-test harness's, and for HumanEval+
    tasks (a shape with a scorer of its own, ClassEval's) the plus (the shape's) scoring's too."""
    shape = shape_of(problem)
    if shape.scoring_version:
        return f"{scoring.HARNESS_VERSION}+{shape.name}-{shape.scoring_version}"
    if problem.plus is None:
        return scoring.HARNESS_VERSION
    return f"{scoring.HARNESS_VERSION}+plus-{SCORING_VERSION}"


def score_samples(
    store: EvalStore,
    problem: Problem,
    codes: Sequence[str | None],
    sandbox: Sandbox,
    limits: Limits,
    workers: int = 1,
) -> list[SampleScore]:
    """Verdicts for ``codes``, each cached on its own (a re-run, or another configuration or
    samples file holding the same sample, runs only what it has not seen; a verdict decided
    by the time limit or ``cannot_isolate`` is never cached: ``SampleScore.cacheable``); the
    rest run in batches, ``workers`` batches at a time."""
    keys = [verdict_key(problem, code, limits, sandbox.environment) for code in codes]
    known: dict[str, SampleScore] = {}
    for key in set(keys):
        stored = store.load_verdict(key)
        if stored is not None:
            score = SampleScore.from_dict(cast(ScoreDict, stored))
            if score.cacheable:  # one stored before these were left out: decided again
                known[key] = score
    todo: dict[str, str | None] = {}  # identical samples run once
    for key, code in zip(keys, codes, strict=True):
        if key not in known:
            todo.setdefault(key, code)
    if todo:
        pending = list(todo.items())
        size = max(1, min(MAX_BATCH, -(-len(pending) // max(1, workers))))
        chunks = [pending[i : i + size] for i in range(0, len(pending), size)]

        def run_chunk(index: int) -> list[SampleScore]:
            chunk = chunks[index]
            shape = shape_of(problem)
            if shape.score is not None:  # a shape's own scorer (ClassEval: per unittest class)
                return shape.score(sandbox, problem, [c for _, c in chunk], limits)
            if problem.plus is not None:  # HumanEval+: EvalPlus's inputs and comparison
                expected = expected_outputs(store, sandbox, problem, limits)
                return [score_plus(sandbox, problem, c, expected, limits) for _, c in chunk]
            return score_candidates(sandbox, problem, [c for _, c in chunk], limits, size)

        for chunk, scores in zip(chunks, _map(run_chunk, len(chunks), workers), strict=True):
            for (key, _), score in zip(chunk, scores, strict=True):
                known[key] = score
                if score.cacheable:
                    store.save_verdict(key, score.to_dict())
    return [known[key] for key in keys]


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
            harness_id(problem),
            asdict(cfg.limits),
        ]
    )
    existing = store.load_scores(cfg.config_id, problem.key)
    if existing and existing.get("fingerprint") == fingerprint:
        cached = [SampleScore.from_dict(s) for s in existing["scores"]]
        if all(s.cacheable for s in cached):  # a timeout is scored again (score_samples)
            return candidates, cached, True
    scores = score_samples(
        store, problem, [c.code for c in candidates], sandbox, cfg.limits, workers
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


def stage_samples(store: EvalStore, cfg: EvalConfig, problem: Problem, modules: list[str]) -> bool:
    """Store a samples file's modules for one task as its candidates; True when unchanged."""
    fingerprint = digest([modules, problem.fingerprint, cfg.config_id])
    stored = store.load_samples(cfg.config_id, problem.key)
    if stored and stored.get("fingerprint") == fingerprint:
        return True
    store.save_config(cfg.config_id, cfg.describe())
    store.save_samples(
        cfg.config_id,
        problem.key,
        {
            "task_id": problem.task_id,
            "fingerprint": fingerprint,
            "candidates": [Candidate(code=m, status=SAMPLE_STATUS).to_dict() for m in modules],
            "generated_at": time.time(),
        },
    )
    return False


def run_samples_task(
    store: EvalStore,
    cfg: EvalConfig,
    key: str,
    modules: list[str],
    sandbox: Sandbox,
    workers: int = 1,
    tasks: TaskSet | None = None,
) -> TaskOutcome:
    """Stage then score one task of a samples file."""
    start = time.perf_counter()
    problem = (tasks or humaneval_tasks()).get(key)
    staged = stage_samples(store, cfg, problem, modules)
    return _scored_outcome(store, cfg, key, problem, sandbox, workers, start, staged)


def run_task(
    store: EvalStore,
    cfg: EvalConfig,
    key: str,
    generator: Generator,
    sandbox: Sandbox,
    workers: int = 1,
    tasks: TaskSet | None = None,
    *,
    fresh: bool = False,
) -> TaskOutcome:
    """Generate (``fresh``: whatever is stored) then score one task; its n samples run
    ``workers`` at a time."""
    start = time.perf_counter()
    problem = (tasks or humaneval_tasks()).get(key)
    _, gen_cached = generate_task(store, cfg, problem, generator, workers, fresh=fresh)
    return _scored_outcome(store, cfg, key, problem, sandbox, workers, start, gen_cached)


def _scored_outcome(
    store: EvalStore,
    cfg: EvalConfig,
    key: str,
    problem: Problem,
    sandbox: Sandbox,
    workers: int,
    start: float,
    generation_cached: bool,
) -> TaskOutcome:
    """Score a task's staged samples: the one ending both the crew and the samples-file paths."""
    candidates, scores, score_cached = score_task(store, cfg, problem, sandbox, workers)
    return TaskOutcome(
        key=key,
        n=len(scores),
        c=sum(s.passed for s in scores),
        candidates=candidates,
        scores=scores,
        generation_cached=generation_cached,
        scoring_cached=score_cached,
        wall_s=time.perf_counter() - start,
    )


Progress = Callable[[str, "TaskOutcome | None", "str | None", int], None]


def _each_task(
    keys: Sequence[str],
    run: Callable[[str], TaskOutcome],
    workers: int,
    on_done: Progress | None,
) -> tuple[list[TaskOutcome], dict[str, str]]:
    outcomes: dict[str, TaskOutcome] = {}
    errors: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(run, k): k for k in keys}
        for future in as_completed(futures):
            key = futures[future]
            try:
                outcomes[key] = future.result()
            except Exception as exc:
                errors[key] = f"{type(exc).__name__}: {exc}"
            if on_done:
                on_done(key, outcomes.get(key), errors.get(key), len(outcomes) + len(errors))
    return [outcomes[k] for k in keys if k in outcomes], errors


def evaluate(
    store: EvalStore,
    cfg: EvalConfig,
    keys: Sequence[str],
    generator: Generator,
    sandbox: Sandbox,
    *,
    workers: int = 1,
    on_done: Progress | None = None,
    tasks: TaskSet | None = None,
    fresh: bool = False,
) -> tuple[list[TaskOutcome], dict[str, str]]:
    """Run every task of ``tasks`` (default HumanEval) named in ``keys``, ``workers`` at a
    time (``fresh``: generating every task again, stored candidates or not).

    Returns the outcomes in ``keys`` order and, per task that could not run (endpoint down,
    sandbox unavailable), the error: one broken task never discards the others' results.
    ``on_done(key, outcome, error, finished_count)`` reports progress.
    """
    # Samples of one task share the workers: n = 10 on one task still runs in parallel.
    return _each_task(
        keys,
        lambda k: run_task(store, cfg, k, generator, sandbox, workers, tasks, fresh=fresh),
        workers,
        on_done,
    )


def evaluate_samples(
    store: EvalStore,
    cfg: EvalConfig,
    modules: dict[str, list[str]],
    sandbox: Sandbox,
    *,
    workers: int = 1,
    on_done: Progress | None = None,
    tasks: TaskSet | None = None,
) -> tuple[list[TaskOutcome], dict[str, str]]:
    """Score a samples file's modules (task key -> n modules) like ``evaluate`` scores a
    generator's: same store, same scorer, same per-sample cache."""
    return _each_task(
        list(modules),
        lambda k: run_samples_task(store, cfg, k, modules[k], sandbox, workers, tasks),
        workers,
        on_done,
    )
