"""bubblewrap backend, for Linux machines without a Docker daemon.

Each sandbox is a ``bwrap`` with every namespace unshared (no network at all), the
debootstrapped root file system bound read-only, an empty environment, no capabilities, no
further user namespaces, ``--die-with-parent`` and ``--new-session``. As in the Docker backend
the only writable places are the size-capped tmpfs dirs the supervisor wipes after every job
(``wipe_dirs``: the work dir, /tmp, /dev/shm, /dev/mqueue); /dev is bwrap's minimal device set
(null, zero, full, random, urandom, tty, pts) remounted read-only. Only a setting
(``[sandbox] bwrap_host_usr``) lets a machine without the debootstrapped root bind the host's
/usr instead, and such a sandbox says so: its ``backend`` is ``bwrap-host``. The supervisor
inside applies rlimits to each job (address space for memory, CPU seconds, processes, file
size), enforces the timeout, caps output while streaming, and kills every process of the job
and wipes the dirs after it (the same reset guarantee as the Docker pool, see
``pool.py``); when a sandbox's PID namespace ends the kernel kills anything
left. Pooled sandboxes are reused, ``strict`` starts one per execution. Run as root, bwrap is
started under an unprivileged uid per slot (a block of uids per host process), so the job
never holds a uid that owns anything.

Memory: run as root where the host has a writable memory cgroup, each sandbox gets its own
(``cgroup.py``) and the job's limit holds for the whole job, as a container's does: the OOM
killer ends a job over it, and the result says ``oom_killed``. Elsewhere the limit is
RLIMIT_AS, per process (a memory bomb sees MemoryError; eight processes may each take the
limit), and ``codegen info`` and every result's ``memory_limit`` say so. Every tmpfs has a
size (the job's ``workdir_mb``): without a cgroup its pages count against no limit.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from codegen.sandbox.backends import cgroup
from codegen.sandbox.backends.docker import owner_tag
from codegen.sandbox.backends.kind import BackendKind, NotHere, OpenRequest
from codegen.sandbox.backends.pool import Deadline, PooledSandbox
from codegen.sandbox.backends.spawner import Spawner
from codegen.sandbox.errors import SandboxError, SandboxUnavailable
from codegen.sandbox.image import (
    DEFAULT_SET,
    HOST_BACKEND,
    build_command,
    bwrap_root,
    rootfs_path,
    rootfs_ready,
)
from codegen.sandbox.protocol import (
    SANDBOX_ENV,
    WORKDIR,
    JobExtra,
    result_matcher,
    supervisor_command,
)
from codegen.sandbox.types import Limits

FIRST_SLOT_UID = 20001  # distinct from the Docker sandbox uid (10001) and real users
# Each host process gets its own block of uids and each live sandbox one uid of it, so no
# two sandboxes (of this process or another) ever share a uid, and "kill every process of
# this uid" after a sandbox ends can only hit that sandbox's leftovers.
UID_BLOCK = 64
UID_BLOCKS = 1024


class _SlotPool:
    """This process's uid slots, shared by all its bwrap sandboxes."""

    def __init__(self, size: int) -> None:
        self._free = list(range(size))
        self._cond = threading.Condition()

    def acquire(self) -> int:
        with self._cond:
            while not self._free:
                self._cond.wait()
            return self._free.pop(0)

    def release(self, slot: int) -> None:
        with self._cond:
            self._free.append(slot)
            self._cond.notify()


_SLOTS = _SlotPool(UID_BLOCK)
START_TIMEOUT_S = 30.0
_HOST_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
SHM_MAX_MB = 64  # /dev/shm is min(workdir_mb, this), as the Docker backend's shm_size


def shm_mb(workdir_mb: int) -> int:
    return min(workdir_mb, SHM_MAX_MB)


def _root_args(rootfs: Path | None) -> list[str]:
    if rootfs is not None:
        return ["--ro-bind", str(rootfs), "/"]
    # No debootstrapped tree (only when a setting asks): the host's programs and libraries,
    # read-only, and nothing else of the host (no /home, /root, /etc beyond the loader cache,
    # /var, /run, sockets). The root itself is bwrap's tmpfs, made read-only in ``_argv``.
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _HOST_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


