"""Wiring for HumanEval runs, shared by the evaluation assets, the CLI and the benchmark
scripts: the evaluation configuration (and so its cache key), the generator and the sandbox,
built from the platform's resources. Plain functions over the resources, no Dagster
definitions: the jobs live in codegen/orchestration/evaluation.py, the backfills in
codegen/orchestration/backfill.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    VectorIndexResource,
)
from codegen.composition import sandbox_limits
from codegen.evaluation.harness import (
    CANONICAL,
    SAMPLES,
    EvalConfig,
    Generator,
    Progress,
    TaskOutcome,
    canonical_generator,
    evaluate_samples,
)
from codegen.evaluation.samples_file import SamplesFile
from codegen.evaluation.store import EvalStore
from codegen.evaluation.tasks import TaskSet
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits
from codegen.settings import Settings

LLM_POOL = "llm"
SANDBOX_POOL = "sandbox"
# The dynamic partitions of task files' tasks: "<task set digest>:<task key>".
TASK_SET_PARTITIONS = "task_set_tasks"
# Run tags of a `codegen eval ... --backfill`, read by the evaluation assets: the staged task
# set and samples file (their digests), the mode, and who appends the run to the history
# ("summary": the summary asset, for --submit-only; "cli": the CLI that drives and reports).
TASK_SET_TAG = "codegen/task_set"
SAMPLES_FILE_TAG = "codegen/samples_file"
MODE_TAG = "codegen/eval_mode"
HISTORY_TAG = "codegen/eval_history"
HISTORY_BY_SUMMARY = "summary"
HISTORY_BY_CLI = "cli"


@dataclass
class EvalSession:
    store: EvalStore
    config: EvalConfig
    generator: Generator
    sandbox: Sandbox
    workers: int


def scoring_limits(settings: Settings) -> Limits:
    return sandbox_limits(
        settings.sandbox, timeout_s=settings.eval.timeout_s, memory_mb=settings.eval.memory_mb
    )


def eval_config(
    settings: Settings,
    mode: str,
    samples: int | None,
    llm: LLMResource | None = None,
    retriever: RetrieverResource | None = None,
    tasks: TaskSet | None = None,
) -> EvalConfig:
    """The configuration (and so the cache key) of a run over ``tasks`` (default HumanEval);
    building it calls no endpoint."""
    limits = scoring_limits(settings)
    of_set = tasks.identity() if tasks else {}
    if mode == CANONICAL:
        return EvalConfig(mode=CANONICAL, samples=1, limits=limits, identity=of_set)
    from codegen.evaluation.crew_generator import crew_identity

    llm = llm or LLMResource.from_settings(settings)
    retriever = retriever or VectorIndexResource.for_crew(settings)
    identity = {
        **crew_identity(llm.client(history=False), llm.crew_options(), retriever.identity()),
        **of_set,
    }
    return EvalConfig(
        mode=mode, samples=samples or settings.eval.samples, limits=limits, identity=identity
    )


def samples_config(settings: Settings, samples: SamplesFile) -> EvalConfig:
    """A samples file's configuration: its bytes' digest (so an edited file is a new
    configuration, while its unchanged samples still hit the per-sample verdict cache)."""
    return EvalConfig(
        mode=SAMPLES,
        samples=max(len(m) for m in samples.modules.values()),
        limits=scoring_limits(settings),
        identity={"samples_file": samples.digest[:16], **samples.tasks.identity()},
    )


def score_samples_file(
    settings: Settings,
    samples: SamplesFile,
    sandbox: Sandbox,
    on_done: Progress | None = None,
) -> tuple[EvalConfig, list[TaskOutcome], dict[str, str]]:
    """Score a validated samples file (``--samples-file``, benchmarks): same store, scorer
    and per-sample cache as the crew and canonical modes, ``[eval] workers`` at a time."""
    config = samples_config(settings, samples)
    outcomes, errors = evaluate_samples(
        EvalStore(settings.eval_dir),
        config,
        samples.modules,
        sandbox,
        workers=max(1, settings.eval.workers),
        on_done=on_done,
        tasks=samples.tasks,
    )
    return config, outcomes, errors


@contextmanager
def eval_session(
    settings: Settings,
    mode: str,
    samples: int | None = None,
    *,
    llm: LLMResource | None = None,
    sandbox: SandboxResource | None = None,
    retriever: RetrieverResource | None = None,
    tasks: TaskSet | None = None,
) -> Iterator[EvalSession]:
    """Everything a run over ``tasks`` (default HumanEval) needs; resources default to those
    built from ``settings``."""
    llm = llm or LLMResource.from_settings(settings)
    sandbox = sandbox or SandboxResource.from_settings(settings)
    # The index the backfill's crew searches, so both paths are the same crew.
    retriever = retriever or VectorIndexResource.for_crew(settings)
    cfg = eval_config(settings, mode, samples, llm, retriever, tasks)
    with sandbox.open() as box:
        if mode == CANONICAL:
            generator: Generator = canonical_generator(tasks)
        else:
            from codegen.evaluation.crew_generator import crew_generator

            options = llm.crew_options({"limits": sandbox.limits()})
            found = retriever.get_retriever()
            generator = crew_generator(llm.client(history=False), box, options, found)
        yield EvalSession(
            store=EvalStore(settings.eval_dir),
            config=cfg,
            generator=generator,
            sandbox=box,
            workers=max(1, settings.eval.workers),
        )
