"""Benchmarks as partitioned assets, one family per task set, built by one factory.

Each family has the same assets, named ``<prefix>_<asset>``:

    <prefix>_samples      (pool "llm")      crew candidates, prompt and visible examples only
    <prefix>_scores       (pool "sandbox")  hidden-test verdicts
    <prefix>_canonical    (pool "sandbox")  the reference solution, scored
    <prefix>_summary                        pass@k, failures, cost, plot
    <prefix>_file_scores  (pool "sandbox")  a samples file's samples
    <prefix>_file_summary                   pass@k of that samples file

A registered benchmark (codegen/evaluation/benchmarks.py: HumanEval, or one named in
``[eval] benchmarks``) is a family with one static partition per task, and, when its
references all pass, the check ``canonical_verified`` on its summary. Task files
(``codegen eval tasks FILE``, ``mbpp --tasks FILE``, ``humaneval --plus FILE``) share the
``task_set`` family: dynamic partitions ``<set digest>:<task>`` read from the set's staged
copy, whose summaries summarize the set their backfill's run tag ``codegen/task_set`` names.
Every body drives an ``EvalSession`` (codegen/evaluation/session/), as the CLI does.
Generation and scoring are separate assets so the hidden tests are never loaded in the op
that talks to the LLM, and each side gets its own concurrency pool.
"""

from collections.abc import Sequence

from dagster import (
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetsDefinition,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
)

from codegen.assets.evaluation_family import Family, canonical_check, family_assets
from codegen.assets.resources import SettingsResource
from codegen.evaluation.benchmarks import TASK_FILES, Benchmark
from codegen.evaluation.session import TASK_SET_PARTITIONS, TASK_SET_TAG
from codegen.evaluation.staged import StagedFiles
from codegen.evaluation.store import EvalStore
from codegen.evaluation.tasks import TaskSet
from codegen.settings import Settings

# A task file's tasks, "<set digest>:<task key>": added by `codegen eval ... --backfill`.
task_set_partitions = DynamicPartitionsDefinition(name=TASK_SET_PARTITIONS)


def benchmark_family(benchmark: Benchmark) -> Family:
    """A registered benchmark: its tasks are static partitions keyed by task key."""

    def locate(cfg: Settings, partition: str) -> tuple[TaskSet, str]:
        found = benchmark.tasks()
        found.get(partition)  # validates
        return found, partition

    tasks = benchmark.tasks()
    return Family(
        prefix=benchmark.name,
        title=benchmark.title or tasks.name,
        partitions=StaticPartitionsDefinition(tasks.keys()),
        locate=locate,
        summary_set=lambda context, cfg: benchmark.tasks(),
        staged=False,
        references_pass=benchmark.references_pass,
    )


def _tagged_task_set(context: AssetExecutionContext, cfg: Settings) -> TaskSet:
    """The task set a summary run is about: its backfill's run tag names the staged set."""
    staged = StagedFiles(cfg.eval_dir)
    digest = context.run.tags.get(TASK_SET_TAG)
    if not digest:
        known = ", ".join(f"{d} ({staged.task_set(d).name})" for d in staged.task_set_digests())
        raise ValueError(
            f"no task set named: launch {context.asset_key.to_user_string()} with the run tag "
            f"{TASK_SET_TAG}=<digest> (`codegen eval tasks FILE --backfill` sets it); staged: "
            f"{known or 'none'}"
        )
    return staged.task_set(digest)


TASK_FILE_FAMILY = Family(
    prefix=TASK_FILES,
    title="a task file",
    partitions=task_set_partitions,
    locate=lambda cfg, partition: StagedFiles(cfg.eval_dir).locate(partition),
    summary_set=_tagged_task_set,
    staged=True,
)


def evaluation_family(family: Family) -> list[AssetsDefinition | AssetChecksDefinition]:
    """The six assets of ``family`` (and its self-check)."""
    built: list[AssetsDefinition | AssetChecksDefinition] = list(family_assets(family))
    if family.references_pass:
        built.append(canonical_check(family))
    return built


def evaluation_definitions(
    benchmarks: Sequence[Benchmark],
) -> list[AssetsDefinition | AssetChecksDefinition]:
    """Every evaluation asset: each registered benchmark's family, the task files' family,
    and the table of stored runs."""
    built = [d for b in benchmarks for d in evaluation_family(benchmark_family(b))]
    return [*built, *evaluation_family(TASK_FILE_FAMILY), evaluation_runs]


def _evaluation_runs(settings: SettingsResource) -> MaterializeResult:
    from codegen.assets.evaluation_metadata import Metadata, inline_plot
    from codegen.evaluation.store import plot_runs, run_rows, runs_markdown

    store = EvalStore(settings.load().eval_dir)
    rows = run_rows(store)
    text = runs_markdown(rows)
    metadata: Metadata = {"runs": len(rows)}
    if rows:
        plot = plot_runs(rows, store.root / "runs.png")
        text += inline_plot(plot, "pass@1 per configuration")
        metadata["plot"] = MetadataValue.path(str(plot))
    metadata["table"] = MetadataValue.md(text)
    return MaterializeResult(metadata=metadata)


def _runs_asset() -> AssetsDefinition:
    from dagster import asset

    @asset(
        name="evaluation_runs",
        group_name="evaluation",
        kinds={"python"},
        description="Every stored evaluation run as one table, and pass@1 per configuration.",
    )
    def evaluation_runs(settings: SettingsResource) -> MaterializeResult:
        return _evaluation_runs(settings)

    return evaluation_runs


evaluation_runs = _runs_asset()
