"""``codegen info``: where things live and what is configured."""

from __future__ import annotations

import json

import click

from settings import config_file, default_dagster_home, get_settings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def info(as_json: bool) -> None:
    """Show the effective configuration (it never holds secrets)."""
    settings = get_settings()
    data = {
        "config_file": str(config_file()),
        "dagster_home": str(default_dagster_home(settings)),
        "settings": settings.public_dict(),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"config file   {data['config_file']}")
    click.echo(f"data dir      {settings.home}")
    click.echo(f"dagster home  {data['dagster_home']}")
    click.echo(f"environment   {settings.env.value}")
    click.echo(f"sandbox       {settings.sandbox.backend} ({settings.sandbox.image})")
    click.echo(f"vector store  {settings.retrieval.vector_store} at {settings.index_uri}")
