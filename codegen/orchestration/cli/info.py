"""``codegen info``: where things live and what is configured."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict
from urllib.parse import urlsplit

import click

from codegen.agents.llm import StructuredModes, structured_modes_file
from codegen.composition import (
    llm_route,
    sandbox_image,
    sandbox_limits,
    sandbox_packages,
    store_config,
)
from codegen.corpus.store import chunks_path
from codegen.orchestration.instance import postgres_url
from codegen.requests.route import KEY_ENV, daemon_environment, key_fingerprint, refusal
from codegen.retrieval.index import open_store
from codegen.sandbox.backends import backend_label, backend_names, memory_scopes
from codegen.sandbox.errors import SandboxError
from codegen.sandbox.protocol import kernel_fence
from codegen.settings import (
    Origin,
    SandboxSettings,
    Settings,
    config_file,
    default_dagster_home,
    get_settings,
    setting_origins,
)

if TYPE_CHECKING:
    from codegen.agents.llm import LLMRoute
    from codegen.assets.corpus_builds import BuildState
    from codegen.json_types import JSONObject
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


def index_build_record(settings: Settings) -> dict[str, Any] | str | None:
    """How the index's vectors were made (``VectorStore.build_record``: the last build's
    runtime, device and precision, and vectors per kind of build), or why it is not known."""
    store = store_config(settings)
    local = Path(store.uri)
    if store.kind == "lancedb" and (not local.is_dir() or not any(local.iterdir())):
        return None
    try:
        record = open_store(store).build_record()
    except Exception as exc:  # unreadable: say so rather than guess
        return " ".join(str(exc).split())[:200]
    if record:
        return record
    if store.kind == "lancedb":
        return "no build recorded for these vectors (built before build records were kept)"
    return f"not recorded ({store.kind} keeps no build record)"


def build_line(record: dict[str, Any] | str | None, device: str) -> str:
    """The ``built on`` line of ``codegen info``: the last build, the vectors per kind of
    build, and where the next build embeds ([retrieval] device)."""
    if record is None:
        return f"no build yet; the next embeds on device {device}"
    if isinstance(record, str):
        return f"{record}; the next embeds on device {device}"
    last = record.get("last") or {}
    counts = ", ".join(f"{n} by {kind}" for kind, n in (record.get("embedded_by") or {}).items())
    space = f"; space {last['space']}" if last.get("space") else ""
    return (
        f"last build {last.get('device', '?')} {last.get('precision', '?')} "
        f"({last.get('runtime', '?')}){space}; vectors: {counts or 'none'}; "
        f"the next embeds on device {device}"
    )


class DaemonState(TypedDict):
    serving: bool | None  # None: unknown (``error`` says why)
    error: NotRequired[str]
    endpoint: NotRequired[str | None]  # the daemon's own base URL (None: not published yet)
    same_key: NotRequired[bool | None]  # whether the daemon has this shell's key
    has_key: NotRequired[bool | None]  # whether the daemon has an OPENAI_API_KEY at all
    shell_has_key: NotRequired[bool]  # whether this shell has one
    refusal: NotRequired[str | None]  # why a request queued from this shell would be refused


def instance_state(settings: Settings, route: LLMRoute) -> tuple[DaemonState, BuildState | None]:
    """Whether a dagster-daemon serves this instance (and the endpoint and key its runs would
    use), and the corpus build under way, if any: one open of the instance for both."""
    from codegen.assets.corpus_builds import build_in_progress
    from codegen.orchestration.cli.generate import daemon_running
    from codegen.orchestration.instance import configured_instance

    try:
        instance = configured_instance(settings)
        try:
            serving = daemon_running(instance)
            building = build_in_progress(instance)
        finally:
            instance.dispose()
    except Exception as exc:
        return {"serving": None, "error": " ".join(str(exc).split())[:200]}, None
    published = daemon_environment(settings.home) if serving else None
    mine = key_fingerprint(settings.home)
    daemon: DaemonState = {
        "serving": serving,
        "endpoint": published.base_url if published else None,
        # Queued requests run on this shell's endpoint only when the daemon has the same key.
        "same_key": (published.key == mine) if published else None,
        "has_key": (published.key is not None) if published else None,
        "shell_has_key": mine is not None,
        "refusal": refusal(settings.home, route, published) if published else None,
    }
    return daemon, building


def daemon_line(daemon: DaemonState) -> str:
    """What ``codegen info`` says of the daemon, keys included, in plain words."""
    if daemon["serving"] is None:
        return f"unknown ({daemon.get('error')})"
    if not daemon["serving"]:
        return "none serves this instance: `codegen generate` runs here"
    if daemon.get("endpoint") is None:
        return "serving; it has not yet said which endpoint and key it uses"
    own = f"serving (its own endpoint {daemon['endpoint']})"
    theirs, mine = daemon.get("has_key"), daemon.get("shell_has_key")
    if daemon.get("same_key"):
        keys = (
            f"it has this shell's {KEY_ENV}"
            if mine
            else f"neither it nor this shell has an {KEY_ENV}"
        )
        if not daemon.get("refusal"):
            without = "" if mine else " without a key"
            return f"{own}; {keys}: queued requests run on this shell's endpoint{without}"
        # The keys agree, yet the daemon refuses this shell's endpoint (route.py).
        return f"{own}; {keys}, but it refuses requests queued from here: {daemon['refusal']}"
    if not theirs:
        keys = f"it has no {KEY_ENV} and this shell has one"
    elif not mine:
        keys = f"it has an {KEY_ENV} and this shell has none"
    else:
        keys = f"it has a different {KEY_ENV} from this shell's"
    return f"{own}; {keys}: queued requests are refused (--launch here runs them here)"


def index_lines(grounding: Grounding | str, building: BuildState | None) -> list[str]:
    """What ``codegen info`` says of the index, one line each (the first is the status)."""
    if isinstance(grounding, str):
        lines = [f"unknown ({grounding})"]
    elif building is None:
        lines = [grounding.describe()]
    else:
        stages = ", ".join(building["assets"]) or "corpus"
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(building["since"]))
        runs = len(building["runs"])
        lines = [
            f"{grounding.while_building().describe()}; {runs} run{'s' if runs > 1 else ''} "
            f"of {stages} in progress since {started}"
        ]
    return lines


def sandbox_line(sandbox: SandboxSettings) -> str:
    """The backend, the image tag and the package set it was built with (or the error)."""
    try:
        packages = sandbox_packages(sandbox)
        image = sandbox_image(sandbox)
    except SandboxError as exc:
        return f"{sandbox.backend} (bad package set: {exc})"
    label = backend_label(sandbox.backend, sandbox.bwrap_host_usr, image=image)
    return (
        f"{label} ({image}; packages {packages.describe()}; backends {', '.join(backend_names())})"
    )


def fence_line(fence: str) -> str:
    """What ``codegen info`` says of the file fence around a candidate's process."""
    if fence.startswith("landlock"):
        return (
            f"{fence}: a candidate writes only its own folder, reads only what "
            "docs/methods.md lists (this host's kernel: both backends run on it)"
        )
    return f"{fence} (this host's kernel: both backends run on it): separate work folders only"


