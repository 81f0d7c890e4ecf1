"""Corpus assets: raw documents per source, then clean, dedupe and chunk downstream."""

from collections.abc import Iterator

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetMaterialization,
    AutomationCondition,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
    multi_asset_check,
)

from codegen.assets.resources import SettingsResource
from codegen.composition import chunk_budget, dedupe_params, source_config
from codegen.corpus import pipeline
from codegen.corpus.connectors import SourceReport
from codegen.corpus.sources import SOURCES, load_reports, refresh_source
from codegen.corpus.store import chunks_path, clean_path, deduped_path, raw_path
from codegen.settings import Settings

CORPUS_SOURCES = list(SOURCES)
source_partitions = StaticPartitionsDefinition(CORPUS_SOURCES)
# Downstream stages follow new raw partitions on their own (see codegen/orchestration/schedules).
_eager = AutomationCondition.eager()


def _table(rows: dict[str, int], key: str) -> MetadataValue:
    lines = [f"| {key} | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows.items()]
    return MetadataValue.md("\n".join(lines) if rows else f"no {key}s")


@asset(
    partitions_def=source_partitions,
    group_name="corpus",
    kinds={"python"},
    description="Raw documents fetched from one source, stored as JSON lines.",
)
def raw_documents(context: AssetExecutionContext, settings: SettingsResource) -> MaterializeResult:
    cfg = settings.load()
    source = context.partition_key
    enabled = source in cfg.corpus.sources
    config = source_config(cfg, source) if enabled else None
    report = refresh_source(source, config, cfg.corpus_dir, enabled, context.log.info)
    if report.status in ("failed", "partial"):
        context.log.warning(f"{source}: {report.status}: {report.message}")
    return MaterializeResult(metadata=_raw_metadata(cfg, source, report))


def _raw_metadata(
    cfg: Settings, source: str, report: SourceReport
) -> dict[str, MetadataValue | str | int | float]:
    """The metadata of one source's raw partition (status, counts, where the file is)."""
    return {
        **{k: v for k, v in report.as_metadata().items() if k != "skipped"},
        "skipped": MetadataValue.json(dict(report.skipped)),
        "characters": report.bytes,
        "path": MetadataValue.path(str(raw_path(cfg.corpus_dir, source))),
    }


def disabled_source_materialization(cfg: Settings, source: str) -> AssetMaterialization:
    """What ``raw_documents`` records for a source ``[corpus] sources`` does not list (an empty
    raw stage, status "disabled"), done where it is called instead of in a run of its own."""
    if source in cfg.corpus.sources:
        raise ValueError(f"{source} is enabled: its raw documents come from a run")
    report = refresh_source(source, None, cfg.corpus_dir, enabled=False)
    return AssetMaterialization(
        asset_key=raw_documents.key, partition=source, metadata=_raw_metadata(cfg, source, report)
    )


@asset(
    deps=[raw_documents],
    group_name="corpus",
    kinds={"python"},
    automation_condition=_eager,
    description="Every source's documents decoded, filtered, de-boilerplated and redacted.",
)
def clean_documents(
    context: AssetExecutionContext, settings: SettingsResource
) -> MaterializeResult:
    cfg = settings.load()
    stats = pipeline.clean_stage(cfg.corpus_dir, cfg.corpus.max_document_bytes, context.log.info)
    return MaterializeResult(
        metadata={
            "documents_in": stats.documents_in,
            "documents": stats.documents_out,
            "dropped": MetadataValue.json(pipeline.dump_counter(stats.dropped)),
            "dropped_table": _table(pipeline.dump_counter(stats.dropped), "reason"),
            "secrets_redacted": sum(stats.redactions.values()),
            "redactions": MetadataValue.json(pipeline.dump_counter(stats.redactions)),
            "by_source": MetadataValue.json(pipeline.dump_counter(stats.by_source)),
            "cache_hits": stats.cache_hits,
            "path": MetadataValue.path(str(clean_path(cfg.corpus_dir))),
        }
    )


@asset(
    deps=[clean_documents],
    group_name="corpus",
    kinds={"python"},
    automation_condition=_eager,
    description="Exact and MinHash-LSH near duplicates removed across all sources.",
)
def deduped_documents(
    context: AssetExecutionContext, settings: SettingsResource
) -> MaterializeResult:
    cfg = settings.load()
    params = dedupe_params(cfg)
    stats = pipeline.dedupe_stage(cfg.corpus_dir, params, context.log.info)
    ratio = 1 - stats.documents_out / stats.documents_in if stats.documents_in else 0.0
    return MaterializeResult(
        metadata={
            "documents_in": stats.documents_in,
            "documents": stats.documents_out,
            "exact_duplicates_removed": stats.exact_removed,
            "near_duplicates_removed": stats.near_removed,
            "duplicate_ratio": round(ratio, 4),
            "clusters": len(stats.clusters),
            "largest_clusters": MetadataValue.json(
                sorted(stats.clusters, key=len, reverse=True)[:10]
            ),
            "removed_by_source": MetadataValue.json(pipeline.dump_counter(stats.removed_by_source)),
            "params": MetadataValue.json(params.__dict__),
            "path": MetadataValue.path(str(deduped_path(cfg.corpus_dir))),
        }
    )


@asset(
    deps=[deduped_documents],
    group_name="corpus",
    kinds={"python"},
    automation_condition=_eager,
    description="Citable chunks (syntax-tree Python, heading-split prose, Q&A, issues).",
)
def chunks(context: AssetExecutionContext, settings: SettingsResource) -> MaterializeResult:
    cfg = settings.load()
    budget = chunk_budget(cfg)
    stats = pipeline.chunk_stage(cfg.corpus_dir, budget, context.log.info, dedupe_params(cfg))
    dist = pipeline.size_distribution(stats.token_sizes)
    return MaterializeResult(
        metadata={
            "documents": stats.documents,
            "chunks": stats.chunks,
            "new_chunks": stats.new_chunks,
            "removed_chunks": stats.removed_chunks,
            "duplicate_chunks_dropped": stats.duplicate_chunks,
            "near_duplicate_code_chunks_dropped": stats.near_duplicate_chunks,
            "runnable_examples": stats.examples,
            "cache_hits": stats.cache_hits,
            "by_kind": _table(pipeline.dump_counter(stats.by_kind), "kind"),
            "by_source": MetadataValue.json(pipeline.dump_counter(stats.by_source)),
            "token_sizes": MetadataValue.json(dist),
            "path": MetadataValue.path(str(chunks_path(cfg.corpus_dir))),
        }
    )


CORPUS_CHECK_SPECS = [
    AssetCheckSpec(
        "chunks_have_no_secrets",
        asset="chunks",
        description="No chunk contains a secret pattern.",
        blocking=True,
    ),
    AssetCheckSpec(
        "chunk_size_distribution",
        asset="chunks",
        description="Chunk sizes: none empty, median within the token budget.",
    ),
    AssetCheckSpec(
        "enabled_sources_non_empty",
        asset="chunks",
        description="Every enabled (listed and configured) source contributes chunks.",
    ),
    AssetCheckSpec(
        "dedupe_ratio_in_bounds",
        asset="deduped_documents",
        description="The share of documents removed as duplicates is within bounds.",
    ),
]


# One step for all four checks: each is a pass over chunks.jsonl that the report shares.
@multi_asset_check(specs=CORPUS_CHECK_SPECS, can_subset=True)
def corpus_checks(
    context: AssetCheckExecutionContext, settings: SettingsResource
) -> Iterator[AssetCheckResult]:
    cfg = settings.load()
    report = pipeline.chunk_report(cfg.corpus_dir)
    selected = {key.name for key in context.selected_asset_check_keys}
    dist = report["sizes"]
    budget = chunk_budget(cfg).max_tokens
    # Enabled = listed in corpus.sources and configured (its last raw run was not "disabled").
    reports = load_reports(cfg.corpus_dir)
    enabled = [s for s in cfg.corpus.sources if reports.get(s, {}).get("status") != "disabled"]
    empty = [s for s in enabled if not report["by_source"].get(s)]
    stats = pipeline.last_dedupe_stats(cfg.corpus_dir)
    ratio = 1 - stats.documents_out / stats.documents_in if stats and stats.documents_in else 0.0
    results = {
        "chunks_have_no_secrets": AssetCheckResult(
            check_name="chunks_have_no_secrets",
            asset_key="chunks",
            passed=not report["leaks"],
            metadata={
                "chunks_with_secrets": len(report["leaks"]),
                "examples": MetadataValue.json(report["leaks"][:10]),
            },
        ),
        "chunk_size_distribution": AssetCheckResult(
            check_name="chunk_size_distribution",
            asset_key="chunks",
            passed=dist["count"] == 0 or (dist["min"] > 0 and dist["median"] <= budget),
            severity=AssetCheckSeverity.WARN,
            metadata={"distribution": MetadataValue.json(dist), "max_tokens": budget},
        ),
        "enabled_sources_non_empty": AssetCheckResult(
            check_name="enabled_sources_non_empty",
            asset_key="chunks",
            passed=not empty,
            metadata={
                "chunks_by_source": MetadataValue.json(report["by_source"]),
                "enabled": MetadataValue.json(enabled),
                "empty": MetadataValue.json(empty),
            },
        ),
        "dedupe_ratio_in_bounds": AssetCheckResult(
            check_name="dedupe_ratio_in_bounds",
            asset_key="deduped_documents",
            passed=ratio <= cfg.corpus.dedupe_ratio_max,
            severity=AssetCheckSeverity.WARN,
            metadata={"duplicate_ratio": round(ratio, 4), "max": cfg.corpus.dedupe_ratio_max},
        ),
    }
    for name, result in results.items():
        if name in selected:
            yield result
