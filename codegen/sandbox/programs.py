"""Run several whole programs on the same input streams and bring back what each printed, to
compare them: the ``observe`` mode of ``inside/program_driver.py``.

One sandbox execution runs every program on every stream (stdin text and arguments), each run
a fresh fenced process (``inside/program_run.py``, as a plain judge runs a program) under
``time_limit_s``, killed at it or when its stdout passes ``MAX_STDOUT_BYTES``. Nothing is
judged, there is no expected output: per program and stream the exit code, whether it timed
out or was cut at the cap, and its stdout under the comparison (``exact``,
``trailing_whitespace``, ``float``: ``codegen.agents.spec.program``) as a digest with a short
prefix (for ``float`` the tokens too, when short, for comparing numbers within the
tolerance). A program that times out ``max_timeouts`` times is not run on the rest: those
runs come back ``never_ran``. What the box prints is the programs' to forge only through the
driver: lines are believed only under the batch's token, and each field is read with its type
checked and its length cut.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace

from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files
from codegen.sandbox.types import ExecResult, Limits

# A plain judge's cap per run; APPS scoring's batches use the same one.
MAX_STDOUT_BYTES = 1_000_000
PREFIX_CHARS = 120  # of each run's compared stdout, for a record
MAX_TOKEN_CHARS = 4000  # a float comparison's tokens travel whole up to this length
RUN_SLACK_S = 1.0  # a run's own cost beyond its limit (fork, exec, interpreter start)
_LINE_BYTES = PREFIX_CHARS * 6 + MAX_TOKEN_CHARS * 6 + 400  # one run's JSON, escaped


@dataclass(frozen=True)
class Stream:
    """One run's input: stdin text and arguments."""

    stdin: str
    arguments: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSeen:
    """What one program did on one stream (``never_ran``: not run, every other field empty)."""

    exit_code: int | None = None  # minus the signal when killed
    timed_out: bool = False
    output_capped: bool = False
    digest: str = ""  # sha256 of the stdout under the comparison
    prefix: str = ""
    tokens: str | None = None  # float comparison: the stdout's tokens, when short
    duration_s: float = 0.0
    never_ran: bool = False


NEVER_RAN = RunSeen(never_ran=True)


def _str(value: JSONValue, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _seen(data: JSONValue) -> RunSeen:
    if not isinstance(data, dict) or data.get("not_run") is True:
        return NEVER_RAN
    code = data.get("exit")
    tokens = data.get("tokens")
    duration = data.get("duration_s")
    return RunSeen(
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        timed_out=data.get("timed_out") is True,
        output_capped=data.get("output_capped") is True,
        digest=_str(data.get("digest"), 64),
        prefix=_str(data.get("prefix"), PREFIX_CHARS),
        tokens=tokens if isinstance(tokens, str) and len(tokens) <= MAX_TOKEN_CHARS else None,
        duration_s=float(duration) if isinstance(duration, int | float) else 0.0,
    )


def _parse(result: ExecResult, token: str, count: int, streams: int) -> dict[int, list[RunSeen]]:
    """Per program the driver reported under ``token``, its runs (as many as ``streams``)."""
    found: dict[int, list[RunSeen]] = {}
    for line in result.stdout.splitlines():
        if not line.startswith(token + " "):
            continue
        try:
            data = json.loads(line[len(token) + 1 :])
        except ValueError:
            continue
        index = data.get("i") if isinstance(data, dict) else None
        runs = data.get("runs") if isinstance(data, dict) else None
        if isinstance(index, int) and 0 <= index < count and isinstance(runs, list):
            seen = [_seen(r) for r in runs[:streams]]
            found[index] = seen + [NEVER_RAN] * (streams - len(seen))
    return found


def _batch(
    programs: Sequence[str],
    streams: Sequence[Stream],
    comparison: str,
    time_limit_s: float,
    max_timeouts: int,
    limits: Limits,
    own_pid: bool,
) -> JSONObject:
    return {
        "mode": "observe",
        "programs": list(programs),
        "streams": [{"stdin": s.stdin, "arguments": list(s.arguments)} for s in streams],
        "comparison": comparison,
        "timeout_s": time_limit_s,
        "max_timeouts": max_timeouts,
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "max_output_bytes": MAX_STDOUT_BYTES,
        "prefix_chars": PREFIX_CHARS,
        "max_token_chars": MAX_TOKEN_CHARS,
        "own_pid_namespace": own_pid,
    }


def observe_programs(
    sandbox: Sandbox,
    programs: Sequence[str],
    streams: Sequence[Stream],
    comparison: str,
    time_limit_s: float,
    limits: Limits | None = None,
    max_timeouts: int = 1,
) -> list[list[RunSeen]]:
    """Per program of ``programs`` (whole sources, run as ``python3 prog.py ARGS``), what it did
    on each of ``streams``, in ONE sandbox execution (``limits`` gives the memory). Programs a
    cut-short execution never reached run again in another; a program still unreported
    after that (it ended its own driver) comes back as never run."""
    if not programs:
        return []
    base = limits or Limits()
    per_program = len(streams) * (time_limit_s + RUN_SLACK_S)
    out: dict[int, list[RunSeen]] = {}
    todo = list(range(len(programs)))
    while todo:
        token = secrets.token_hex(16)
        batch = _batch(
            [programs[i] for i in todo],
            streams,
            comparison,
            time_limit_s,
            max_timeouts,
            base,
            own_pid_namespace(sandbox),
        )
        whole = replace(
            base,
            timeout_s=len(todo) * per_program + 10.0,
            max_output_bytes=max(base.max_output_bytes, len(todo) * len(streams) * _LINE_BYTES),
        )
        files = {
            **driver_files("program_driver.py"),
            "token.txt": token,
            "batch.json": json.dumps(batch),
        }
        found = _parse(sandbox.run(files, DRIVER_COMMAND, whole), token, len(todo), len(streams))
        out.update({todo[j]: runs for j, runs in found.items()})
        # The first program not reported ended the execution: it is what it is (never ran),
        # and the ones after it run again, apart from it.
        missing = [j for j in range(len(todo)) if j not in found]
        todo = [todo[j] for j in missing[1:]] if missing else []
    return [out.get(i, [NEVER_RAN] * len(streams)) for i in range(len(programs))]
