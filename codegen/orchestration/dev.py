"""``make run``: ``dagster dev`` that stops cleanly, children included, on SIGINT and SIGTERM.

``dagster dev`` runs a webserver, a daemon and a code server as its children. It shuts them
down on SIGINT (Ctrl-C), but a SIGTERM (``kill``, a service manager, ``make`` forwarding its
own) leaves them behind. Here ``dagster dev`` runs in its own process group and either signal
becomes its SIGINT; whatever still runs after a grace period gets SIGTERM, then SIGKILL.
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

GRACE_S = 30.0


def _stop_group(pgid: int, proc: subprocess.Popen[bytes]) -> int:
    for sig, wait_s in ((signal.SIGINT, GRACE_S), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(pgid):
                return proc.returncode
            time.sleep(0.2)
    return proc.wait()


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: orphans are reaped
    by PID 1, which on some machines takes its time, and a zombie holds nothing."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ")".
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


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


def _stop_export(exporting: subprocess.Popen[bytes] | None) -> None:
    """An export still running when `make run` stops ends as on Ctrl-C (killed if it does not
    within 10 s); the next build exports again and clears what it left."""
    if exporting is None or exporting.poll() is not None:
        return
    exporting.send_signal(signal.SIGINT)
    try:
        exporting.wait(timeout=10)
    except subprocess.TimeoutExpired:
        exporting.kill()
        exporting.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.orchestration.dev")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="3000")
    args = parser.parse_args(argv)
    dagster = Path(sys.executable).with_name("dagster")
    codegen = Path(sys.executable).with_name("codegen")
    print(
        f"codegen: the UI is http://{args.host}:{args.port}; the CLI is {codegen} "
        f"(or `source {codegen.parent}/activate`, then `codegen`)",
        file=sys.stderr,
        flush=True,
    )
    exporting = _first_build_export()
    proc = subprocess.Popen(
        [str(dagster), "dev", "--host", args.host, "--port", str(args.port)],
        start_new_session=True,
        env=_without_dagster_notices(os.environ),
    )
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    while proc.poll() is None and not stopping:
        time.sleep(0.2)
    _stop_export(exporting)
    if not stopping:  # dagster dev ended on its own
        return proc.returncode
    _stop_group(proc.pid, proc)
    return 0  # stopped as asked, children included


if __name__ == "__main__":
    sys.exit(main())
