"""``codegen info``: where things live and what is configured."""

from __future__ import annotations

import json
import os
from urllib.parse import urlsplit

import click

from codegen.agents.llm import StructuredModes, structured_modes_file
from codegen.composition import sandbox_image
from codegen.orchestration.instance import postgres_url
from codegen.settings import config_file, default_dagster_home, get_settings


def instance_storage() -> str:
    """Where the Dagster instance keeps runs and events; a URL's credentials never shown."""
    url = postgres_url()
    if not url:
        return "sqlite"
    parts = urlsplit(url)
    return f"postgres {parts.hostname}:{parts.port or 5432}{parts.path}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def info(as_json: bool) -> None:
    """Show the effective configuration (it never holds secrets)."""
    settings = get_settings()
    data = {
        "config_file": str(config_file()),
        "dagster_home": os.environ.get("DAGSTER_HOME") or str(default_dagster_home(settings)),
        "instance_storage": instance_storage(),
        "settings": settings.public_dict(),
        # How each endpoint and model was last found to take JSON requests.
        "structured_outputs": StructuredModes(structured_modes_file(settings.cache_dir)).all(),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"config file   {data['config_file']}")
    click.echo(f"data dir      {settings.home}")
    click.echo(f"dagster home  {data['dagster_home']}")
    click.echo(f"instance      {data['instance_storage']} (DAGSTER_POSTGRES_URL selects Postgres)")
    click.echo(f"environment   {settings.env.value}")
    click.echo(f"sandbox       {settings.sandbox.backend} ({sandbox_image(settings.sandbox)})")
    click.echo(f"vector store  {settings.retrieval.vector_store} at {settings.index_uri}")
    modes = data["structured_outputs"] or {"(no endpoint used yet)": "json_schema first"}
    for endpoint_model, mode in sorted(modes.items()):
        click.echo(f"json mode     {mode} for {endpoint_model}")
