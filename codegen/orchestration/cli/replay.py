"""``codegen replay``: serve a recording as an OpenAI-compatible endpoint; import public files."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import click

from codegen.json_types import JSONObject
from codegen.orchestration.cli.exits import Refused
from codegen.orchestration.cli.files import OUTPUT_FILE
from codegen.replay.importers import FORMATS

if TYPE_CHECKING:
    from codegen.evaluation.report import Report


class RecordingRun:
    """One command's ``--record FILE``: the file is checked before any work (refused, exit 2,
    when it cannot be written or is not a recording), and closed after it: the run's outcome
    line is appended and one line on stderr says how many replies were recorded. A run that
    recorded nothing says so in one line and fails (exit 1, or the run's own non-zero exit).

    The crew appends the replies itself (``FileRecorder``), in whichever process runs it; the
    caller hands it ``path`` (a request's run tag, an evaluation session) and sets
    ``outcome`` once the run has ended.
    """

    def __init__(self, path: Path) -> None:
        from codegen.replay.recording import replies_in

        self.path = writable_recording(path)
        self.before = replies_in(self.path)
        self.outcome: JSONObject = {}

    def evaluated(self, report: Report, scored: int, tasks: int) -> None:
        """The outcome of an evaluation (``codegen eval``): its verdict and its pass@k."""
        self.outcome = {
            "status": "outage" if report.outage else "scored",
            "reason": report.outage or f"{scored} of {tasks} tasks scored",
            "pass_at_k": report.result.get("pass_at_k"),
        }

    def __enter__(self) -> RecordingRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        from codegen.replay.recording import FileRecorder, replies_in

        recorded = replies_in(self.path) - self.before
        if recorded <= 0:
            line = f"--record {self.path}: nothing recorded (no model reply reached this run)"
            if exc is None:
                raise click.ClickException(line)
            click.echo(f"codegen: {line}", err=True)
            return
        outcome = self.outcome or {"status": "error", "reason": _ended_by(exc)}
        FileRecorder(self.path).close_run({**outcome, "replies": recorded})
        click.echo(
            f"recorded {recorded} replies to {self.path} (replay: codegen replay serve "
            f"{self.path})",
            err=True,
        )


def _ended_by(exc: BaseException | None) -> str:
    if isinstance(exc, click.ClickException):
        return exc.format_message().splitlines()[0]
    return type(exc).__name__ if exc is not None else "ended"


def writable_recording(path: Path) -> Path:
    """``path`` made absolute, once it can take a recording: a new file in a folder that can
    be created and written, or an existing recording. Refused (exit 2) otherwise."""
    from codegen.replay.recording import RecordingError, read_text_capped

    path = path.resolve()
    if path.is_dir():
        raise Refused(f"--record {path}: is a directory")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise Refused(f"--record {path}: cannot write it: {exc.strerror or exc}") from None
    if not existed:
        path.unlink()  # the first reply creates it: a run that records nothing leaves no file
        return path
    try:
        text = read_text_capped(path)
    except RecordingError as exc:
        raise Refused(f"--record {exc}") from None
    first = text.lstrip().partition("\n")[0]
    if first and '"codegen_recording"' not in first:
        raise Refused(f"--record {path}: not a recording; it would be appended to")
    return path


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
