"""The `make run` supervisor stops the whole `dagster dev` process group, even processes that
ignore SIGTERM (as `dagster dev` waits on its children for 30 s and more), within its grace
period and a SIGKILL; and when the supervisor itself is killed, its guard does the same, so no
`dagster dev` is left behind.

The group here is a stand-in with `dagster dev`'s trouble (a parent and a child that ignore
SIGTERM); tests/orchestration/test_dagster_dev.py stops the real one through `make run`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

GRACE_S = 1.0
# A parent and its child that both ignore SIGTERM, each writing its pid once it does.
STUBBORN = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "if len(sys.argv) < 3:\n"
    "    subprocess.Popen([sys.executable, sys.argv[0], sys.argv[1], 'child'])\n"
    "with open(sys.argv[1], 'a') as fh:\n"
    "    fh.write(f'{os.getpid()}\\n')\n"
    "time.sleep(600)\n"
)
SUPERVISOR = (
    "import sys\n"
    "from codegen.orchestration.dev import supervise\n"
    f"sys.exit(supervise([sys.executable, *sys.argv[1:]], {GRACE_S}))\n"
)


def in_group(group: int) -> list[int]:
    """The live processes of process group ``group`` (a zombie holds nothing; its reaper may
    take its time)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == group and state != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_group_is_gone_within_the_grace_period_however_the_supervisor_ends(
    tmp_path: Path, sig: signal.Signals
) -> None:
    pids_file, script = tmp_path / "pids", tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(script), str(pids_file)], start_new_session=True
    )
    deadline = time.monotonic() + 60
    while len(pids_file.read_text().split() if pids_file.exists() else []) < 2:
        assert supervisor.poll() is None and time.monotonic() < deadline, "never started"
        time.sleep(0.1)
    stubborn = [int(p) for p in pids_file.read_text().split()]
    group = os.getpgid(stubborn[0])
    assert group != os.getpgid(supervisor.pid)  # a group of its own, beside the guard
    while len(in_group(group)) < 3:  # the stand-in, its child and the guard
        assert time.monotonic() < deadline, f"no guard in the group: {in_group(group)}"
        time.sleep(0.1)
    supervisor.send_signal(sig)
    supervisor.wait(timeout=30)
    # The grace period, a SIGKILL, and a margin: far below `dagster dev`'s 30 s and more.
    deadline = time.monotonic() + GRACE_S + 8
    while in_group(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = in_group(group)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"left behind after the supervisor's {sig.name}: {left}"
    if sig == signal.SIGTERM:
        assert supervisor.returncode == 0  # stopped as asked
