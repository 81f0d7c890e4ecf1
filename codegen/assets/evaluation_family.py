"""The factory of one task set's evaluation assets (see codegen/assets/evaluation.py): each
body finds the run's tasks, opens an ``EvalSession`` per task set among them and reports
what the session did as metadata."""

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetsDefinition,
    BackfillPolicy,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
    asset_check,
)

from codegen.assets.evaluation_metadata import (
    file_summary_metadata,
    inline_plot,
    summary_metadata,
)
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.composition import eval_setup
from codegen.evaluation.harness import CANONICAL, CREW, SAMPLES
from codegen.evaluation.report import summary_markdown
from codegen.evaluation.samples_file import SamplesFile, read_samples
from codegen.evaluation.session import (
    HISTORY_BY_SUMMARY,
    HISTORY_TAG,
    LLM_POOL,
    MODE_TAG,
    PACKAGE_SET_TAG,
    SAMPLES_FILE_TAG,
    SANDBOX_POOL,
    EvalSession,
    EvalSetup,
)
from codegen.evaluation.staged import StagedFiles
from codegen.evaluation.tasks import TaskSet
from codegen.sandbox.image import NAMED_SETS
from codegen.settings import Settings

# Tasks in runs of 41: a full HumanEval backfill is 4 runs (plus the summary). Each run costs
# an interpreter start and a sandbox pool start (~10 s on a busy 2-core machine); with runs
# of 16 the measured canonical backfill took 254 s for 11 runs. Progress still shows per
# task in the run logs, and per partition as each run finishes.
PARTITIONS_PER_RUN = 41
_policy = BackfillPolicy.multi_run(max_partitions_per_run=PARTITIONS_PER_RUN)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Family:
    """One task set's assets: their names' prefix, partitions, and where a partition's task
    (and a summary's task set) comes from."""

    prefix: str
    title: str
    partitions: PartitionsDefinition
    locate: Callable[[Settings, str], tuple[TaskSet, str]]  # partition -> (set, task key)
    summary_set: Callable[[AssetExecutionContext, Settings], TaskSet]
    staged: bool  # task files: a summary reads its backfill's run tag
    references_pass: bool = False  # a canonical_verified check on the summary