def settings_lines(values: JSONObject, origins: dict[str, Origin]) -> list[str]:
    """The settings not at their defaults, one line each: the key, its value and where it came
    from (the variable, or the file's path); the others summed up in one line."""
    lines = []
    for key, origin in origins.items():
        if origin.source == "default":
            continue
        value: object = values
        for part in key.split("."):
            value = value[part] if isinstance(value, dict) else value
        lines.append(f"{key} = {json.dumps(value)}  ({origin.name})")
    width = max((line.index(" = ") for line in lines), default=0)
    lines = [f"{line[: line.index(' = ')]:<{width}}{line[line.index(' = ') :]}" for line in lines]
    defaults = sum(o.source == "default" for o in origins.values())
    lines.append(f"{defaults} others at their defaults (`codegen info --json`: all, with sources)")
    return lines


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
    daemon, building = instance_state(settings, route)
    build = index_build_record(settings)
    origins = setting_origins(settings)
    data = {
        "config_file": str(config_file()),
        "config_file_exists": config_file().exists(),
        "dagster_home": os.environ.get("DAGSTER_HOME") or str(default_dagster_home(settings)),
        "instance_storage": instance_storage(),
        "endpoint": route.to_dict(),
        "daemon": daemon,
        "index": {
            **(
                {"status": "unknown", "error": grounding}
                if isinstance(grounding, str)
                else grounding.to_dict()
            ),
            # The corpus-build runs not ended yet (None: none): the index may still grow.
            "building": building,
            # How its vectors were made: runtime, device, precision, vectors per kind of build.
            "build": build,
        },
        "settings": settings.public_dict(),
        # Where each effective setting came from: {"llm.max_rounds": {"source": "environment",
        # "from": "CODEGEN_LLM__MAX_ROUNDS"}}; "file" with the path; "default" with none.
        "setting_sources": {key: o.to_dict() for key, o in origins.items()},
        # How each endpoint and model was last found to take JSON requests.
        "structured_outputs": StructuredModes(structured_modes_file(settings.cache_dir)).all(),
        # The large index's faiss sidecar: rows, lists, calibrated probe count and its figures.
        "ann_index": ann,
        # The file fence a candidate's process enters in the sandbox (this host's kernel):
        # "landlock (ABI n)" or "none: <why>".
        "sandbox_fence": kernel_fence(),
        # Per backend, what its memory limit covers here: the whole job, or each process.
        "sandbox_memory": memory_scopes(),
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
    click.echo(f"daemon        {daemon_line(daemon)}")
    for i, line in enumerate(index_lines(grounding, building)):
        click.echo(f"{'index' if i == 0 else '':<14}{line}")
    click.echo(f"{'built on':<14}{build_line(build, settings.retrieval.device)}")
    click.echo(f"sandbox       {sandbox_line(settings.sandbox)}")
    click.echo(f"fence         {fence_line(data['sandbox_fence'])}")
    memory = f"{sandbox_limits(settings.sandbox).memory_mb} MB"
    for i, (name, scope) in enumerate(data["sandbox_memory"].items()):
        click.echo(f"{'memory' if i == 0 else '':<14}{name}: {memory} for {scope}")
    click.echo(f"vector store  {settings.retrieval.vector_store} at {settings.index_uri}")
    for i, line in enumerate(settings_lines(settings.public_dict(), origins)):
        click.echo(f"{'settings' if i == 0 else '':<14}{line}")
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
