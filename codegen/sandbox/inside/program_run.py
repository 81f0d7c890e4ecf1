"""Runs inside the sandbox (standard library only, the image's python3): one run of a whole
program, as a plain run does, and how its stdout is compared. Shipped beside every driver by
``codegen.sandbox.protocol``; used by ``program_driver`` (APPS's batches) and by the
``program`` fixture of ``pytest_driver``; never imported on the host.

A run is ``python3 PROGRAM ARGS...`` as a fresh process in its own session, cwd the scratch
folder, the given text on its stdin (then closed: a program that waits for more reads end of
file), stdout and stderr read by the caller with a cap each, killed with its whole session at
the time limit or when its stdout passes the cap. Before it executes, the child enters the
file fence (``fence.enter``: it may write only the scratch folder), so nothing of the caller's
memory survives into the program and the verdict is decided outside it.
"""

import contextlib
import math
import os
import resource
import select
import signal
import sys
import time

import fence

MAX_FENCE_TEXT = 300
MAX_STDERR_BYTES = 8192
PROGRAM = "prog.py"
# A plain judge's limits per run (APPS's: ``codegen.evaluation.apps.scoring`` states the same
# figures for its batches, a host test holds them equal).
TIME_LIMIT_S = 4.0
MAX_STDOUT_BYTES = 1_000_000
# ``codegen.agents.spec.program``'s comparison, restated here (the box cannot import codegen;
# a host test checks both answer alike).
FLOAT_TOLERANCE = 1e-6
COMPARISONS = ("exact", "trailing_whitespace", "float")


def normalised(text):
    """The text as compared: each line's trailing whitespace, then trailing blank lines, gone."""
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def _same_token(expected, actual):
    if expected == actual:
        return True
    try:
        a, b = float(expected), float(actual)
    except ValueError:
        return False
    return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)


def same_output(expected, actual, comparison):
    """Whether ``actual`` stdout answers ``expected`` under ``comparison``."""
    if comparison == "exact":
        return expected == actual
    if comparison == "trailing_whitespace":
        return normalised(expected) == normalised(actual)
    if comparison != "float":
        raise ValueError(f"comparison must be one of {', '.join(COMPARISONS)}: {comparison!r}")
    wanted, got = expected.split(), actual.split()
    return len(wanted) == len(got) and all(map(_same_token, wanted, got))


def _child(scratch, command, pipes, memory_bytes):
    """In the forked child: own session, memory limit, stdio on the pipes, the fence, then
    ``command`` (the program file and its arguments). Never returns."""
    stdin_r, stdout_w, stderr_w, fence_w = pipes
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        for fd, target in ((stdin_r, 0), (stdout_w, 1), (stderr_w, 2)):
            os.dup2(fd, target)
        os.closerange(3, fence_w)
        os.closerange(fence_w + 1, 65536)
        os.chdir(scratch)
        try:
            said = str(fence.enter(scratch))
        except Exception as exc:  # it then runs unfenced, and the verdict says so
            said = f"none: the fence failed: {type(exc).__name__}: {exc}"
        data = said.encode("utf-8", "replace")[:MAX_FENCE_TEXT]
        while data:
            data = data[os.write(fence_w, data) :]
        os.close(fence_w)
        os.execv(sys.executable, [sys.executable, *command])
    finally:
        os._exit(127)


def _kill(pid):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _fence_said(fence_r):
    said = b""
    while chunk := os.read(fence_r, 4096):  # closed at the program's exec (or its end)
        said += chunk[: max(MAX_FENCE_TEXT - len(said), 0)]
    os.close(fence_r)
    return said.decode("utf-8", "replace")


