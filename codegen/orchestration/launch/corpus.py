"""Corpus wiring: jobs, the re-index schedule, the downstream automation sensor, a build call.

Re-indexing: the schedule launches one run per source partition of ``raw_documents`` (a
disabled source records "disabled" in a moment), and ``corpus_automation_sensor`` then
materializes clean -> dedupe -> chunks once every raw partition has settled (their
``AutomationCondition.eager()``). ``build_corpus`` is the same thing done synchronously for
the CLI: raw partitions first, each in its own run so one failing never blocks the others,
then the downstream stages and their checks in one run.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dagster import (
    AssetChecksDefinition,
    AssetsDefinition,
    AssetSelection,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DefaultSensorStatus,
    ExecuteInProcessResult,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    materialize,
    schedule,
    sensor,
)

from codegen.assets import corpus as corpus_assets
from codegen.assets.corpus_builds import COMMAND_TAG, CORPUS_BUILD, FIRST_BUILD
from codegen.assets.resources import SettingsResource, VectorIndexResource
from codegen.corpus.store import chunks_path
from codegen.json_types import JSONObject, JSONValue
from codegen.orchestration.instance import KIND_CORPUS, kind_tags
from codegen.orchestration.resources import resources_for
from codegen.settings import Settings, get_settings

DOWNSTREAM = [
    corpus_assets.clean_documents,
    corpus_assets.deduped_documents,
    corpus_assets.chunks,
]
CHECKS = [corpus_assets.corpus_checks]

corpus_raw_job = define_asset_job(
    "corpus_raw_job",
    selection=AssetSelection.assets(corpus_assets.raw_documents),
    partitions_def=corpus_assets.source_partitions,
    description="Fetch one source's raw documents (a partition per source).",
    tags=kind_tags(KIND_CORPUS),
)
corpus_downstream_job = define_asset_job(
    "corpus_downstream_job",
    selection=AssetSelection.assets(*DOWNSTREAM),
    description="Clean, dedupe and chunk every source's stored raw documents.",
    tags=kind_tags(KIND_CORPUS),
)


@schedule(
    cron_schedule=get_settings().corpus.reindex_cron,
    job=corpus_raw_job,
    description="Re-index the corpus (daily by default: corpus.reindex_cron).",
)
def corpus_reindex_schedule(context: ScheduleEvaluationContext) -> list[RunRequest]:
    tick = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [
        RunRequest(run_key=f"{tick}-{source}", partition_key=source)
        for source in corpus_assets.CORPUS_SOURCES
    ]


corpus_automation_sensor = AutomationConditionSensorDefinition(
    "corpus_automation_sensor",
    target=AssetSelection.assets(*DOWNSTREAM),
    default_status=DefaultSensorStatus.RUNNING,
    description="Runs clean -> dedupe -> chunks after raw partitions update.",
)


@sensor(
    name="first_build_sensor",
    job=corpus_raw_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="On an instance with no corpus and no index, starts the first build once: "
    "a run per source [corpus] sources enables (the automation sensors then chunk and index "
    "them); each other source's raw partition is recorded 'disabled' at once, without a run. "
    "[corpus] build_on_first_run = false turns it off.",
)
def first_build_sensor(
    context: SensorEvaluationContext, settings: SettingsResource, vector_index: VectorIndexResource
) -> SensorResult | SkipReason:
    cfg = settings.load()
    if not cfg.corpus.build_on_first_run:
        return SkipReason("[corpus] build_on_first_run is off")
    if context.cursor == FIRST_BUILD:
        return SkipReason("the first build was started already")
    if chunks_path(cfg.corpus_dir).exists() or not vector_index.local_index_missing():
        return SensorResult(skip_reason="a corpus or an index exists", cursor=FIRST_BUILD)
    enabled = [s for s in corpus_assets.CORPUS_SOURCES if s in cfg.corpus.sources]
    context.log.info(f"no corpus and no index yet: starting the first build of {enabled}")
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"{FIRST_BUILD}-{source}",
                partition_key=source,
                tags={COMMAND_TAG: FIRST_BUILD},
            )
            for source in enabled
        ],
        # A disabled source has nothing to fetch, yet a run of its own costs a process start
        # (tens of seconds of CPU each). The downstream stages wait for every raw partition
        # (AutomationCondition.eager: no missing dependency), so the disabled ones are
        # recorded here, at once, and the chunks follow as soon as the enabled ones are in.
        asset_events=[
            corpus_assets.disabled_source_materialization(cfg, source)
            for source in corpus_assets.CORPUS_SOURCES
            if source not in enabled
        ],
        cursor=FIRST_BUILD,
    )


CORPUS_JOBS = [corpus_raw_job, corpus_downstream_job]
CORPUS_SCHEDULES = [corpus_reindex_schedule]
CORPUS_SENSORS = [corpus_automation_sensor, first_build_sensor]


@dataclass
class StageResult:
    name: str
    success: bool
    metadata: JSONObject  # the stage's materialization metadata, as the CLI prints it


def _json(value: object) -> JSONValue:
    """A metadata value as JSON: JSON values as they are, anything else as its text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    return str(value)


