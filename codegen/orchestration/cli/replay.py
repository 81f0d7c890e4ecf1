"""``codegen replay``: serve a recording as an OpenAI-compatible endpoint; import public files."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import click

from codegen.orchestration.cli.exits import Refused
from codegen.orchestration.cli.files import OUTPUT_FILE
from codegen.replay.importers import FORMATS
from codegen.settings import Settings


def recording_settings(settings: Settings, path: Path) -> Settings:
    """Settings for a run whose LLM traffic goes to the recording ``path``.

    The recorder is found through the environment (``CODEGEN_RECORD``), which runs in other
    processes inherit; the response cache is off, so every reply comes from the endpoint
    and lands in the recording (a cache hit would be missing from it).
    """
    from codegen.replay.recording import RECORD_ENV

    path = path.resolve()
    if path.exists() and path.is_dir():
        raise click.UsageError(f"--record {path}: is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.environ[RECORD_ENV] = str(path)
    os.environ["CODEGEN_LLM__CACHE"] = "false"
    return settings.model_copy(update={"llm": settings.llm.model_copy(update={"cache": False})})


@click.group(name="replay")
def replay_group() -> None:
    """Replay recorded model replies instead of calling a model (no tokens, no key)."""


@replay_group.command(name="serve")
@click.argument("recording", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to bind (0: any free one).",
)
@click.option(
    "--log",
    "log_file",
    type=OUTPUT_FILE,
    help="Also append the request log (one JSON object a line) to this file.",
)
def serve(recording: Path, host: str, port: int, log_file: Path | None) -> None:
    """Answer chat completions from RECORDING, keyed by the X-Codegen-* headers.

    Prints OPENAI_BASE_URL=... once listening, then one JSON line per request on stderr.
    A request the recording cannot answer gets HTTP 404 saying what is missing.
    """
    from codegen.replay.recording import read_recording
    from codegen.replay.server import ReplayServer

    loaded = read_recording(recording)  # a bad recording is refused (exits.py)
    try:
        server = ReplayServer(loaded, host=host, port=port, log_file=log_file)
    except OSError as exc:  # the --log file, or the address (a busy port)
        where = exc.filename or f"cannot listen on {host}:{port}"
        raise Refused(f"{where}: {exc.strerror or exc}") from None
    roles = Counter(e.role for e in loaded.entries)
    click.echo(
        f"replaying {len(loaded.entries)} replies for {len(loaded.tasks)} tasks "
        f"({', '.join(f'{r} {n}' for r, n in sorted(roles.items()))}) from {recording}",
        err=True,
    )
    click.echo(f"OPENAI_BASE_URL={server.base_url}")
    sys.stdout.flush()
    try:
        server.serve_forever()
    finally:
        server.stop()


@replay_group.command(name="import")
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), required=True, help="The input's format."
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("out", type=OUTPUT_FILE)
@click.option(
    "--tasks",
    "tasks_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="mapcoder: the task file (codegen eval tasks shape) the rows' tasks come from, so "
    "the derived replies match the request made from it (default: HumanEval for HumanEval "
    "ids, else the row's own prompt, entry_point and sample_io); codet: the task file to "
    "join by prompt (default: HumanEval_for_code_generation.jsonl next to SOURCE); classeval "
    "(required): the task set (ClassEval_data.json, gzip or not), whose skeletons the other "
    "roles' replies are derived from.",
)
@click.option(
    "--tests",
    "tests_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="codet: the generated test cases (default: SOURCE's _test_case twin, when present).",
)
@click.option(
    "--recorded-only",
    is_flag=True,
    help="Only the source's own replies: no replies derived from the prompt for other roles.",
)
def import_cmd(
    fmt: str,
    sources: tuple[Path, ...],
    out: Path,
    tasks_file: Path | None,
    tests_file: Path | None,
    recorded_only: bool,
) -> None:
    """Turn SOURCE (a public generation file: HumanEval, or MapCoder's MBPP) into the
    recording OUT. mapcoder, classeval: several SOURCE files (runs on the same tasks) make one
    recording, file j's replies candidate j's (``codegen eval --candidates N``); a ClassEval
    file with five samples a task gives candidates 0-4."""
    from codegen.replay.importers import DERIVED_NOTES, import_file
    from codegen.replay.recording import write_recording

    started = time.perf_counter()
    source, *more = sources
    if any(out.resolve() == s.resolve() for s in sources):
        raise click.UsageError("OUT must not be SOURCE")
    try:
        entries = import_file(
            fmt,
            source,
            recorded_only=recorded_only,
            tasks_file=tasks_file,
            tests_file=tests_file,
            more=tuple(more),
        )
    except ValueError as exc:  # RecordingError, and any other value the sources do not fit
        raise Refused(str(exc)) from None
    notes = "" if recorded_only else DERIVED_NOTES
    out.parent.mkdir(parents=True, exist_ok=True)
    count = write_recording(
        out, entries, source=f"{fmt}:{'+'.join(s.name for s in sources)}", notes=notes
    )
    by_source = Counter(f"{e.role} ({e.source})" for e in entries)
    tasks = len({e.task for e in entries})
    click.echo(
        f"{out}: {count} replies for {tasks} tasks: "
        + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items()))
        + f" ({time.perf_counter() - started:.1f}s)"
    )
