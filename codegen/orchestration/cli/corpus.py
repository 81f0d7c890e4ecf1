"""``codegen corpus build``: materialize the corpus assets through Dagster, with progress."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from codegen.composition import embedder_config
from codegen.corpus.sources import SOURCES
from codegen.json_types import JSONObject
from codegen.orchestration.instance import configured_instance
from codegen.retrieval.embedders import export_in_background
from codegen.settings import Settings, get_settings


def _summary(name: str, meta: JSONObject) -> str:
    keys = {
        "raw": ("status", "documents", "fetched", "skipped", "message"),
        "clean_documents": ("documents_in", "documents", "dropped", "secrets_redacted"),
        "deduped_documents": ("exact_duplicates_removed", "near_duplicates_removed", "clusters"),
        "chunks": ("chunks", "new_chunks", "removed_chunks", "cache_hits"),
        "index": ("total", "embedded", "deleted", "unchanged", "rows"),
    }
    wanted = keys["raw"] if name.startswith("raw_documents") else keys.get(name, tuple(meta))
    parts = []
    for k in wanted:
        if k in meta and meta[k] not in ("", None, {}):
            v = meta[k]
            parts.append(f"{k}={json.dumps(v) if isinstance(v, dict) else v}")
    return " ".join(parts)


@click.group("corpus")
def corpus_group() -> None:
    """Build the retrieval corpus (raw -> clean -> dedupe -> chunks)."""


@corpus_group.command("build")
@click.option(
    "--local",
    "local_paths",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory or git checkout to index (repeatable); default: corpus.local_paths.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(SOURCES),
    help="Source to refresh (repeatable); default: corpus.sources.",
)
@click.option(
    "--index/--no-index",
    "with_index",
    default=True,
    show_default=True,
    help="Also sync the vector index (embeds only new chunks) so `codegen search` sees them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the stage results as JSON.")
def build(
    local_paths: tuple[Path, ...], sources: tuple[str, ...], with_index: bool, as_json: bool
) -> None:
    """Fetch sources and rebuild chunks incrementally (unchanged content is not redone)."""
    settings = get_settings()
    for p in local_paths:
        if not p.is_dir():
            raise click.UsageError(f"--local {p}: not a directory")
    update: dict[str, list[str]] = {}  # CorpusSettings fields: local_paths, sources
    if local_paths:
        update["local_paths"] = [str(p.resolve()) for p in local_paths]
    chosen = list(sources) or list(settings.corpus.sources)
    if local_paths and "local" not in chosen:
        chosen.insert(0, "local")
    # Sources named on the command line are enabled for this build.
    update["sources"] = sorted(set(settings.corpus.sources) | set(chosen), key=SOURCES.index)
    settings = settings.model_copy(update={"corpus": settings.corpus.model_copy(update=update)})
    get_settings.cache_clear()
    # The assets read settings themselves: hand them this build's choices through env.
    os.environ["CODEGEN_CORPUS__LOCAL_PATHS"] = json.dumps(settings.corpus.local_paths)
    os.environ["CODEGEN_CORPUS__SOURCES"] = json.dumps(settings.corpus.sources)

    click.echo(f"corpus build: sources {', '.join(chosen)} -> {settings.corpus_dir}", err=True)
    # A first build's model export (about 20 s) runs beside the corpus stages, which use
    # one core; the index stage then finds the model ready (or waits for the rest).
    exporting = export_in_background(embedder_config(settings)) if with_index else None
    if exporting:
        click.echo(
            f"  exporting the embedder's model to {settings.model_cache_dir} (once per user)",
            err=True,
        )
    try:
        _build(settings, chosen, with_index, as_json)
    finally:
        if exporting:
            exporting.wait()  # it never outlives the command that started it


def _build(settings: Settings, chosen: list[str], with_index: bool, as_json: bool) -> None:
    from codegen.orchestration.launch import StageResult, build_corpus, build_index

    instance = configured_instance(settings)
    start = time.monotonic()  # the build itself, after imports and instance start-up

    def on_stage(stage: StageResult) -> None:
        mark = "ok" if stage.success else "FAILED"
        took = time.monotonic() - start
        detail = _summary(stage.name, stage.metadata)
        click.echo(f"  [{took:6.1f}s] {stage.name}: {mark} {detail}", err=True)

    results = build_corpus(instance, chosen, settings, on_stage)
    if with_index and all(r.success for r in results):
        click.echo("  indexing: embedding new chunks (the first build takes minutes)", err=True)
        results += build_index(instance, settings, on_stage)
    elapsed = time.monotonic() - start
    failed = [r.name for r in results if not r.success]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "elapsed_s": round(elapsed, 2),
                    "stages": {r.name: r.metadata for r in results},
                    "failed": failed,
                },
                default=str,
            )
        )
    else:
        chunks = next((r.metadata for r in results if r.name == "chunks"), {})
        click.echo(
            f"{chunks.get('chunks', 0)} chunks ({chunks.get('new_chunks', 0)} new) "
            f"in {elapsed:.1f}s -> {settings.corpus_dir / 'chunks.jsonl'}"
        )
    if failed:
        raise click.ClickException(f"corpus build failed at: {', '.join(failed)}")