def _metadata(result: ExecuteInProcessResult, node: str) -> JSONObject:
    mats = result.asset_materializations_for_node(node)
    return {k: _json(v.value) for k, v in mats[-1].metadata.items()} if mats else {}


def build_corpus(
    instance: DagsterInstance,
    sources: Sequence[str],
    settings: Settings | None = None,
    on_stage: Callable[[StageResult], None] = lambda _: None,
) -> list[StageResult]:
    """Materialize raw partitions for ``sources``, then the downstream stages and checks.

    Each source is its own run, except the last, which shares the downstream run: Dagster's
    per-run bookkeeping dominates an incremental build, and one run fewer is a second saved.
    Should that shared raw step fail, the downstream stages run again on their own, so one
    source failing never blocks the others.
    """
    resources = resources_for(settings or get_settings())

    def run(
        assets: Sequence[AssetsDefinition | AssetChecksDefinition],
        partition_key: str | None = None,
    ) -> ExecuteInProcessResult:
        return materialize(
            assets,
            partition_key=partition_key,
            instance=instance,
            resources=resources,
            run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
            raise_on_error=False,
            tags={COMMAND_TAG: CORPUS_BUILD},
        )

    results: list[StageResult] = []

    def report(stage: StageResult) -> None:
        results.append(stage)
        on_stage(stage)

    def raw_stage(res: ExecuteInProcessResult, source: str) -> bool:
        failed = {e.step_key for e in res.get_step_failure_events()}
        meta = _metadata(res, "raw_documents")
        ok = "raw_documents" not in failed and bool(meta)
        report(StageResult(f"raw_documents[{source}]", ok, meta))
        return ok

    for source in sources[:-1]:
        raw_stage(run([corpus_assets.raw_documents], source), source)
    if sources:
        res = run([corpus_assets.raw_documents, *DOWNSTREAM, *CHECKS], sources[-1])
        if not raw_stage(res, sources[-1]):
            res = run([*DOWNSTREAM, *CHECKS])
    else:
        res = run([*DOWNSTREAM, *CHECKS])
    names = {a.key.to_user_string() for a in DOWNSTREAM}
    failed_steps = {e.step_key for e in res.get_step_failure_events()}
    for asset in DOWNSTREAM:
        name = asset.key.to_user_string()
        ok = name not in failed_steps and bool(_metadata(res, name))
        report(StageResult(name, ok, _metadata(res, name)))
    report(
        StageResult(
            "checks",
            not (failed_steps - names - {"raw_documents"}),
            {e.check_name: e.passed for e in res.get_asset_check_evaluations()},
        )
    )
    return results


def build_index(
    instance: DagsterInstance,
    settings: Settings | None = None,
    on_stage: Callable[[StageResult], None] = lambda _: None,
) -> list[StageResult]:
    """Sync the vector index with the chunks (only new ids are embedded) and check quality."""
    from codegen.assets import index as index_assets

    res = materialize(
        [index_assets.index, index_assets.index_retrieval_quality],
        instance=instance,
        resources=resources_for(settings or get_settings()),
        # INFO: the index asset logs "embedded N/M" as it goes, the progress of a long build.
        run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
        raise_on_error=False,
        tags={COMMAND_TAG: CORPUS_BUILD},
    )
    failed = {e.step_key for e in res.get_step_failure_events()}
    meta = _metadata(res, "index")
    stages = [
        StageResult("index", "index" not in failed and bool(meta), meta),
        StageResult(
            "index_checks",
            not (failed - {"index"}),
            {e.check_name: e.passed for e in res.get_asset_check_evaluations()},
        ),
    ]
    for stage in stages:
        on_stage(stage)
    return stages
