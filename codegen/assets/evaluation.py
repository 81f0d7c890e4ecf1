"""Benchmarks as partitioned assets: one partition per task, a summary, a self-check.

HumanEval's 164 tasks are static partitions; a task file's tasks (``codegen eval tasks FILE``,
``mbpp --tasks FILE``, ``humaneval --plus FILE``) are dynamic partitions of
``task_set_tasks`` keyed ``<set digest>:<task>``, read from the set's staged copy
(codegen/evaluation/staged.py). The same bodies serve both:

    humaneval_samples    task_set_samples    (pool "llm")      crew candidates, prompt only
    humaneval_scores     task_set_scores     (pool "sandbox")  hidden-test verdicts
    humaneval_canonical  task_set_canonical  (pool "sandbox")  the reference solution, scored
    humaneval_summary    task_set_summary                      pass@k, failures, cost, plot
    check canonical_verified                                   HumanEval: blocks below 164/164
    humaneval_file_scores task_set_file_scores (pool "sandbox") a samples file's samples
    humaneval_file_summary task_set_file_summary               pass@k of that samples file

A task set's summaries summarize the set their backfill's run tag ``codegen/task_set`` names.
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
    DynamicPartitionsDefinition,
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
    HISTORY_BY_SUMMARY,
    HISTORY_TAG,
    LLM_POOL,
    MODE_TAG,
    SAMPLES_FILE_TAG,
    SANDBOX_POOL,
    TASK_SET_PARTITIONS,
    TASK_SET_TAG,
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
    EvalConfig,
    canonical_generator,
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
from codegen.evaluation.staged import StagedFiles
from codegen.evaluation.store import EvalStore
from codegen.evaluation.tasks import TaskSet, humaneval_tasks
from codegen.settings import Settings

humaneval_partitions = StaticPartitionsDefinition(task_keys())
# A task file's tasks, "<set digest>:<task key>": added by `codegen eval ... --backfill`.
task_set_partitions = DynamicPartitionsDefinition(name=TASK_SET_PARTITIONS)
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


# Partition key -> (its task set, the task's key in the set).
Located: TypeAlias = dict[str, tuple[TaskSet, str]]


def _humaneval_task(partition: str) -> tuple[TaskSet, str]:
    get_problem(partition)  # validates
    return humaneval_tasks(), partition


def _located(context: AssetExecutionContext, cfg: Settings, staged: bool) -> Located:
    """The task set and problem of each of the run's partitions: HumanEval's static keys, or
    a task set's ``<digest>:<task>`` keys, read from the set's staged copy."""
    locate = StagedFiles(cfg.eval_dir).locate if staged else _humaneval_task
    return {partition: locate(partition) for partition in context.partition_keys}


def _per_set(located: Located, make: Callable[[TaskSet], _T]) -> dict[str, _T]:
    """``make(set)`` once per task set among the run's partitions, by digest."""
    sets = {ts.digest: ts for ts, _ in located.values()}
    return {digest: make(ts) for digest, ts in sets.items()}


def _ids(configs: dict[str, EvalConfig]) -> str:
    return ", ".join(sorted({c.config_id for c in configs.values()}))


def _generate(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
    staged: bool,
) -> MaterializeResult:
    """The crew's candidates for the run's tasks (the prompt and visible examples only)."""
    cfg = settings.load()
    located = _located(context, cfg, staged)
    configs = _per_set(located, lambda ts: eval_config(cfg, CREW, None, llm, retriever, ts))
    with eval_session(cfg, CREW, llm=llm, sandbox=sandbox, retriever=retriever) as s:

        def one(key: str) -> tuple[tuple[str, bool, list[str]], str]:
            task_set, in_set = located[key]
            problem = task_set.get(in_set)
            config = configs[task_set.digest]
            cands, cached = generate_task(s.store, config, problem, s.generator, s.workers)
            statuses = [c.status for c in cands]
            note = f"{'cached' if cached else 'generated'}, crew {', '.join(statuses)}"
            return (key, cached, statuses), note

        done = _each(context, s.workers, one)
    statuses = [st for _, _, sts in done for st in sts]
    return MaterializeResult(
        metadata={
            "config_id": _ids(configs),
            "tasks": len(done),
            "cached_tasks": sum(c for _, c, _ in done),
            "crew_statuses": MetadataValue.json({st: statuses.count(st) for st in set(statuses)}),
        }
    )