def each_partition(
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


def _run_sandbox(context: AssetExecutionContext, sandbox: SandboxResource) -> SandboxResource:
    """The sandbox this run scores in: under the package set its backfill names (the one
    ``codegen eval`` chose: ClassEval's is 'classeval'), whatever this process's settings
    say; else the resource as the settings built it (a launch from the UI). The tag chooses
    among the deployment's named sets only: anything else fails the run in one line."""
    chosen = context.run.tags.get(PACKAGE_SET_TAG)
    if not chosen or chosen == sandbox.package_set:
        return sandbox
    if chosen not in NAMED_SETS:
        raise Failure(
            description=f"refused: the run's tag {PACKAGE_SET_TAG}={chosen!r} names no package "
            f"set of this deployment (one of {', '.join(sorted(NAMED_SETS))})",
            allow_retries=False,
        )
    return SandboxResource(**{**sandbox.model_dump(), "package_set": chosen})


# A partition's session and its task key in the session's set.
Located = dict[str, tuple[EvalSession, str]]


def _sessions(
    context: AssetExecutionContext,
    family: Family,
    cfg: Settings,
    make: Callable[[TaskSet], EvalSession],
) -> Located:
    """One session per task set among the run's partitions (a task-file run may hold two)."""
    located = {p: family.locate(cfg, p) for p in context.partition_keys}
    by_set: dict[str, EvalSession] = {}
    for task_set, _ in located.values():
        if task_set.digest not in by_set:
            by_set[task_set.digest] = make(task_set)
    return {p: (by_set[ts.digest], key) for p, (ts, key) in located.items()}


def _ids(located: Located) -> str:
    return ", ".join(sorted({s.config.config_id for s, _ in located.values()}))


def _generate(
    context: AssetExecutionContext,
    family: Family,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    """The crew's candidates for the run's tasks (the prompt and visible examples only)."""
    cfg = settings.load()
    setup = eval_setup(cfg)
    located = _sessions(
        context, family, cfg, lambda ts: EvalSession(setup, ts, CREW, llm=llm, retriever=retriever)
    )
    sandbox = _run_sandbox(context, sandbox)
    with sandbox.open() as box:
        generators = {id(s): s.generator(box, sandbox.limits()) for s, _ in located.values()}

        def one(partition: str) -> tuple[tuple[bool, list[str]], str]:
            session, key = located[partition]
            cands, cached = session.generate(key, generators[id(session)])
            statuses = [c.status for c in cands]
            note = f"{'cached' if cached else 'generated'}, crew {', '.join(statuses)}"
            return (cached, statuses), note

        done = each_partition(context, setup.workers, one)
    statuses = [st for _, sts in done for st in sts]
    return MaterializeResult(
        metadata={
            "config_id": _ids(located),
            "tasks": len(done),
            "cached_tasks": sum(c for c, _ in done),
            "crew_statuses": MetadataValue.json({st: statuses.count(st) for st in set(statuses)}),
        }
    )


def _score(
    context: AssetExecutionContext,
    family: Family,
    settings: SettingsResource,
    llm: LLMResource,
    sandbox: SandboxResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    """Hidden-test verdicts, in the sandbox, for the stored candidates of the run's tasks."""
    cfg = settings.load()
    setup = eval_setup(cfg)
    located = _sessions(
        context, family, cfg, lambda ts: EvalSession(setup, ts, CREW, llm=llm, retriever=retriever)
    )
    sandbox = _run_sandbox(context, sandbox)
    with sandbox.open() as box:

        def one(partition: str) -> tuple[tuple[int, int, bool], str]:
            session, key = located[partition]
            scores, cached = session.score(key, box)
            passed = sum(sc.passed for sc in scores)
            return (passed, len(scores), cached), f"{passed}/{len(scores)} passed"

        done = each_partition(context, setup.workers, one)
    return MaterializeResult(
        metadata={
            "config_id": _ids(located),
            "passed_samples": sum(p for p, _, _ in done),
            "samples": sum(n for _, n, _ in done),
            "cached_tasks": sum(c for _, _, c in done),
        }
    )


def _canonical(
    context: AssetExecutionContext,
    family: Family,
    settings: SettingsResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    """The run's tasks' reference solutions through the same scorer."""
    cfg = settings.load()
    setup = eval_setup(cfg)
    located = _sessions(context, family, cfg, lambda ts: EvalSession(setup, ts, CANONICAL))
    sandbox = _run_sandbox(context, sandbox)
    with sandbox.open() as box:
        generators = {id(s): s.generator(box) for s, _ in located.values()}

        def one(partition: str) -> tuple[tuple[bool, str, bool], str]:
            session, key = located[partition]
            _, gen_cached = session.generate(key, generators[id(session)])
            [score], cached = session.score(key, box)
            return (score.passed, score.message, gen_cached and cached), score.category

        done = each_partition(context, setup.workers, one)
    outcomes = zip(context.partition_keys, done, strict=True)
    failed = {p: msg for p, (ok, msg, _) in outcomes if not ok}
    return MaterializeResult(
        metadata={
            "config_id": _ids(located),
            "passed": len(done) - len(failed),
            "tasks": len(done),
            "cached_tasks": sum(c for _, _, c in done),
            "failed": MetadataValue.json(failed),
        }
    )


def _records(context: AssetExecutionContext) -> str | None:
    """The mode a summary appends to the history: the backfill's, when no CLI reports it."""
    tags = context.run.tags
    return tags.get(MODE_TAG) if tags.get(HISTORY_TAG) == HISTORY_BY_SUMMARY else None


def _summary(
    context: AssetExecutionContext,
    family: Family,
    settings: SettingsResource,
    llm: LLMResource,
    retriever: RetrieverResource,
) -> MaterializeResult:
    """Crew and canonical summaries of the family's task set. Launched by `codegen eval`
    (tagged), it records the mode that ran when no CLI reports it; a registered benchmark's
    summary launched from the UI records the crew's, as always."""
    cfg = settings.load()
    setup = eval_setup(cfg)
    task_set = family.summary_set(context, cfg)
    tagged = family.staged or HISTORY_TAG in context.run.tags
    record = _records(context) if tagged else CREW
    crew_s = EvalSession(setup, task_set, CREW, llm=llm, retriever=retriever)
    canon_s = EvalSession(setup, task_set, CANONICAL)
    crew, canon = crew_s.summarize(), canon_s.summarize()
    metadata = summary_metadata(crew_s, crew, canon_s, canon)
    text = summary_markdown(crew) + "\n\n" + summary_markdown(canon)
    found = {CREW: (crew_s, crew), CANONICAL: (canon_s, canon)}
    recorded = found.get(record or "")
    if recorded and recorded[1].tasks_scored and not recorded[1].crew_statuses.get("error"):
        recorded[0].record(recorded[1])  # an outage is not a data point
    shown, summary = found[record if record == CANONICAL else CREW]  # the mode that ran
    if summary.tasks_scored:
        plot = shown.plot()
        text += inline_plot(plot, "pass@1 and cost per solved task")
        metadata["plot"] = MetadataValue.path(str(plot))
    metadata["report"] = MetadataValue.md(text)
    context.log.info(
        f"{task_set.name}: crew {crew.pass_at_k or 'not run'}; "
        f"canonical {canon.passed_samples}/{len(task_set.keys())}"
    )
    return MaterializeResult(metadata=metadata)


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


def _file_session(context: AssetExecutionContext, cfg: Settings, setup: EvalSetup) -> Callable:
    return lambda ts: EvalSession(setup, samples_file=_samples_file(context, cfg, ts))


def _file_scores(
    context: AssetExecutionContext,
    family: Family,
    settings: SettingsResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    """A samples file's samples for the run's tasks, scored as ``--samples-file`` does."""
    cfg = settings.load()
    setup = eval_setup(cfg)
    located = _sessions(context, family, cfg, _file_session(context, cfg, setup))
    absent = [
        p
        for p, (s, key) in located.items()
        if s.samples_file and s.tasks.get(key).key not in s.samples_file.modules
    ]
    if absent:
        raise ValueError(f"the samples file has no samples for {', '.join(absent[:5])}")
    sandbox = _run_sandbox(context, sandbox)
    with sandbox.open() as box:

        def one(partition: str) -> tuple[tuple[int, int], str]:
            session, key = located[partition]
            outcome = session.score_file_task(key, box)
            return (outcome.c, outcome.n), f"{outcome.c}/{outcome.n} passed"

        done = each_partition(context, setup.workers, one)
    paths = {str(s.samples_file.path) for s, _ in located.values() if s.samples_file}
    return MaterializeResult(
        metadata={
            "config_id": _ids(located),
            "samples_file": ", ".join(sorted(paths)),
            "passed_samples": sum(c for c, _ in done),
            "samples": sum(n for _, n in done),
        }
    )


def _file_summary(
    context: AssetExecutionContext, family: Family, settings: SettingsResource
) -> MaterializeResult:
    """pass@k of this run's samples file over the tasks it holds; recorded in the history
    when its backfill says no CLI reports it."""
    cfg = settings.load()
    task_set = family.summary_set(context, cfg)
    samples = _samples_file(context, cfg, task_set)
    session = EvalSession(eval_setup(cfg), samples_file=samples)
    summary = session.summarize(list(samples.modules))
    metadata = file_summary_metadata(session, summary)
    if _records(context) == SAMPLES and summary.complete:
        staged = context.run.tags.get(SAMPLES_FILE_TAG)
        name = StagedFiles(cfg.eval_dir).samples_name(staged) if staged else samples.path.name
        session.record(summary, label=f"samples:{name}")
    context.log.info(f"samples file {samples.path}: {summary.pass_at_k or 'nothing scored'}")
    return MaterializeResult(metadata=metadata)


def family_assets(family: Family) -> list[AssetsDefinition]:
    """The six assets of ``family``, named ``<prefix>_<asset>``."""
    p, title = family.prefix, family.title
    part = {"partitions_def": family.partitions, "backfill_policy": _policy}
    common = {"group_name": "evaluation", "kinds": {"python"}}

    @asset(
        name=f"{p}_samples",
        pool=LLM_POOL,
        description=f"Crew candidates for one {title} task, generated from its prompt and "
        "visible examples alone.",
        **part,
        **common,
    )
    def samples(
        context: AssetExecutionContext,
        settings: SettingsResource,
        llm: LLMResource,
        sandbox: SandboxResource,
        retriever: RetrieverResource,
    ) -> MaterializeResult:
        return _generate(context, family, settings, llm, sandbox, retriever)

    @asset(
        name=f"{p}_scores",
        pool=SANDBOX_POOL,
        deps=[samples],
        description=f"Hidden-test verdicts (in the sandbox) for one {title} task's candidates.",
        **part,
        **common,
    )
    def scores(
        context: AssetExecutionContext,
        settings: SettingsResource,
        llm: LLMResource,
        sandbox: SandboxResource,
        retriever: RetrieverResource,
    ) -> MaterializeResult:
        return _score(context, family, settings, llm, sandbox, retriever)

    @asset(
        name=f"{p}_canonical",
        pool=SANDBOX_POOL,
        description=f"One {title} task's reference solution scored through the same path.",
        **part,
        **common,
    )
    def canonical(
        context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
    ) -> MaterializeResult:
        return _canonical(context, family, settings, sandbox)

    @asset(
        name=f"{p}_summary",
        deps=[scores, canonical],
        description=f"pass@k over every scored {title} task (crew and canonical), failures "
        "by category, tokens and cost"
        + (" (the task set the run tag codegen/task_set names)." if family.staged else "."),
        **common,
    )
    def summary(
        context: AssetExecutionContext,
        settings: SettingsResource,
        llm: LLMResource,
        retriever: RetrieverResource,
    ) -> MaterializeResult:
        return _summary(context, family, settings, llm, retriever)

    return [samples, scores, canonical, summary, *_file_assets(family, part, common)]


def _file_assets(family: Family, part: dict, common: dict) -> list[AssetsDefinition]:
    p, title = family.prefix, family.title

    @asset(
        name=f"{p}_file_scores",
        pool=SANDBOX_POOL,
        description=f"A samples file's samples for one {title} task (`[eval] samples_file` or "
        "the backfill's), scored in the sandbox through the same scorer and per-sample cache "
        "as `--samples-file`.",
        **part,
        **common,
    )
    def file_scores(
        context: AssetExecutionContext, settings: SettingsResource, sandbox: SandboxResource
    ) -> MaterializeResult:
        return _file_scores(context, family, settings, sandbox)

    @asset(
        name=f"{p}_file_summary",
        deps=[file_scores],
        description=f"Unbiased pass@k of the samples file over the {title} tasks it holds.",
        **common,
    )
    def file_summary(
        context: AssetExecutionContext, settings: SettingsResource
    ) -> MaterializeResult:
        return _file_summary(context, family, settings)

    return [file_scores, file_summary]


def canonical_check(family: Family) -> AssetChecksDefinition:
    """Every reference solution must pass through the scoring path; anything less means the
    harness (sandbox, driver, classification) is broken and no crew score can be trusted.
    Not blocking: a crew backfill run before the canonical one must still record its summary;
    the failed check (severity ERROR) is what marks the harness as untrusted in the UI."""
    expected = len(family.partitions.get_partition_keys())

    @asset_check(
        asset=f"{family.prefix}_summary",
        name="canonical_verified",
        description=f"Canonical solutions: {expected}/{expected}.",
    )
    def canonical_verified(
        context: AssetCheckExecutionContext, settings: SettingsResource
    ) -> AssetCheckResult:
        cfg = settings.load()
        task_set = family.summary_set(context, cfg)  # type: ignore[arg-type]
        canon = EvalSession(eval_setup(cfg), task_set, CANONICAL).summarize()
        keys = task_set.keys()
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

    return canonical_verified
