"""Corpus assets: raw documents per source, then clean, dedupe and chunk downstream."""

from collections.abc import Iterator
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
)

from assets.resources import SettingsResource
from corpus.connectors.local import LocalScanStats, iter_local_documents, stdlib_path
from corpus.store import raw_path, write_jsonl_atomic

CORPUS_SOURCES = ["local"]
source_partitions = StaticPartitionsDefinition(CORPUS_SOURCES)


@asset(
    partitions_def=source_partitions,
    group_name="corpus",
    kinds={"python"},
    description="Raw documents fetched from one source, stored as JSON lines.",
)
def raw_documents(context: AssetExecutionContext, settings: SettingsResource) -> MaterializeResult:
    cfg = settings.load()
    roots = [Path(p) for p in cfg.corpus.local_paths] or [stdlib_path()]
    target = raw_path(cfg.corpus_dir, context.partition_key)
    stats = LocalScanStats()
    size = 0

    def records() -> Iterator[dict]:
        nonlocal size
        for n, doc in enumerate(iter_local_documents(roots, stats=stats), start=1):
            size += len(doc.text)
            if n % 500 == 0:
                context.log.info(f"{n} documents read")
            yield doc.to_dict()

    # Atomic write: a failed run never loses the last good set.
    count = write_jsonl_atomic(target, records())
    return MaterializeResult(
        metadata={
            "documents": count,
            "characters": size,
            "files_seen": stats.files_seen,
            "skipped": MetadataValue.json(stats.skipped),
            "roots": MetadataValue.json([str(r) for r in roots]),
            "path": MetadataValue.path(str(target)),
        }
    )