def _score(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
    staged: bool,
) -> MaterializeResult:
    """Hidden-test verdicts, in the sandbox, for the stored candidates of the run's tasks."""
    cfg = settings.load()
    located = _located(context, cfg, staged)
    configs = _per_set(located, lambda ts: eval_config(cfg, CREW, None, llm, retriever, ts))
    store = EvalStore(cfg.eval_dir)
    with sandbox.open() as box:

        def one(key: str) -> tuple[tuple[int, int, bool], str]:
            task_set, in_set = located[key]
            problem = task_set.get(in_set)
            config = configs[task_set.digest]
            _, scores, cached = score_task(store, config, problem, box, cfg.eval.workers)
            passed = sum(sc.passed for sc in scores)
            return (passed, len(scores), cached), f"{passed}/{len(scores)} passed"

        done = _each(context, cfg.eval.workers, one)
    return MaterializeResult(
        metadata={
            "config_id": _ids(configs),
            "passed_samples": sum(p for p, _, _ in done),
            "samples": sum(n for _, n, _ in done),
            "cached_tasks": sum(c for _, _, c in done),
        }
    )


def _canonical(
    context: AssetExecutionContext,
    settings: SettingsResource,
    sandbox: SandboxResource,
    staged: bool,
) -> MaterializeResult:
    """The run's tasks' reference solutions through the same scorer."""
    cfg = settings.load()
    located = _located(context, cfg, staged)
    configs = _per_set(located, lambda ts: eval_config(cfg, CANONICAL, None, tasks=ts))
    generators = _per_set(located, canonical_generator)
    store = EvalStore(cfg.eval_dir)
    with sandbox.open() as box:

        def one(key: str) -> tuple[tuple[str, bool, str, bool], str]:
            task_set, in_set = located[key]
            problem = task_set.get(in_set)
            config = configs[task_set.digest]
            _, gen_cached = generate_task(store, config, problem, generators[task_set.digest])
            _, scores, cached = score_task(store, config, problem, box)
            return (key, scores[0].passed, scores[0].message, gen_cached and cached), (
                scores[0].category
            )

        done = _each(context, max(1, cfg.eval.workers), one)
    failed = {k: msg for k, ok, msg, _ in done if not ok}
    return MaterializeResult(
        metadata={
            "config_id": _ids(configs),
            "passed": len(done) - len(failed),
            "tasks": len(done),
            "cached_tasks": sum(c for _, _, _, c in done),
            "failed": MetadataValue.json(failed),
        }
    )


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
    return _generate(context, settings, llm, sandbox, retriever, staged=False)


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
    return _score(context, settings, llm, sandbox, retriever, staged=False)


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
    return _canonical(context, settings, sandbox, staged=False)


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