def _pump(stdin_w, stdout_r, stderr_r, stdin_text, job, deadline):
    """Feed stdin and read both streams until they close, the deadline or the stdout cap:
    (stdout, stderr, timed_out, capped, descriptors still open)."""
    os.set_blocking(stdin_w, False)
    pending = stdin_text.encode("utf-8")
    out, err = bytearray(), bytearray()
    readers = {stdout_r: out, stderr_r: err}
    writers = [stdin_w]
    if not pending:
        os.close(stdin_w)
        writers = []
    timed_out = capped = False
    while readers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready_r, ready_w, _ = select.select(list(readers), writers, [], remaining)
        for fd in ready_w:
            try:
                pending = pending[os.write(fd, pending[:65536]) :]
            except (BrokenPipeError, BlockingIOError) as exc:
                if isinstance(exc, BrokenPipeError):
                    pending = b""
            if not pending:
                os.close(fd)
                writers = []
        for fd in ready_r:
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                del readers[fd]
                continue
            buf = readers[fd]
            cap = job["max_output_bytes"] if fd == stdout_r else MAX_STDERR_BYTES
            buf += chunk[: max(cap - len(buf), 0)]
            if fd == stdout_r and len(buf) >= cap:
                capped = True
        if capped:
            break
    return out, err, timed_out, capped, (*readers, *writers)


