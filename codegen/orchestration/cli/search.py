"""``codegen search "QUERY"``: ranked hits from the chunk index (hybrid by default)."""

from __future__ import annotations

import json
import sys
import time

import click

from codegen.composition import embedder_config, store_config
from codegen.corpus.store import chunks_path
from codegen.orchestration.cli.exits import Refused
from codegen.retrieval.grounding import corpus_chunk_ids, grounding_of
from codegen.settings import TOP_K, bounds_of, get_settings

MAX_QUERY_CHARS = 2000  # a query is a sentence or a snippet, not a document


@click.command()
@click.argument("query")
@click.option(
    "-k", "k", type=click.IntRange(**bounds_of(TOP_K)), default=None, help="Hits to show."
)
@click.option("--source", default=None, help="Only chunks from this corpus source.")
@click.option("--language", default=None, help="Only chunks in this language.")
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "vector", "keyword"]),
    default="hybrid",
    show_default=True,
    help="Rank fusion of both, dense vectors only, or BM25 only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def search(
    query: str, k: int | None, source: str | None, language: str | None, mode: str, as_json: bool
) -> None:
    """Search the chunk index; prints uri, line span, score and text of each hit."""
    from codegen.retrieval.embedders import EmbedderError, make_embedder
    from codegen.retrieval.index import IndexRetriever, open_store

    query = query.strip()
    if not query:
        raise click.UsageError("the query is empty; say what code you are looking for")
    if len(query) > MAX_QUERY_CHARS:
        raise click.UsageError(f"the query has {len(query)} characters; at most {MAX_QUERY_CHARS}")
    if "\x00" in query:
        raise click.UsageError("the query contains a NUL byte")
    settings = get_settings()
    k = k or settings.retrieval.top_k
    try:
        store = store_config(settings)
        index = open_store(store)
        rows = index.count()
    except ValueError as exc:  # settings that name no usable store
        raise Refused(str(exc)) from exc
    where = store.uri if store.kind == "lancedb" else f"{store.kind} {store.weaviate_url}"
    if rows == 0:
        # Missing and empty read the same to the user: nothing to search yet.
        raise Refused(
            f"the index at {where} is empty or missing; build it with 'codegen corpus build' "
            "and materialize the 'index' asset"
        )
    # A search during a build answers from the part embedded so far: say how much that is.
    grounding = grounding_of(corpus_chunk_ids(chunks_path(settings.corpus_dir)), index.ids())
    if grounding.status != "full":
        click.echo(f"codegen: warning: index {grounding.describe()}", err=True)
    started = time.perf_counter()
    try:
        retriever = IndexRetriever(index, make_embedder(embedder_config(settings)))
        hits = retriever.search(query, k, source=source, mode=mode, language=language)
    except (EmbedderError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    elapsed = time.perf_counter() - started
    if as_json:
        payload = {
            "query": query,
            "mode": mode,
            "k": k,
            "grounding": grounding.to_dict(),
            "hits": [h.to_dict() for h in hits],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    if not hits:
        click.echo(f"no hits for {query!r} among {rows} chunks", err=True)
        return
    for rank, hit in enumerate(hits, start=1):
        click.echo(f"{rank:>2}. {hit.citation}  score={hit.score:.4f}  [{hit.source}]")
        for line in hit.text.splitlines()[:12]:
            click.echo(f"      {line}")
        click.echo("")
    print(f"{len(hits)} hits in {elapsed:.2f}s", file=sys.stderr)