def _summary(
    context: AssetExecutionContext,
    cfg: Settings,
    llm: LLMResource,
    retriever: RetrieverResource,
    task_set: TaskSet,
    record: str | None,
) -> MaterializeResult:
    """Crew and canonical summaries of ``task_set``; ``record``: the mode whose summary this
    appends to the history (None: the CLI that drove the backfill records it)."""
    store = EvalStore(cfg.eval_dir)
    keys = task_set.keys()
    crew_cfg = eval_config(cfg, CREW, None, llm, retriever, task_set)
    canon_cfg = eval_config(cfg, CANONICAL, None, tasks=task_set)
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
    if not task_set.builtin:
        metadata["task_set"] = task_set.name
        metadata["task_set_digest"] = task_set.digest
        metadata["canonical_config_id"] = canon_cfg.config_id
        metadata["canonical_summary"] = MetadataValue.json(canon.to_dict(with_rows=False))
        for name, value in canon.pass_at_k.items():
            metadata[f"canonical {name}"] = value
    if crew.picks is not None:
        # Drafts from several models: the figures are the learned pick's; the first pick
        # (as the crew made it during the run) and the reliability estimates beside them.
        metadata["picks"] = MetadataValue.json(crew.picks)
    if crew.precision is not None and crew.precision.precision is not None:
        # How far the crew's own `passed` can be trusted against the hidden tests.
        metadata["precision_of_passed"] = crew.precision.precision
    if crew.precision is not None and crew.precision.recall is not None:
        metadata["recall_of_passed"] = crew.precision.recall
    for name, value in crew.pass_at_k.items():
        metadata[name] = value
    for prefix, found in (("plus ", crew), ("canonical plus ", canon)):
        for name, value in (found.plus.pass_at_k if found.plus else {}).items():
            metadata[prefix + name] = value  # HumanEval+: the plus tests' pass@k
    text = summary_markdown(crew) + "\n\n" + summary_markdown(canon)
    recorded = {CREW: crew, CANONICAL: canon}.get(record or "")
    if recorded is not None and recorded.tasks_scored and not recorded.crew_statuses.get("error"):
        # An outage is not a data point.
        label = "canonical" if record == CANONICAL else str(crew_cfg.identity["default"]["model"])
        store.append_history({**history_entry(recorded, label=label), "task_set": task_set.name})
    shown = record if record == CANONICAL else CREW  # the history of the mode that ran
    if {CREW: crew, CANONICAL: canon}[shown].tasks_scored:
        plot = plot_history([e for e in store.history() if e["mode"] == shown], store.plot_path)
        encoded = base64.b64encode(plot.read_bytes()).decode()
        text += f"\n\n![pass@1 and cost per solved task](data:image/png;base64,{encoded})"
        metadata["plot"] = MetadataValue.path(str(plot))
    metadata["report"] = MetadataValue.md(text)
    context.log.info(
        f"{task_set.name}: crew {crew.pass_at_k or 'not run'}; "
        f"canonical {canon.passed_samples}/{len(keys)}"
    )
    return MaterializeResult(metadata=metadata)


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
    # Launched by `codegen eval` (tagged): the mode it ran, when no CLI reports it; launched
    # from the UI: the crew's summary, as always.
    record = _records(context) if HISTORY_TAG in context.run.tags else CREW
    return _summary(context, settings.load(), llm, retriever, humaneval_tasks(), record)


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


def _samples_file(context: AssetExecutionContext, cfg: Settings, tasks: TaskSet) -> SamplesFile:
    """The samples file of this run: the staged one its backfill names (run tag), else
    ``[eval] samples_file``."""
    staged = context.run.tags.get(SAMPLES_FILE_TAG)
    if staged:
        return StagedFiles(cfg.eval_dir).samples(staged, tasks)
    if not cfg.eval.samples_file:
        raise ValueError(
            "no samples file configured: set [eval] samples_file (CODEGEN_EVAL__SAMPLES_FILE) "
            "or run `codegen eval humaneval --samples-file FILE --backfill`"
        )
    return read_samples(cfg.eval.samples_file, tasks)


def _file_scores(
    context: AssetExecutionContext,
    settings: SettingsResource,
    sandbox: SandboxResource,
    staged: bool,
) -> MaterializeResult:
    """A samples file's samples for the run's tasks, scored as ``--samples-file`` does."""
    cfg = settings.load()
    located = _located(context, cfg, staged)
    files = _per_set(located, lambda ts: _samples_file(context, cfg, ts))
    configs = {digest: samples_config(cfg, found) for digest, found in files.items()}
    store = EvalStore(cfg.eval_dir)
    absent = [
        key
        for key, (ts, in_set) in located.items()
        if ts.get(in_set).key not in files[ts.digest].modules
    ]
    if absent:
        raise ValueError(f"the samples file has no samples for {', '.join(absent[:5])}")
    with sandbox.open() as box:

        def one(key: str) -> tuple[tuple[int, int], str]:
            task_set, in_set = located[key]
            modules = files[task_set.digest].modules[task_set.get(in_set).key]
            config = configs[task_set.digest]
            outcome = run_samples_task(
                store, config, in_set, modules, box, cfg.eval.workers, task_set
            )
            return (outcome.c, outcome.n), f"{outcome.c}/{outcome.n} passed"

        done = _each(context, cfg.eval.workers, one)
    return MaterializeResult(
        metadata={
            "config_id": _ids(configs),
            "samples_file": ", ".join(sorted({str(f.path) for f in files.values()})),
            "passed_samples": sum(c for c, _ in done),
            "samples": sum(n for _, n in done),
        }
    )


