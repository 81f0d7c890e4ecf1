"""HumanEval as partitioned assets: one static partition per task, a summary, a self-check.

    humaneval_samples    (pool "llm")      the crew's candidates for a task, from the prompt only
    humaneval_scores     (pool "sandbox")  hidden-test verdicts for those candidates
    humaneval_canonical  (pool "sandbox")  the benchmark's own solution through the same scorer
    humaneval_summary                      pass@k, failures by category, tokens, cost, plot
    check canonical_verified               blocks when canonical scoring is below 164/164
    humaneval_file_scores (pool "sandbox") a samples file's samples for a task, scored
    humaneval_file_summary                 pass@k of that samples file (`[eval] samples_file`)

Generation and scoring are separate assets so the hidden tests are never loaded in the op
that talks to the LLM, and each side gets its own concurrency pool. A backfill groups
partitions into runs (multi-run policy) and each op works on its range with a few threads.
"""

import base64
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeAlias, TypeVar

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    BackfillPolicy,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
    asset_check,
)

from codegen.assets.evaluation_session import (
    LLM_POOL,
    SANDBOX_POOL,
    eval_config,
    eval_session,
    samples_config,
)
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.evaluation.harness import (
    CANONICAL,
    CREW,
    SAMPLES,
    generate_task,
    run_samples_task,
    score_task,
)
from codegen.evaluation.humaneval import get_problem, task_keys
from codegen.evaluation.report import (
    Summary,
    history_entry,
    plot_history,
    summarize,
    summary_markdown,
)
from codegen.evaluation.samples_file import SamplesFile, read_samples
from codegen.evaluation.store import EvalStore
from codegen.settings import Settings

humaneval_partitions = StaticPartitionsDefinition(task_keys())
# 164 tasks in runs of 41: a full backfill is 4 runs (plus the summary). Each run costs an
# interpreter start and a sandbox pool start (~10 s on a busy 2-core machine); with runs of
# 16 the measured canonical backfill took 254 s for 11 runs. Progress still shows per task
# in the run logs, and per partition as each run finishes.
PARTITIONS_PER_RUN = 41
_policy = BackfillPolicy.multi_run(max_partitions_per_run=PARTITIONS_PER_RUN)


_T = TypeVar("_T")
# What these assets put in their materialization metadata.
Metadata: TypeAlias = dict[str, MetadataValue | str | int | float]


def _each(
    context: AssetExecutionContext, workers: int, fn: Callable[[str], tuple[_T, str]]
) -> list[_T]:
    """``fn`` over the run's partitions, ``workers`` at a time, logging "k/N key: note" as each
    finishes: a run holds up to 41 tasks, and its log is where the UI shows progress."""
    keys: Sequence[str] = context.partition_keys
    lock = threading.Lock()
    finished = [0]

    def step(key: str) -> _T:
        value, note = fn(key)
        with lock:
            finished[0] += 1
            context.log.info(f"{finished[0]}/{len(keys)} {key}: {note}")
        return value

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(keys)))) as pool:
        return list(pool.map(step, keys))


