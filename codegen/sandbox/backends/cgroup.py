"""One memory cgroup per bubblewrap sandbox, so its memory limit holds for the whole job (every
process it starts, the supervisor and the files in its tmpfs dirs, together, as a container's
limit does) and the kernel's OOM killer ends a job over it. Without such a cgroup the limit is
RLIMIT_AS, per process: eight children under a 512 MB limit held 2.9 GB.

Where it is made: under this process's own memory cgroup (read from /proc/self/cgroup), as
root. cgroup v2 (a unified hierarchy): a leaf with ``memory.max`` and ``memory.swap.max = 0``,
where this process's cgroup may hand the memory controller down (v2 lets only a cgroup without
processes of its own do so; otherwise the reason says it). cgroup v1: a child of the memory
hierarchy with ``memory.limit_in_bytes`` and, where swap is accounted,
``memory.memsw.limit_in_bytes`` at the same figure (no swap beyond the limit). The sandbox's
first process joins it before it starts anything (``join_command``), so nothing of the job runs
outside; the cgroup goes when the sandbox does. Anywhere else ``place`` returns why not, and
the sandbox keeps RLIMIT_AS and says so (``codegen info``, each result's ``memory_limit``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "codegen-bwrap-"
# Run as root by the sandbox's first process: join the cgroup, drop to the slot's uid (no
# supplementary groups), then become bwrap; the same process throughout (``--die-with-parent``
# watches its parent, which does not change).
_JOIN = (
    "import os, sys\n"
    "with open(sys.argv[1], 'w') as fh:\n"
    "    fh.write(str(os.getpid()))\n"
    "uid = int(sys.argv[2])\n"
    "if uid >= 0:\n"
    "    os.setgroups([])\n"
    "    os.setgid(uid)\n"
    "    os.setuid(uid)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


@dataclass(frozen=True)
class Parent:
    """Where this process may make memory cgroups: the directory and its cgroup version."""

    path: Path
    version: int

    def describe(self) -> str:
        return f"cgroup v{self.version} under {self.path}"


@dataclass(frozen=True)
class MemoryCgroup:
    """One sandbox's cgroup."""

    path: Path
    version: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def set_limit(self, limit_bytes: int) -> None:
        if self.version == 2:
            _write(self.path / "memory.max", limit_bytes)
            if (self.path / "memory.swap.max").exists():
                _write(self.path / "memory.swap.max", 0)
            return
        memsw = self.path / "memory.memsw.limit_in_bytes"
        # memory+swap may never be below memory: raise it first, lower it last.
        steps = [self.path / "memory.limit_in_bytes"]
        if memsw.exists():
            steps = [memsw, *steps] if limit_bytes > _read_int(memsw) else [*steps, memsw]
        for path in steps:
            _write(path, limit_bytes)

    def oom_kills(self) -> int | None:
        """The kernel's count of OOM kills in this cgroup (None where it keeps none)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return None

    def remove(self) -> None:
        """Gone once its processes are (a dead process may take a moment to leave it)."""
        for _ in range(200):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def _write(path: Path, value: int) -> None:
    path.write_text(str(value))


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


@cache
def place() -> Parent | str:
    """Where this process makes its sandboxes' memory cgroups, or why it cannot (probed once:
    a cgroup made and removed)."""
    if not sys.platform.startswith("linux"):
        return "no cgroups off Linux"
    if os.geteuid() != 0:
        return "not root (a memory cgroup needs root here)"
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as exc:
        return f"cannot read /proc/self/cgroup ({exc.strerror})"
    own: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:
        parent = Parent(CGROUP_ROOT / own[""].lstrip("/"), 2)
        why = _delegates_memory(parent.path)
    elif "memory" in own and (CGROUP_ROOT / "memory").is_dir():
        parent = Parent(CGROUP_ROOT / "memory" / own["memory"].lstrip("/"), 1)
        why = "" if parent.path.is_dir() else f"{parent.path} is not mounted here"
    else:
        return "no memory cgroup controller on this host"
    if why:
        return f"cgroup v{parent.version}: {why}"
    _sweep(parent)
    try:
        probe = make(parent, 64 << 20, "probe")
    except OSError as exc:
        return f"{parent.describe()} is not writable ({exc.strerror or exc})"
    probe.remove()
    return parent


def _delegates_memory(path: Path) -> str:
    """Why a leaf of ``path`` cannot have the memory controller ("" when it can)."""
    try:
        if "memory" not in (path / "cgroup.controllers").read_text().split():
            return f"the memory controller is not available in {path}"
        if "memory" not in (path / "cgroup.subtree_control").read_text().split():
            (path / "cgroup.subtree_control").write_text("+memory")
    except OSError as exc:
        # EBUSY: v2's rule that a cgroup holding processes hands no controller down.
        return f"{path} cannot hand the memory controller to a leaf ({exc.strerror or exc})"
    return ""


def make(parent: Parent, limit_bytes: int, label: str) -> MemoryCgroup:
    """A fresh cgroup under ``parent`` limited to ``limit_bytes``; OSError when it cannot be."""
    path = parent.path / f"{PREFIX}{os.getpid()}-{label}-{secrets.token_hex(4)}"
    path.mkdir()
    group = MemoryCgroup(path, parent.version)
    try:
        group.set_limit(limit_bytes)
    except OSError:
        group.remove()
        raise
    return group


def _sweep(parent: Parent) -> None:
    """Empty cgroups a process of ours that ended without closing its sandboxes left."""
    with contextlib.suppress(OSError):
        for path in parent.path.glob(f"{PREFIX}*"):
            pid = path.name[len(PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    path.rmdir()  # fails while it still holds a process: left alone


def join_command(group: MemoryCgroup, uid: int | None, argv: list[str]) -> list[str]:
    """``argv`` run as a process that first joins ``group`` and then drops to ``uid``."""
    command = [sys.executable, "-I", "-S", "-c", _JOIN, str(group.procs)]
    return [*command, str(-1 if uid is None else uid), *argv]


def scope() -> str:
    """What the bubblewrap backend's memory limit covers here, for ``codegen info``."""
    where = place()
    if isinstance(where, Parent):
        swap = "memory + swap" if where.version == 2 else _v1_swap(where)
        return f"the whole job ({swap}; a {where.describe()} per sandbox)"
    return f"each process on its own (RLIMIT_AS; no job cgroup: {where})"


def _v1_swap(parent: Parent) -> str:
    accounted = (parent.path / "memory.memsw.limit_in_bytes").exists()
    return "memory + swap" if accounted else "memory; swap not accounted"