def _file_summary(
    context: AssetExecutionContext, cfg: Settings, task_set: TaskSet, record: bool
) -> MaterializeResult:
    """pass@k of this run's samples file over the tasks it holds; ``record``: append it to
    the history (a backfill no CLI reports)."""
    samples = _samples_file(context, cfg, task_set)
    config = samples_config(cfg, samples)
    store = EvalStore(cfg.eval_dir)
    summary = summarize(store, config.config_id, SAMPLES, list(samples.modules))
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
    if not task_set.builtin:
        metadata["task_set"] = task_set.name
        metadata["task_set_digest"] = task_set.digest
    for name, value in summary.pass_at_k.items():
        metadata[name] = value
    if record and summary.complete:
        staged = context.run.tags.get(SAMPLES_FILE_TAG)
        name = StagedFiles(cfg.eval_dir).samples_name(staged) if staged else samples.path.name
        entry = history_entry(summary, label=f"samples:{name}")
        store.append_history({**entry, "task_set": task_set.name})
    context.log.info(f"samples file {samples.path}: {summary.pass_at_k or 'nothing scored'}")
    return MaterializeResult(metadata=metadata)


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
    return _file_scores(context, settings, sandbox, staged=False)


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
    return _file_summary(context, cfg, humaneval_tasks(), record=_records(context) == SAMPLES)


# -- task sets: any task file, one dynamic partition per task ---------------------------------


def _records(context: AssetExecutionContext) -> str | None:
    """The mode a summary appends to the history: the backfill's, when no CLI reports it."""
    tags = context.run.tags
    return tags.get(MODE_TAG) if tags.get(HISTORY_TAG) == HISTORY_BY_SUMMARY else None


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


@asset(
    partitions_def=task_set_partitions,
    backfill_policy=_policy,
    pool=LLM_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="Crew candidates for one task of a task file (partition <set digest>:<task>), "
    "generated from its prompt and visible examples alone.",
)
def task_set_samples(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    return _generate(context, settings, llm, sandbox, retriever, staged=True)


@asset(
    partitions_def=task_set_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    deps=[task_set_samples],
    group_name="evaluation",
    kinds={"python"},
    description="Hidden-test verdicts (in the sandbox) for one task-file task's candidates.",
)
def task_set_scores(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    return _score(context, settings, llm, sandbox, retriever, staged=True)


@asset(
    partitions_def=task_set_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="A task-file task's reference solution scored through the same sandbox path.",
)
def task_set_canonical(
    context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> MaterializeResult:
    return _canonical(context, settings, sandbox, staged=True)


@asset(
    deps=[task_set_scores, task_set_canonical],
    group_name="evaluation",
    kinds={"python"},
    description="pass@k of the task set the backfill names (run tag codegen/task_set): crew "
    "and canonical, failures by category, tokens and cost.",
)
def task_set_summary(
    context: AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    cfg = settings.load()
    task_set = _tagged_task_set(context, cfg)
    return _summary(context, cfg, llm, retriever, task_set, record=_records(context))


@asset(
    partitions_def=task_set_partitions,
    backfill_policy=_policy,
    pool=SANDBOX_POOL,
    group_name="evaluation",
    kinds={"python"},
    description="A samples file's samples for one task-file task, scored in the sandbox "
    "through the same scorer and per-sample cache as `--samples-file`.",
)
def task_set_file_scores(
    context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
) -> MaterializeResult:
    return _file_scores(context, settings, sandbox, staged=True)


@asset(
    deps=[task_set_file_scores],
    group_name="evaluation",
    kinds={"python"},
    description="Unbiased pass@k of the backfill's samples file over a task file's tasks.",
)
def task_set_file_summary(
    context: AssetExecutionContext, settings: SettingsResource
) -> MaterializeResult:
    cfg = settings.load()
    task_set = _tagged_task_set(context, cfg)
    return _file_summary(context, cfg, task_set, record=_records(context) == SAMPLES)


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