class _PipeBox:
    """One bwrap (or, unsafe, bare) process running the supervisor; jobs over its pipes."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        shape: tuple[int, int],
        slot: int,
        err: IO[bytes],
        group: cgroup.MemoryCgroup | None,
    ) -> None:
        self.proc = proc
        self.shape = shape
        self.slot = slot
        self.err = err  # an unlinked temp file: the supervisor's own diagnostics, if any
        self.group = group  # the box's memory cgroup, or None (RLIMIT_AS per process)
        self.pending = bytearray()
        assert proc.stdout is not None and proc.stdin is not None
        self._out = proc.stdout.fileno()
        os.set_blocking(self._out, False)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _read_until(
        self, done: Callable[[bytearray], bytes | None], deadline: float, cap: int
    ) -> bytes:
        while True:
            value = done(self.pending)
            if value is not None:
                return value
            if len(self.pending) > cap:
                raise ValueError("the supervisor's answer exceeds its size cap")
            left = deadline - time.monotonic()
            if left <= 0:
                raise Deadline()
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ConnectionError(f"the sandbox exited: {self.diagnostics()}")
            self.pending += chunk

    def wait_ready(self, deadline: float) -> None:
        def ready(buf: bytearray) -> bytes | None:
            if buf.startswith(b"READY\n"):
                del buf[:6]
                return b"ok"
            return None

        self._read_until(ready, deadline, 64)

    def read_result(self, deadline: float, cap: int) -> bytes:
        return self._read_until(result_matcher(), deadline, cap)

    def diagnostics(self) -> str:
        try:
            self.err.seek(0)
            text = self.err.read()[-2000:].decode(errors="replace")
        except (OSError, ValueError):
            return ""
        return " ".join(text.split())[-500:]


def open_bwrap(request: OpenRequest) -> BwrapSandbox:
    """On the image's root (or ``request.rootfs``); NotHere where it cannot run."""
    if not sys.platform.startswith("linux"):
        raise NotHere("bubblewrap needs Linux")
    if shutil.which("bwrap") is None:
        raise NotHere("bubblewrap is not installed")
    try:
        return BwrapSandbox(
            rootfs=request.rootfs or bwrap_root(request.image, set_name=request.set_name),
            concurrency=request.pool_size,
            isolation=request.isolation,
            default_limits=request.default_limits,
            allow_host_binds=request.host_usr,
            set_name=request.set_name,
        )
    except SandboxUnavailable as exc:
        raise NotHere(str(exc)) from None


BWRAP = BackendKind(
    name="bwrap",
    open=open_bwrap,
    own_pid_namespace=True,
    environment="'bwrap root <its directory>', or 'host /usr' bound from the host",
    host_usr_label=HOST_BACKEND,
    memory_scope=cgroup.scope,
)
PER_PROCESS = "each process on its own (RLIMIT_AS)"
# The bare host (rlimits, a timeout, a process-group kill), only by allow_unsafe_host.
UNSAFE_HOST = BackendKind(
    name="unsafe-host",
    open=lambda r: BwrapSandbox(
        concurrency=r.pool_size, default_limits=r.default_limits, unsafe_host=True
    ),
    own_pid_namespace=False,
    environment="'host'",
    in_auto=False,
    memory_scope=lambda: PER_PROCESS,
)


