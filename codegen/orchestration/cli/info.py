"""``codegen info``: where things live and what is configured."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict
from urllib.parse import urlsplit

import click

from codegen.agents.structured import StructuredModes, structured_modes_file
from codegen.composition import llm_route, sandbox_image, store_config
from codegen.corpus.store import chunks_path
from codegen.orchestration.instance import postgres_url
from codegen.requests.route import daemon_environment, key_fingerprint
from codegen.retrieval.index import open_store
from codegen.settings import Settings, config_file, default_dagster_home, get_settings

if TYPE_CHECKING:
    from codegen.retrieval.grounding import Grounding


def instance_storage() -> str:
    """Where the Dagster instance keeps runs and events; a URL's credentials never shown."""
    url = postgres_url()
    if not url:
        return "sqlite"
    parts = urlsplit(url)
    return f"postgres {parts.hostname}:{parts.port or 5432}{parts.path}"


def index_grounding(settings: Settings) -> Grounding | str:
    """The index against the corpus's chunks (none / partial with the fraction / full), or why
    it could not be read."""
    from codegen.retrieval.grounding import corpus_chunk_ids, grounding_of, no_index

    corpus = corpus_chunk_ids(chunks_path(settings.corpus_dir))
    store = store_config(settings)
    local = Path(store.uri)
    if store.kind == "lancedb" and (not local.is_dir() or not any(local.iterdir())):
        return no_index(corpus)
    try:
        from codegen.retrieval.index import open_store

        return grounding_of(corpus, open_store(store).ids())
    except Exception as exc:  # unreadable: say so rather than guess
        return " ".join(str(exc).split())[:200]


class DaemonState(TypedDict):
    serving: bool | None  # None: unknown (``error`` says why)
    error: NotRequired[str]
    endpoint: NotRequired[str | None]  # the base URL the daemon's runs call
    same_key: NotRequired[bool | None]  # whether the daemon has this shell's key


def daemon_state(settings: Settings) -> DaemonState:
    """Whether a dagster-daemon serves this instance, and the endpoint its runs would call."""
    from codegen.orchestration.cli.generate import daemon_running
    from codegen.orchestration.instance import configured_instance

    try:
        instance = configured_instance(settings)
        try:
            serving = daemon_running(instance)
        finally:
            instance.dispose()
    except Exception as exc:
        return {"serving": None, "error": " ".join(str(exc).split())[:200]}
    published = daemon_environment(settings.home) if serving else None
    return {
        "serving": serving,
        "endpoint": published.base_url if published else None,
        # Queued requests run on this shell's endpoint only when the daemon has the same key.
        "same_key": (published.key == key_fingerprint(settings.home)) if published else None,
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def info(as_json: bool) -> None:
    """Show the effective configuration (it never holds secrets)."""
    settings = get_settings()
    route = llm_route(settings)
    store = store_config(settings)
    # Weaviate tunes its own index; opening it here would need the server.
    ann = open_store(store).ann_info() if store.kind == "lancedb" else None
    grounding = index_grounding(settings)
    data = {
        "config_file": str(config_file()),
        "config_file_exists": config_file().exists(),
        "dagster_home": os.environ.get("DAGSTER_HOME") or str(default_dagster_home(settings)),
        "instance_storage": instance_storage(),
        "endpoint": route.to_dict(),
        "daemon": daemon_state(settings),
        "index": (
            {"status": "unknown", "error": grounding}
            if isinstance(grounding, str)
            else grounding.to_dict()
        ),
        "settings": settings.public_dict(),
        # How each endpoint and model was last found to take JSON requests.
        "structured_outputs": StructuredModes(structured_modes_file(settings.cache_dir)).all(),
        # The large index's faiss sidecar: rows, lists, calibrated probe count and its figures.
        "ann_index": ann,
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    found = "" if data["config_file_exists"] else " (not found: built-in defaults and CODEGEN_*)"
    click.echo(f"config file   {data['config_file']}{found}")
    click.echo(f"data dir      {settings.home}")
    click.echo(f"dagster home  {data['dagster_home']}")
    click.echo(f"instance      {data['instance_storage']} (DAGSTER_POSTGRES_URL selects Postgres)")
    click.echo(f"environment   {settings.env.value}")
    models = ", ".join(
        [f"default {route.default.model}"]
        + [f"{role} {m.model}" for role, m in sorted(route.roles.items())]
    )
    click.echo(f"endpoint      {route.base_url} ({models})")
    if any(c.to_dict() for c in route.candidates):  # drafts with their own model or endpoint
        programmer = route.roles.get("programmer", route.default)
        for i, c in enumerate(route.candidates):
            where = c.base_url or route.base_url
            key = f", key from {c.api_key_env}" if c.api_key_env else ""
            model = c.applied_to(programmer).model
            click.echo(f"candidate {i:<3} {model} at {where}{key}")
    daemon = data["daemon"]
    if daemon["serving"] is None:
        click.echo(f"daemon        unknown ({daemon['error']})")
    elif not daemon["serving"]:
        click.echo("daemon        none serves this instance: `codegen generate` runs here")
    else:
        key = {True: "the same key", False: "another key", None: "key unknown"}[daemon["same_key"]]
        click.echo(f"daemon        serving; its runs call {daemon['endpoint']} ({key})")
    if isinstance(grounding, str):
        click.echo(f"index         unknown ({grounding})")
    else:
        click.echo(f"index         {grounding.describe()}")
    click.echo(f"sandbox       {settings.sandbox.backend} ({sandbox_image(settings.sandbox)})")
    click.echo(f"vector store  {settings.retrieval.vector_store} at {settings.index_uri}")
    if ann:
        at = ann["calibration"]["at_nprobe"]
        figures = ", ".join(
            f"{group} {fig['recall_at_10_mean']} (min {fig['recall_at_10_min']})"
            for group, fig in at.items()
        )
        click.echo(
            f"ann index     faiss IVF{ann['nlist']},SQfp16 over {ann['rows']} rows, nprobe "
            f"{ann['nprobe']} (calibrated recall@10: {figures})"
        )
    modes = data["structured_outputs"] or {"(no endpoint used yet)": "json_schema first"}
    for endpoint_model, mode in sorted(modes.items()):
        click.echo(f"json mode     {mode} for {endpoint_model}")