@asset(
    partitions_def=humaneval_partitions,
    backfill_policy=_policy,
    pool=LLM_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="Crew candidates for one HumanEval task, generated from its prompt alone.",
)
def humaneval_samples(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    cfg = settings.load()
    with eval_session(cfg, CREW, llm=llm, sandbox=sandbox, retriever=retriever) as s:

        def one(key: str) -> tuple[tuple[str, bool, list[str]], str]:
            problem = get_problem(key)
            cands, cached = generate_task(s.store, s.config, problem, s.generator, s.workers)
            statuses = [c.status for c in cands]
            note = f"{'cached' if cached else 'generated'}, crew {', '.join(statuses)}"
            return (key, cached, statuses), note

        done = _each(context, s.workers, one)
    statuses = [st for _, _, sts in done for st in sts]
    return MaterializeResult(
        metadata={
            "config_id": s.config.config_id,
            "tasks": len(done),
            "cached_tasks": sum(c for _, c, _ in done),
            "crew_statuses": MetadataValue.json({st: statuses.count(st) for st in set(statuses)}),
        }
    )


@asset(
    partitions_def=humaneval_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    deps=[humaneval_samples],
    group_name="evaluation",
    kinds={"python"},
    description="Hidden-test verdicts (in the sandbox) for one task's crew candidates.",
)
def humaneval_scores(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    cfg = settings.load()
    config = eval_config(cfg, CREW, None, llm, retriever)
    store = EvalStore(cfg.eval_dir)
    with sandbox.open() as box:

        def one(key: str) -> tuple[tuple[int, int, bool], str]:
            _, scores, cached = score_task(store, config, get_problem(key), box, cfg.eval.workers)
            passed = sum(sc.passed for sc in scores)
            return (passed, len(scores), cached), f"{passed}/{len(scores)} passed"

        done = _each(context, cfg.eval.workers, one)
    return MaterializeResult(
        metadata={
            "config_id": config.config_id,
            "passed_samples": sum(p for p, _, _ in done),
            "samples": sum(n for _, n, _ in done),
            "cached_tasks": sum(c for _, _, c in done),
        }
    )


@asset(
    partitions_def=humaneval_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="The task's canonical solution scored through the same sandbox path.",
)
def humaneval_canonical(
    context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> MaterializeResult:
    cfg = settings.load()
    with eval_session(cfg, CANONICAL, sandbox=sandbox) as s:

        def one(key: str) -> tuple[tuple[str, bool, str], str]:
            problem = get_problem(key)
            generate_task(s.store, s.config, problem, s.generator)
            _, scores, _ = score_task(s.store, s.config, problem, s.sandbox)
            return (key, scores[0].passed, scores[0].message), scores[0].category

        done = _each(context, s.workers, one)
    failed = {k: msg for k, ok, msg in done if not ok}
    return MaterializeResult(
        metadata={
            "passed": len(done) - len(failed),
            "tasks": len(done),
            "failed": MetadataValue.json(failed),
        }
    )


def _failures_table(summary: Summary) -> MetadataValue:
    schema = TableSchema(
        columns=[
            TableColumn("category", "string"),
            TableColumn("samples", "int"),
            TableColumn("tasks", "string"),
        ]
    )
    records = []
    for category, count in summary.failures_by_category.items():
        tasks = [r.key for r in summary.rows if r.categories.get(category)]
        shown = ", ".join(tasks[:20]) + (" …" if len(tasks) > 20 else "")
        records.append(TableRecord({"category": category, "samples": count, "tasks": shown}))
    return MetadataValue.table(records=records, schema=schema)


def _tasks_table(summary: Summary) -> MetadataValue:
    """One row per scored task: the per-task outcomes behind the pass@k."""
    schema = TableSchema(
        columns=[
            TableColumn("task", "string"),
            TableColumn("passed", "int"),
            TableColumn("n", "int"),
            TableColumn("failures", "string"),
            TableColumn("crew", "string"),
            TableColumn("tokens", "int"),
            TableColumn("cost_usd", "string"),
            TableColumn("latency_s", "float"),
        ]
    )
    records = [
        TableRecord(
            {
                "task": r.key,
                "passed": r.c,
                "n": r.n,
                "failures": ", ".join(f"{k} {v}" for k, v in sorted(r.categories.items())),
                "crew": ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items())),
                "tokens": r.tokens,
                "cost_usd": "unknown" if r.cost_usd is None else f"{r.cost_usd:.6f}",
                "latency_s": r.latency_s,
            }
        )
        for r in summary.rows
    ]
    return MetadataValue.table(records=records, schema=schema)


@asset(
    deps=[humaneval_scores, humaneval_canonical],
    group_name="evaluation",
    kinds={"python"},
    description="Unbiased pass@k over every scored task, failures by category, tokens and cost.",
)
def humaneval_summary(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    cfg = settings.load()
    store = EvalStore(cfg.eval_dir)
    keys = task_keys()
    crew_cfg = eval_config(cfg, CREW, None, llm, retriever)
    canon_cfg = eval_config(cfg, CANONICAL, None)
    crew = summarize(store, crew_cfg.config_id, CREW, keys)
    canon = summarize(store, canon_cfg.config_id, CANONICAL, keys)
    metadata: Metadata = {
        "canonical_passed": canon.passed_samples,
        "canonical_scored": canon.tasks_scored,
        "crew_config_id": crew_cfg.config_id,
        "crew_tasks_scored": crew.tasks_scored,
        "crew_tokens": crew.prompt_tokens + crew.completion_tokens,
        "crew_cost_usd": MetadataValue.float(crew.cost_usd)
        if crew.cost_usd is not None
        else MetadataValue.text("unknown"),
        "failures_by_category": _failures_table(crew),
        "tasks": _tasks_table(crew),
        "summary": MetadataValue.json(crew.to_dict(with_rows=False)),
    }
    if crew.precision is not None and crew.precision.precision is not None:
        # How far the crew's own `passed` can be trusted against the hidden tests.
        metadata["precision_of_passed"] = crew.precision.precision
    if crew.precision is not None and crew.precision.recall is not None:
        metadata["recall_of_passed"] = crew.precision.recall
    for name, value in crew.pass_at_k.items():
        metadata[name] = value
    text = summary_markdown(crew) + "\n\n" + summary_markdown(canon)
    if crew.tasks_scored:
        if not crew.crew_statuses.get("error"):  # an outage is not a data point
            label = str(crew_cfg.identity["default"]["model"])
            store.append_history(history_entry(crew, label=label))
        plot = plot_history([e for e in store.history() if e["mode"] == CREW], store.plot_path)
        encoded = base64.b64encode(plot.read_bytes()).decode()
        text += f"\n\n![pass@1 and cost per solved task](data:image/png;base64,{encoded})"
        metadata["plot"] = MetadataValue.path(str(plot))
    metadata["report"] = MetadataValue.md(text)
    context.log.info(f"crew {crew.pass_at_k or 'not run'}; canonical {canon.passed_samples}/164")
    return MaterializeResult(metadata=metadata)


# Not blocking: a crew backfill run before the canonical one must still record its summary;
# the failed check (severity ERROR) is what marks the harness as untrusted in the UI.
@asset_check(asset=humaneval_summary, description="Canonical solutions: 164/164.")
def canonical_verified(
    context: AssetCheckExecutionContext, settings: SettingsResource
) -> AssetCheckResult:
    # Every canonical solution must pass through the scoring path; anything less means the
    # harness (sandbox, driver, classification) is broken and no crew score can be trusted.
    cfg = settings.load()
    keys = task_keys()
    canon = summarize(
        EvalStore(cfg.eval_dir), eval_config(cfg, CANONICAL, None).config_id, CANONICAL, keys
    )
    failing = [r.key for r in canon.rows if r.c < r.n]
    return AssetCheckResult(
        passed=canon.passed_samples == len(keys) and not canon.missing,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "passed": canon.passed_samples,
            "expected": len(keys),
            "not_scored": len(canon.missing),
            "failing": MetadataValue.json(failing[:50]),
        },
    )


def _samples_file(cfg: Settings) -> SamplesFile:
    if not cfg.eval.samples_file:
        raise ValueError(
            "no samples file configured: set [eval] samples_file (CODEGEN_EVAL__SAMPLES_FILE) "
            "or run `codegen eval humaneval --samples-file FILE --backfill`"
        )
    return read_samples(cfg.eval.samples_file)


@asset(
    partitions_def=humaneval_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="A samples file's samples for one task (`[eval] samples_file`), scored in the "
    "sandbox through the same scorer and per-sample cache as `--samples-file`.",
)
def humaneval_file_scores(
    context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> MaterializeResult:
    cfg = settings.load()
    samples = _samples_file(cfg)
    config = samples_config(cfg, samples)
    store = EvalStore(cfg.eval_dir)
    absent = [k for k in context.partition_keys if k not in samples.modules]
    if absent:
        raise ValueError(f"the samples file has no samples for {', '.join(absent[:5])}")
    with sandbox.open() as box:

        def one(key: str) -> tuple[tuple[int, int], str]:
            outcome = run_samples_task(
                store, config, key, samples.modules[key], box, cfg.eval.workers
            )
            return (outcome.c, outcome.n), f"{outcome.c}/{outcome.n} passed"

        done = _each(context, cfg.eval.workers, one)
    return MaterializeResult(
        metadata={
            "config_id": config.config_id,
            "samples_file": str(samples.path),
            "passed_samples": sum(c for c, _ in done),
            "samples": sum(n for _, n in done),
        }
    )


@asset(
    deps=[humaneval_file_scores],
    group_name="evaluation",
    kinds={"python"},
    description="Unbiased pass@k of the configured samples file over the tasks it holds.",
)
def humaneval_file_summary(
    context: AssetExecutionContext, settings: SettingsResource
) -> MaterializeResult:
    cfg = settings.load()
    samples = _samples_file(cfg)
    config = samples_config(cfg, samples)
    summary = summarize(EvalStore(cfg.eval_dir), config.config_id, SAMPLES, list(samples.modules))
    metadata: Metadata = {
        "config_id": config.config_id,
        "samples_file": str(samples.path),
        "tasks_in_file": len(samples.modules),
        "tasks_scored": summary.tasks_scored,
        "tasks_not_in_file": len(samples.missing()),
        "solved_tasks": summary.solved_tasks,
        "failures_by_category": _failures_table(summary),
        "tasks": _tasks_table(summary),
        "summary": MetadataValue.json(summary.to_dict(with_rows=False)),
        "report": MetadataValue.md(summary_markdown(summary)),
    }
    for name, value in summary.pass_at_k.items():
        metadata[name] = value
    context.log.info(f"samples file {samples.path}: {summary.pass_at_k or 'nothing scored'}")
    return MaterializeResult(metadata=metadata)


@asset(
    group_name="evaluation",
    kinds={"python"},
    description="Every stored evaluation run as one table, and pass@1 per configuration.",
)
def evaluation_runs(settings: SettingsResource) -> MaterializeResult:
    from codegen.evaluation.runs import plot_runs, run_rows, runs_markdown

    store = EvalStore(settings.load().eval_dir)
    rows = run_rows(store)
    text = runs_markdown(rows)
    metadata: Metadata = {"runs": len(rows)}
    if rows:
        plot = plot_runs(rows, store.root / "runs.png")
        encoded = base64.b64encode(plot.read_bytes()).decode()
        text += f"\n\n![pass@1 per configuration](data:image/png;base64,{encoded})"
        metadata["plot"] = MetadataValue.path(str(plot))
    metadata["table"] = MetadataValue.md(text)
    return MaterializeResult(metadata=metadata)