class BwrapSandbox(PooledSandbox):
    kind = BWRAP
    backend = BWRAP.name
    wipe_dirs = (WORKDIR, "/tmp", "/dev/shm", "/dev/mqueue")

    def __init__(
        self,
        *,
        rootfs: str | Path | None = None,
        concurrency: int = 2,
        isolation: str = "pooled",
        default_limits: Limits | None = None,
        allow_host_binds: bool = False,
        unsafe_host: bool = False,
        prestart: bool = True,
        set_name: str = DEFAULT_SET,
    ) -> None:
        """``set_name``: the package set the root is wanted for, whose build command a
        missing root's message gives."""
        self.unsafe_host = unsafe_host
        if unsafe_host:
            # A fresh supervisor per execution, killing only its process group: on the bare
            # host kill(-1) would reach the user's other processes.
            self.kind = UNSAFE_HOST
            self.backend = UNSAFE_HOST.name
            self.wipe_dirs = ()
            self.confine_links = True  # the work dir is a host dir: a link would reach the host
            isolation = "strict"
        concurrency = min(max(concurrency, 1), UID_BLOCK // 2)
        super().__init__(pool_size=concurrency, isolation=isolation, default_limits=default_limits)
        self._privileged = os.geteuid() == 0
        # Where each box's memory cgroup goes; a string: why there is none (RLIMIT_AS then).
        self._cgroups = "the bare host" if unsafe_host else cgroup.place()
        self.memory_scope = self.kind.memory_scope()
        self._used_slots: set[int] = set()
        self._bwrap = shutil.which("bwrap") or "bwrap"
        self._spawner = Spawner()
        if rootfs is None:
            candidate = rootfs_path()
            self.rootfs = candidate if rootfs_ready(candidate) else None
        else:
            self.rootfs = Path(rootfs)
            if not (self.rootfs / "usr").is_dir():
                raise SandboxUnavailable(f"{self.rootfs} is not a root file system")
        if self.rootfs is None and not unsafe_host:
            if not allow_host_binds:
                raise SandboxUnavailable(
                    f"no sandbox root file system; run '{build_command(set_name)}' "
                    "(or set [sandbox] bwrap_host_usr = true to bind the host's /usr)"
                )
            self.backend = HOST_BACKEND  # reports say the sandbox runs the host's programs
        self.environment = (
            "host"
            if unsafe_host
            else "host /usr"
            if self.rootfs is None
            else f"bwrap root {self.rootfs.name}"
        )
        if not unsafe_host:
            self._probe()
            if prestart:
                self.warm_up()

    def _probe(self) -> None:
        slot = _SLOTS.acquire()
        try:
            probe = self._popen(self._argv(["true"], 1, slot), slot, None, stdin=subprocess.DEVNULL)
            _, err = probe.communicate(timeout=30)
        finally:
            _SLOTS.release(slot)
        if probe.returncode != 0:
            why = " ".join(err.decode(errors="replace").split()) or f"exit {probe.returncode}"
            raise SandboxUnavailable(f"bubblewrap cannot create a sandbox here: {why}")

    def slot_uid(self, slot: int) -> int | None:
        if not self._privileged:
            return None
        block = os.getpid() % UID_BLOCKS
        return FIRST_SLOT_UID + block * UID_BLOCK + slot % UID_BLOCK

    def slot_uids(self) -> list[int]:
        """The uids this sandbox has run under (for leak checks)."""
        uids = [self.slot_uid(slot) for slot in sorted(self._used_slots)]
        return [u for u in uids if u is not None]

    def _argv(self, command: list[str], workdir_mb: int, slot: int) -> list[str]:
        if self.unsafe_host:
            return command
        size = str(workdir_mb * 1024 * 1024)
        argv = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--clearenv",
        ]
        for key, value in SANDBOX_ENV.items():
            argv += ["--setenv", key, value]
        argv += _root_args(self.rootfs)
        # bwrap's --dev is a writable, unsized tmpfs: its own sized /dev/shm and the IPC
        # namespace's mqueue (so the supervisor can wipe queues), then the rest read-only.
        shm = str(shm_mb(workdir_mb) * 1024 * 1024)
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", shm, "--tmpfs", "/dev/shm"]
        argv += ["--mqueue", "/dev/mqueue", "--remount-ro", "/dev"]
        argv += ["--size", size, "--tmpfs", WORKDIR, "--size", size, "--tmpfs", "/tmp"]
        if self.rootfs is None:
            # The host-/usr root is bwrap's own unsized tmpfs: read-only once the mount
            # points exist (not recursive, so the tmpfs dirs above stay writable).
            argv += ["--remount-ro", "/"]
        argv += ["--chdir", WORKDIR, "--", *command]
        return argv

    def _popen(
        self,
        argv: list[str],
        slot: int,
        group: cgroup.MemoryCgroup | None,
        *,
        stdin: int | IO[bytes] | None = None,
        stderr: int | IO[bytes] = subprocess.PIPE,
        cwd: str = "/",
    ) -> subprocess.Popen[bytes]:
        uid = self.slot_uid(slot)
        if group is not None:
            # Root joins the cgroup first, then drops to the slot's uid itself.
            argv, uid = cgroup.join_command(group, uid, argv), None
        return subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env={"PATH": SANDBOX_ENV["PATH"]},  # bwrap clears it again; nothing else leaks
            start_new_session=True,  # one process group to kill on the host side
            close_fds=True,
            # Each slot's own uid, with no supplementary groups (where the host allows it).
            user=uid,
            group=uid,
            extra_groups=None if uid is None else [],
        )

    # -- pool hooks ----------------------------------------------------------------------------

    def _shape(self, limits: Limits) -> tuple[int, int]:  # type: ignore[override]
        # Fixed at start: the tmpfs size and, in a cgroup, the memory limit (0: RLIMIT_AS per
        # job). Processes and CPU are per-job rlimits.
        memory_mb = limits.memory_mb if isinstance(self._cgroups, cgroup.Parent) else 0
        return limits.workdir_mb, memory_mb

    def _job_extra(self, limits: Limits) -> JobExtra:
        extra: JobExtra = {
            "nproc": limits.pids,
            "cpu_s": math.ceil(limits.timeout_s * limits.cpus) + 1,
        }
        if not isinstance(self._cgroups, cgroup.Parent):
            extra["as_bytes"] = limits.memory_mb * 1024 * 1024
        if self.unsafe_host:
            # The supervisor's cwd is the box's own temp dir (there is no /work on the host).
            extra.update({"kill_scope": "group", "workdir": "."})
        return extra

    def _oom_kills(self, box: _PipeBox) -> int | None:  # type: ignore[override]
        return box.group.oom_kills() if box.group is not None else None

    def _start(self, shape: tuple[int, int]) -> _PipeBox:
        slot = _SLOTS.acquire()
        self._used_slots.add(slot)
        err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the box
        workdir: str | None = None
        group: cgroup.MemoryCgroup | None = None
        workdir_mb, memory_mb = shape
        try:
            if memory_mb and isinstance(self._cgroups, cgroup.Parent):
                group = cgroup.make(self._cgroups, memory_mb * 1024 * 1024, str(slot))
            argv = [*supervisor_command("serve"), owner_tag()]
            if self.unsafe_host:
                workdir = tempfile.mkdtemp(prefix="codegen-unsafe-")
                uid = self.slot_uid(slot)
                if uid is not None:
                    os.chown(workdir, uid, uid)
            else:
                argv = self._argv(argv, workdir_mb, slot)
            proc = self._spawner.call(
                lambda: self._popen(
                    argv, slot, group, stdin=subprocess.PIPE, stderr=err, cwd=workdir or "/"
                )
            )
            box = _PipeBox(proc, shape, slot, err, group)
            box.workdir = workdir  # type: ignore[attr-defined]
            box.wait_ready(time.monotonic() + START_TIMEOUT_S)
            return box
        except Exception as exc:
            why = ""
            with contextlib.suppress(Exception):
                err.seek(0)
                why = " ".join(err.read()[-1000:].decode(errors="replace").split())
            self._release(slot, locals().get("proc"))
            err.close()
            if group is not None:
                group.remove()
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            raise SandboxError(f"could not start a bubblewrap sandbox: {exc} {why}") from exc

    def _release(self, slot: int, proc: subprocess.Popen[bytes] | None) -> None:
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
            # stdin closed: the supervisor exits and bwrap tears its namespaces down.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2.0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self._kill_strays(slot)
        _SLOTS.release(slot)

    def _discard(self, box: _PipeBox) -> None:
        self._release(box.slot, box.proc)
        box.err.close()
        if box.group is not None:
            box.group.remove()
        workdir = getattr(box, "workdir", None)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    def _shutdown(self) -> None:
        super()._shutdown()
        self._spawner.stop()

    def _kill_strays(self, slot: int) -> None:
        """Belt and braces: no process of this slot's uid may outlive its sandbox."""
        uid = self.slot_uid(slot)
        if uid is None:
            return
        for _ in range(100):
            strays = processes_of_uid(uid)
            if not strays:
                return
            for pid in strays:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)


def processes_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes owned by ``uid`` on this host."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if state not in ("Z", "X"):  # a zombie holds nothing; its parent or init reaps it
            pids.append(int(name))
    return pids
