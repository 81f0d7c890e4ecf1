"""The vector index over the corpus chunks, and the blocking retrieval-quality check."""

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AutomationCondition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from codegen.assets.corpus_builds import PROGRESS_TAG
from codegen.assets.resources import SettingsResource, VectorIndexResource
from codegen.corpus.store import chunks_path, read_chunks
from codegen.retrieval.embedders import EmbedderError
from codegen.retrieval.evaluation import evaluate, queries_from_chunks
from codegen.retrieval.index import IndexRetriever, sync_index


@asset(
    deps=["chunks"],
    group_name="corpus",
    automation_condition=AutomationCondition.eager(),
    kinds={"lancedb"},
    description=(
        "Embeddings of every chunk in the configured vector store. Incremental: only chunk "
        "ids the store lacks are embedded, removed ids are deleted; a different embedder "
        "identity re-embeds everything."
    ),
)
def index(
    context: AssetExecutionContext, settings: SettingsResource, vector_index: VectorIndexResource
) -> MaterializeResult:
    path = chunks_path(settings.load().corpus_dir)
    if not path.exists():
        raise Failure(f"no chunks at {path}; materialize the chunks asset first")
    store = vector_index.open_store()
    try:
        embedder = vector_index.make_build_embedder()
    except EmbedderError as exc:
        raise Failure(str(exc)) from exc
    provenance = embedder.provenance
    context.log.info(
        f"embedder {embedder.identity} on {provenance['device']} ({provenance['precision']})"
    )

    shown = -1

    def progress(done: int, total: int) -> None:
        nonlocal shown
        context.log.info(f"embedded {done}/{total} new chunks")
        percent = done * 100 // total if total else 100
        if percent != shown:  # a run tag, so the UI's runs list shows how far it got
            shown = percent
            context.instance.add_run_tags(
                context.run_id,
                {PROGRESS_TAG: f"{percent}% embedded ({done} of {total} new chunks)"},
            )

    stats = sync_index(read_chunks(path), store, embedder, progress=progress)
    summary = (
        f"| chunks | embedded | deleted | unchanged | re-embedded all |\n|---|---|---|---|---|\n"
        f"| {stats.total} | {stats.embedded} | {stats.deleted} | {stats.unchanged} "
        f"| {stats.reset} |"
    )
    ann = store.ann_info()  # the faiss sidecar of a large index, with its calibrated probes
    ann_metadata = (
        {"ann_nprobe": ann["nprobe"], "ann_calibration": MetadataValue.json(ann["calibration"])}
        if ann
        else {}
    )
    return MaterializeResult(
        metadata={
            **{k: v for k, v in stats.to_dict().items() if k != "embedder"},
            "embedder": stats.embedder,  # the identity: part of this index's lineage
            "built_on": f"{provenance['device']}, {provenance['precision']}, "
            f"{provenance['runtime']}",
            "build_record": MetadataValue.json(store.build_record() or {}),
            "store": vector_index.store_config().kind,
            "rows": store.count(),
            **ann_metadata,
            "summary": MetadataValue.md(summary),
        }
    )


@asset_check(
    asset=index,
    blocking=True,
    description=(
        "Searches the index with the first docstring sentence of sampled indexed functions "
        "and fails below the configured MRR@10 floors (hybrid and dense)."
    ),
)
def index_retrieval_quality(
    settings: SettingsResource, vector_index: VectorIndexResource
) -> AssetCheckResult:
    cfg = settings.load()
    queries = queries_from_chunks(
        read_chunks(chunks_path(cfg.corpus_dir)), max_queries=cfg.retrieval.quality_queries
    )
    if not queries:
        return AssetCheckResult(
            passed=False,
            severity=AssetCheckSeverity.WARN,
            description="no documented Python functions among the chunks; nothing to evaluate",
        )
    retriever = IndexRetriever(vector_index.open_store(), vector_index.make_embedder())
    scores = evaluate(retriever, queries, modes=("hybrid", "vector", "keyword"))
    floors = {
        "hybrid": cfg.retrieval.quality_floor_hybrid_mrr,
        "vector": cfg.retrieval.quality_floor_dense_mrr,
    }
    failed = [m for m, floor in floors.items() if scores[m].mrr_at_10 < floor]
    table = "| mode | MRR@10 | recall@1 | recall@10 | floor |\n|---|---|---|---|---|\n" + "\n".join(
        f"| {s.mode} | {s.mrr_at_10} | {s.recall_at_1} | {s.recall_at_10} "
        f"| {floors.get(s.mode, '-')} |"
        for s in scores.values()
    )
    return AssetCheckResult(
        passed=not failed,
        severity=AssetCheckSeverity.ERROR,
        description=f"below the floor: {', '.join(failed)}" if failed else None,
        metadata={
            "queries": len(queries),
            **{f"{m}_mrr_at_10": s.mrr_at_10 for m, s in scores.items()},
            "scores": MetadataValue.md(table),
        },
    )
