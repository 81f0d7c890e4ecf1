"""Evaluation wiring on the orchestration side: each registered benchmark's jobs, and the
session the CLI and the benchmark scripts drive, built from settings through the same
resources the assets get (codegen/evaluation/session/ is the session itself)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from codegen.orchestration.instance import KIND_EVALUATION, kind_tags

if TYPE_CHECKING:
    from codegen.assets.resources import LLMResource, RetrieverResource, SandboxResource
    from codegen.evaluation.benchmarks import Benchmark
    from codegen.evaluation.harness import EvalConfig, Progress, TaskOutcome
    from codegen.evaluation.samples_file import SamplesFile
    from codegen.evaluation.session import EvalSession
    from codegen.evaluation.tasks import TaskSet
    from codegen.orchestration.dagster_private import UnresolvedAssetJobDefinition
    from codegen.sandbox.api import Sandbox
    from codegen.settings import Settings


def eval_jobs(benchmarks: Sequence[Benchmark]) -> list[UnresolvedAssetJobDefinition]:
    """Partitioned jobs per registered benchmark, for the launchpad and job backfills (by
    asset name). The unpartitioned summary is materialized on its own afterwards, or in the
    same asset backfill when launched from the asset graph."""
    from dagster import AssetSelection, define_asset_job

    jobs = []
    for b in benchmarks:
        title = b.title or b.name
        for job, assets, what in (
            ("crew", ("samples", "scores"), f"The crew on {title} tasks, then scoring."),
            ("canonical", ("canonical",), "The canonical solutions through the scoring path."),
            ("summary", ("summary",), "pass@k, failures by category, cost."),
        ):
            jobs.append(
                define_asset_job(
                    f"{b.name}_{job}_job",
                    selection=AssetSelection.assets(*(f"{b.name}_{a}" for a in assets)),
                    description=what,
                    tags=kind_tags(KIND_EVALUATION),
                )
            )
    return jobs


def sandbox_resource(settings: Settings) -> SandboxResource:
    from codegen.assets.resources import SandboxResource

    return SandboxResource.from_settings(settings)


def eval_config(
    settings: Settings,
    mode: str,
    samples: int | None,
    llm: LLMResource | None = None,
    retriever: RetrieverResource | None = None,
    tasks: TaskSet | None = None,
) -> EvalConfig:
    """The configuration (and cache key) of a run over ``tasks`` (default HumanEval), the
    resources defaulting to those the backfill's runs get; calls no endpoint."""
    return open_session(settings, tasks, mode, samples, llm=llm, retriever=retriever).config


def open_session(
    settings: Settings,
    tasks: TaskSet | None,
    mode: str,
    samples: int | None = None,
    *,
    samples_file: SamplesFile | None = None,
    llm: LLMResource | None = None,
    retriever: RetrieverResource | None = None,
    record_to: Path | None = None,
) -> EvalSession:
    """The session of ``tasks`` in ``mode``: the crew on the index the backfill's crew
    searches, so both paths are the same crew (and the same cache); ``record_to``: its crew
    records to that file (``--record``)."""
    from codegen.assets.resources import LLMResource, VectorIndexResource
    from codegen.composition import eval_setup
    from codegen.evaluation.benchmarks import benchmark_of
    from codegen.evaluation.harness import CREW
    from codegen.evaluation.session import EvalSession
    from codegen.evaluation.tasks import humaneval_tasks

    crew = mode == CREW and samples_file is None
    registered = benchmark_of(samples_file.tasks if samples_file else tasks or humaneval_tasks())
    return EvalSession(
        eval_setup(settings),
        tasks,
        mode,
        samples=samples,
        llm=(llm or LLMResource.from_settings(settings)) if crew else None,
        retriever=(retriever or VectorIndexResource.for_crew(settings)) if crew else None,
        samples_file=samples_file,
        references_pass=registered is not None and registered.references_pass,
        record_to=record_to,
    )


def score_samples_file(
    settings: Settings,
    samples: SamplesFile,
    sandbox: Sandbox,
    on_done: Progress | None = None,
) -> tuple[EvalConfig, list[TaskOutcome], dict[str, str]]:
    """A validated samples file scored as ``--samples-file`` scores it (benchmark scripts)."""
    from codegen.composition import eval_setup
    from codegen.evaluation import session

    return session.score_samples_file(eval_setup(settings), samples, sandbox, on_done)
