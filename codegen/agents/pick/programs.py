"""Shared inputs for a spec with a program: every draft run as a whole program on the same
input streams (``inputs.streams``: the worked examples, then format-keeping mutations), in
one sandbox execution (``sandbox.programs.observe_programs``: each draft in its own fenced
process per stream), and what each printed turned into the behaviour table the functions'
pick reads (``behaviour.BehaviourTable``), so ``decide`` picks among programs as it does among
functions.

Per draft and stream, the outcome class: the stdout under the spec's comparison together with
the exit status (equal digests, or for ``float`` tokens equal within the tolerance, share a
class); a non-zero exit is an output when the spec says the program writes its exit code, an
error otherwise (a traceback's exit 1); so are a signal, stdout past the cap and, when every
worked example prints something, an empty stdout (a draft that never calls its ``main``); a
timeout is the timeout class, and a stream a draft never ran (after ``MAX_TIMEOUTS`` of them)
is unknown. Each run has ``STREAM_LIMIT_S``, stated in the pick's record.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from codegen.agents.pick.agreement import SharedRun
from codegen.agents.pick.behaviour import BehaviourTable
from codegen.agents.pick.inputs import CallInput, StreamInput, stream_inputs
from codegen.agents.spec import ProgramSpec, same_output
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import CallOutcome
from codegen.sandbox.programs import RunSeen, Stream, observe_programs
from codegen.sandbox.types import Limits

# Per run: the streams are the examples' size, far below a judge's inputs, so a draft that
# needs more than this on one of them is as good as hung (a plain judge allows 4 s).
STREAM_LIMIT_S = 2.0
MAX_TIMEOUTS = 1  # a draft that hangs this often is not run on the rest
_NOT_RUN = CallOutcome("timeout", error="not run: the draft timed out before")


def _number(token: str) -> float | str:
    try:
        return float(token)
    except ValueError:
        return token


def outcome_of(run: RunSeen, program: ProgramSpec, silent_is_error: bool) -> CallOutcome:
    """One run as the behaviour table reads it (see the module's note)."""
    if run.never_ran:
        return _NOT_RUN
    if run.timed_out:
        return CallOutcome("timeout", error="time limit", duration_s=run.duration_s)
    if run.output_capped:
        return CallOutcome("error", error="stdout past the cap")
    code = run.exit_code
    if code is None or code < 0:
        return CallOutcome("error", error=f"killed by signal {-(code or 0)}")
    if code != 0 and "exit_code" not in program.writes:
        return CallOutcome("error", error=f"exit {code}")
    if silent_is_error and not run.prefix:
        return CallOutcome("error", error="printed nothing")
    if program.comparison == "float" and run.tokens is not None:
        printed: object = tuple(_number(t) for t in run.tokens.split())
    else:
        printed = run.digest
    return CallOutcome("ok", value=("stdout", printed, code), duration_s=run.duration_s)


def _shown(run: RunSeen) -> str:
    text = run.prefix if len(run.prefix) < 80 else run.prefix[:77] + "..."
    return repr(text) + (f" (exit {run.exit_code})" if run.exit_code else "")


def program_table(
    runs: Sequence[Sequence[RunSeen] | None], program: ProgramSpec, silent_is_error: bool
) -> BehaviourTable:
    """The behaviour table of ``runs`` (per draft, per stream; None: a draft with no code, an
    error on each), each output class labelled with what its first member printed (cut) and
    its exit code when not 0."""
    count = len(next((row for row in runs if row is not None), []))
    no_code = [CallOutcome("error", error="no code")] * count
    outcomes = [
        no_code if row is None else [outcome_of(r, program, silent_is_error) for r in row]
        for row in runs
    ]
    table = BehaviourTable.of(outcomes)
    for k, label in enumerate(table.labels):
        shown: dict[int, str] = {}
        for row, classes in zip(runs, table.classes, strict=True):
            if row is not None and classes[k] >= 0:
                shown.setdefault(classes[k], _shown(row[k]))
        label.update(shown)
    return table


def _printing_examples(program: ProgramSpec) -> bool:
    """Every worked example prints something (so a silent draft is broken, not quiet)."""
    return bool(program.examples) and not any(
        same_output("", e.stdout, "trailing_whitespace") for e in program.examples
    )


def run_on_streams(
    box: Sandbox, codes: Sequence[str], program: ProgramSpec, limits: Limits | None
) -> SharedRun:
    """``program``'s input streams and every one of ``codes`` on them, in one sandbox
    execution; a draft with no code is an error on each, never run."""
    streams = stream_inputs(program)
    inputs = [CallInput((), s.origin, s.shown()) for s in streams]
    if not streams:
        return SharedRun(program.name, [], BehaviourTable([[] for _ in codes], []), 0.0)
    started = time.perf_counter()
    todo = [i for i, code in enumerate(codes) if code.strip()]
    seen = observe_programs(
        box,
        [codes[i] for i in todo],
        [_stream(s) for s in streams],
        program.comparison,
        STREAM_LIMIT_S,
        limits,
        MAX_TIMEOUTS,
    )
    by_draft = dict(zip(todo, seen, strict=True))
    runs = [by_draft.get(i) for i in range(len(codes))]
    table = program_table(runs, program, _printing_examples(program))
    return SharedRun(
        program.name, inputs, table, time.perf_counter() - started, time_limit_s=STREAM_LIMIT_S
    )


def _stream(found: StreamInput) -> Stream:
    return Stream(found.stdin, found.arguments)