def _run(scratch, stdin_text, job, arguments=(), program=PROGRAM):
    """One run of ``python3 program ARGUMENTS`` of the scratch folder on ``stdin_text`` (``job``:
    ``timeout_s``, ``max_output_bytes``, ``memory_bytes``, None to keep this process's limit):
    a dict with ``exit`` (code, or minus the signal: -9 when killed here), ``stdout``, ``stderr``,
    ``timed_out``, ``output_capped``, ``duration_s`` and ``fence``."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    fence_r, fence_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for fd in (stdin_w, stdout_r, stderr_r, fence_r):
            os.close(fd)
        command = [program, *arguments]
        _child(scratch, command, (stdin_r, stdout_w, stderr_w, fence_w), job["memory_bytes"])
    for fd in (stdin_r, stdout_w, stderr_w, fence_w):
        os.close(fd)
    said = _fence_said(fence_r)
    deadline = started + job["timeout_s"]
    out, err, timed_out, capped, still_open = _pump(
        stdin_w, stdout_r, stderr_r, stdin_text, job, deadline
    )
    status = None
    while status is None and not (timed_out or capped):
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        time.sleep(0.005)
    duration = time.monotonic() - started
    _kill(pid)  # the session: what it started too
    for fd in still_open:
        with contextlib.suppress(OSError):
            os.close(fd)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(pid, 0)
    exit_code = None
    if status is not None:
        exit_code = os.waitstatus_to_exitcode(status)
    return {
        "exit": exit_code,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
        "timed_out": timed_out,
        "output_capped": capped,
        "duration_s": round(duration, 4),
        "fence": said,
    }


def _last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# What the tests' ``program`` fixture keeps of each run for people: a JUnit property of the
# test, JSON, each text cut to ``RECORD_CHARS`` (the host's ``codegen.sandbox.junit`` and
# ``ProgramRun`` read it; a host test holds the names and sizes equal).
PROPERTY = "codegen_program_run"
RECORD_CHARS = 2000
SHOWN_CHARS = 100  # each text in a failure message
SOLUTION = "solution.py"


class Run:
    """One finished run as a test sees it; ``exit_code`` is None when the run was killed (the
    time limit, or stdout past ``MAX_STDOUT_BYTES``)."""

    FIELDS = ("stdout", "stderr", "exit_code", "timed_out", "output_capped", "duration_s")
    __slots__ = FIELDS

    def __init__(self, raw):
        killed = raw["timed_out"] or raw["output_capped"]
        self.stdout, self.stderr = raw["stdout"], raw["stderr"]
        self.exit_code = None if killed else raw["exit"]
        self.timed_out, self.output_capped = raw["timed_out"], raw["output_capped"]
        self.duration_s = raw["duration_s"]

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"Run({fields})"


def _shown(text):
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f"{text[:SHOWN_CHARS]!r}... ({len(text)} characters)"


def _checked_inputs(stdin, arguments, timeout_s):
    if not isinstance(stdin, str):
        raise TypeError(f"program: stdin must be a str, not {type(stdin).__name__}")
    if isinstance(arguments, (str, bytes)):
        raise TypeError("program: arguments must be a list of str, not one string")
    arguments = list(arguments)
    if not all(isinstance(a, str) for a in arguments):
        raise TypeError("program: arguments must be a list of str")
    if any("\x00" in a for a in arguments):
        raise ValueError("program: an argument cannot hold a NUL character")
    if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise ValueError(f"program: timeout_s must be a positive number, not {timeout_s!r}")
    return arguments


class Program:
    """The tests' ``program`` fixture: ``python3 solution.py ARGS`` of the scratch folder as a
    fresh fenced process per run (``_run``), from the test side, which never runs the
    solution's code itself. ``record(entry, fence_said)`` keeps each run for people."""

    def __init__(self, scratch, record):
        self._scratch, self._record = scratch, record
        self._job = {
            "timeout_s": TIME_LIMIT_S,
            "max_output_bytes": MAX_STDOUT_BYTES,
            "memory_bytes": None,  # this process's limit: the job's
        }

    def _go(self, stdin, arguments, timeout_s, expected):
        arguments = _checked_inputs(stdin, arguments, timeout_s)
        job = dict(self._job, timeout_s=float(timeout_s or TIME_LIMIT_S))
        raw = _run(self._scratch, stdin, job, arguments, SOLUTION)
        run = Run(raw)
        entry = {"stdin": stdin, "arguments": arguments, **expected}
        entry.update(stdout=run.stdout, exit_code=run.exit_code)
        entry.update(timed_out=run.timed_out, output_capped=run.output_capped)
        for key in ("stdin", "expected_stdout", "stdout"):
            if isinstance(entry[key], str):
                entry[key] = entry[key][:RECORD_CHARS]
        entry["arguments"] = [a[:RECORD_CHARS] for a in arguments]
        self._record(entry, raw["fence"])
        return run, job["timeout_s"]

    def run(self, stdin="", arguments=(), timeout_s=None):
        """One run on ``stdin`` (then closed) with ``arguments``: a ``Run``."""
        none = {"expected_stdout": None, "expected_exit_code": None, "comparison": None}
        return self._go(stdin, arguments, timeout_s, none)[0]

    def check(
        self,
        stdin="",
        arguments=(),
        stdout=None,
        exit_code=0,
        comparison="trailing_whitespace",
        timeout_s=None,
    ):
        """One run; the test fails, with one readable message, when it was killed, or its exit
        code or (under ``comparison``) its stdout differ. None: not compared. The ``Run``."""
        __tracebackhide__ = True  # the failure is the test's line, not this frame
        if comparison not in COMPARISONS:
            raise ValueError(f"comparison must be one of {', '.join(COMPARISONS)}: {comparison!r}")
        if stdout is not None and not isinstance(stdout, str):
            raise TypeError(f"program.check(): stdout must be a str, not {type(stdout).__name__}")
        expected = {"expected_stdout": stdout, "expected_exit_code": exit_code}
        run, limit = self._go(stdin, arguments, timeout_s, {**expected, "comparison": comparison})
        why = None
        if run.timed_out:
            why = f"killed at the time limit ({limit:g} s per run)"
        elif run.output_capped:
            why = f"killed: stdout past {MAX_STDOUT_BYTES} bytes"
        elif exit_code is not None and run.exit_code != exit_code:
            why = f"exit code {run.exit_code}, expected {exit_code}"
        elif stdout is not None and not same_output(stdout, run.stdout, comparison):
            why = f"stdout differs (compared {comparison.replace('_', ' ')})"
        if why is None:
            return run
        lines = [f"stdin: {_shown(stdin)}"]
        if stdout is not None:
            lines.append(f"expected stdout: {_shown(stdout)}")
        lines.append(f"actual stdout: {_shown(run.stdout)}")
        if _last_line(run.stderr):
            lines.append(f"stderr (last line): {_last_line(run.stderr)}")
        # The verdict last: a report that cuts a long message keeps its end.
        lines.append(" ".join(["python3", SOLUTION, *arguments])[:SHOWN_CHARS] + f": {why}")
        raise AssertionError("\n".join(lines))
