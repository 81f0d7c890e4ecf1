"""``make run``: ``dagster dev`` that stops within seconds, children included, on SIGINT and
SIGTERM, and never outlives this supervisor.

``dagster dev`` runs a webserver, a daemon and a code server as its children. On SIGINT or
SIGTERM it asks them to shut down and waits for each in turn, up to 60 s apiece: 30 to 55 s in
practice, and a SIGTERM sent to it alone is no faster. So here ``dagster dev`` runs in a
process group of its own and stopping sends SIGTERM to the whole group at once (every process shuts
down in parallel), then SIGKILL to whatever still runs after ``GRACE_S``.

A guard process inside that group does the stopping: it waits on a pipe from this
supervisor, and when the pipe closes (a stop asked for, or this supervisor killed, even with
SIGKILL) it stops the group. Nothing is left behind whichever way the supervisor ends.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

MODULE = "codegen.orchestration.dev"  # the guard is this module in its --guard mode
GRACE_S = 5.0  # SIGTERM to the group, then SIGKILL: make run stops within about this long
KILL_WAIT_S = 5.0  # for SIGKILL to take (a process in uninterruptible sleep)


def _stop_group(pgid: int, grace_s: float = GRACE_S, besides: int | None = None) -> None:
    """SIGTERM to every process of group ``pgid``, SIGKILL after ``grace_s`` to what still
    runs; returns once none but ``besides`` (the caller, when it is in the group) runs."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _group_alive(pgid, besides):
                return
            time.sleep(0.1)


def _group_alive(pgid: int, besides: int | None = None) -> bool:
    """Whether a process of group ``pgid`` (other than ``besides``) still runs. Zombies do not
    count: orphans are reaped by PID 1, which on some machines takes its time, and a zombie
    holds nothing."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ")".
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(pgrp) == pgid and state != "Z" and int(stat.parent.name) != besides:
            return True
    return False


def _guard(pgid: int, grace_s: float) -> int:
    """The guard's whole life: wait for the supervisor's pipe to close, then stop the group.
    Until then a SIGTERM to the group ends the guard too (its default action)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the supervisor's
    sys.stdin.buffer.read()  # EOF: the supervisor asked for a stop, or is gone
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # its own group's SIGTERM is not for it
    _stop_group(pgid, grace_s, besides=os.getpid())  # the SIGKILL ends the guard too
    return 0


def _start_guard(pgid: int, grace_s: float) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            [sys.executable, "-m", MODULE, "--guard", str(pgid), "--grace", str(grace_s)],
            stdin=subprocess.PIPE,
            process_group=pgid,
        )
    except (OSError, subprocess.SubprocessError):  # dagster dev already gone: nothing to guard
        return None


# `dagster dev` warns that it is superseded by `dg dev` before it loads our code location, so
# codegen.orchestration's filter cannot reach it; PYTHONWARNINGS can (a literal message prefix,
# matched without importing Dagster).
DEV_NOTICE = "ignore:Function `dev_command` is superseded"


def _without_dagster_notices(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with the `dagster dev` notice filtered, the user's own filters kept."""
    own = environ.get("PYTHONWARNINGS", "")
    return {**environ, "PYTHONWARNINGS": f"{own},{DEV_NOTICE}" if own else DEV_NOTICE}


def _first_build_export() -> subprocess.Popen[bytes] | None:
    """Unless the first build is off (``[corpus] build_on_first_run``), the embedder's one-off
    model export, if the user's cache lacks it, begins now, while the UI and the corpus stages
    start, instead of inside the index run."""
    from codegen.composition import embedder_config
    from codegen.retrieval.embedders import export_in_background
    from codegen.settings import BadSettings, get_settings

    try:
        settings = get_settings()
    except BadSettings:  # the code location reports it, where the user looks
        return None
    if not settings.corpus.build_on_first_run:
        return None
    return export_in_background(embedder_config(settings))


def _stop_export(exporting: subprocess.Popen[bytes] | None, timeout_s: float = 10.0) -> None:
    """An export still running when `make run` stops ends as on Ctrl-C (killed if it does not
    within ``timeout_s``); the next build exports again and clears what it left."""
    if exporting is None or exporting.poll() is not None:
        return
    exporting.send_signal(signal.SIGINT)
    try:
        exporting.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        exporting.kill()
        exporting.wait()


def supervise(command: list[str], grace_s: float = GRACE_S) -> int:
    """Run ``command`` (``dagster dev``) in its own process group under a guard, until it ends
    or SIGINT or SIGTERM asks for a stop: then the guard stops the group, within ``grace_s``
    plus a moment."""
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):  # from the start: a stop asked early is kept
        signal.signal(sig, on_signal)
    exporting = _first_build_export()
    # A group of its own (a terminal's Ctrl-C reaches only the foreground group, this
    # supervisor's) in this session, where the guard can join it.
    proc = subprocess.Popen(command, process_group=0, env=_without_dagster_notices(os.environ))
    guard = _start_guard(proc.pid, grace_s)
    while proc.poll() is None and not stopping:
        time.sleep(0.2)
    if exporting is not None and exporting.poll() is None:
        exporting.send_signal(signal.SIGINT)  # ends beside the group, not after it
    if guard is not None:
        assert guard.stdin is not None
        guard.stdin.close()  # the guard stops the group (what is left of it)
        try:
            guard.wait(timeout=grace_s + 2 * KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            guard.kill()
    _stop_group(proc.pid, grace_s)  # without a guard, or after one that failed
    _stop_export(exporting, timeout_s=1.0)
    if not stopping:  # dagster dev ended on its own
        return proc.wait()
    proc.wait()
    return 0  # stopped as asked, children included


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.orchestration.dev")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="3000")
    # The guard's own mode (see the module's docstring), started by the supervisor.
    parser.add_argument("--guard", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--grace", type=float, default=GRACE_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.guard is not None:
        return _guard(args.guard, args.grace)
    dagster = Path(sys.executable).with_name("dagster")
    codegen = Path(sys.executable).with_name("codegen")
    print(
        f"codegen: the UI is http://{args.host}:{args.port}; the CLI is {codegen} "
        f"(or `source {codegen.parent}/activate`, then `codegen`)",
        file=sys.stderr,
        flush=True,
    )
    return supervise([str(dagster), "dev", "--host", args.host, "--port", str(args.port)])


if __name__ == "__main__":
    sys.exit(main())
