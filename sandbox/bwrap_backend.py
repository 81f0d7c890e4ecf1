"""bubblewrap backend, for Linux machines without a Docker daemon.

Each execution is a fresh ``bwrap`` with every namespace unshared (no network at all), the
debootstrapped root file system (or, without one, the host's /usr) bound read-only, private
size-capped tmpfs work and tmp dirs, an empty environment, no capabilities, no further user
namespaces, ``--die-with-parent`` and ``--new-session``. The supervisor inside applies rlimits
to the job (address space for memory, CPU seconds, processes, file size), enforces the
timeout, caps output while streaming and kills every process of the job; when the sandbox's
PID namespace ends the kernel kills anything left. Run as root, bwrap itself is started under
an unprivileged uid per concurrency slot, so the job never holds a host uid that owns anything.

The kernel offers no memory+swap cgroup here without privileges: the memory limit is
RLIMIT_AS, so a memory bomb sees MemoryError rather than the OOM killer.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sandbox.base import BaseSandbox
from sandbox.docker_backend import owner_tag
from sandbox.errors import SandboxUnavailable
from sandbox.files import FileContent
from sandbox.image import rootfs_path, rootfs_ready
from sandbox.protocol import (
    SANDBOX_ENV,
    WORKDIR,
    decode_result,
    encode_job,
    lost_result,
    max_result_bytes,
    split_result,
    supervisor_command,
)
from sandbox.types import ExecResult, Limits

FIRST_SLOT_UID = 20001  # distinct from the Docker sandbox uid (10001) and real users
# Each process gets its own block of uids, so concurrent processes' sandboxes (and their
# leftovers, if any) are never confused with each other.
UID_BLOCK = 16
UID_BLOCKS = 2048
DEADLINE_GRACE_S = 10.0
_HOST_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def _root_args(rootfs: Path | None) -> list[str]:
    if rootfs is not None:
        return ["--ro-bind", str(rootfs), "/"]
    # No debootstrapped tree: the host's programs and libraries, read-only, and nothing else
    # of the host (no /home, /root, /etc beyond the loader cache, /var, /run, sockets).
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _HOST_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


class BwrapSandbox(BaseSandbox):
    backend = "bwrap"

    def __init__(
        self,
        *,
        rootfs: str | Path | None = None,
        concurrency: int = 2,
        default_limits: Limits | None = None,
        allow_host_binds: bool = True,
        unsafe_host: bool = False,
    ) -> None:
        super().__init__(default_limits)
        self.unsafe_host = unsafe_host
        if unsafe_host:
            self.backend = "unsafe-host"
        self._privileged = os.geteuid() == 0
        self._concurrency = min(max(concurrency, 1), UID_BLOCK)
        self._slots: queue.Queue[int] = queue.Queue()
        for slot in range(self._concurrency):
            self._slots.put(slot)
        self._bwrap = shutil.which("bwrap") or "bwrap"
        if rootfs is None:
            candidate = rootfs_path()
            self.rootfs = candidate if rootfs_ready(candidate) else None
        else:
            self.rootfs = Path(rootfs)
            if not (self.rootfs / "usr").is_dir():
                raise SandboxUnavailable(f"{self.rootfs} is not a root file system")
        if self.rootfs is None and not allow_host_binds and not unsafe_host:
            raise SandboxUnavailable(
                "no sandbox root file system; run 'codegen sandbox build --offline'"
            )
        if not unsafe_host:
            self._probe()

    def _probe(self) -> None:
        probe = self._popen(self._argv(["true"], Limits(), 0), 0, stdin=subprocess.DEVNULL)
        _, err = probe.communicate(timeout=30)
        if probe.returncode != 0:
            why = " ".join(err.decode(errors="replace").split()) or f"exit {probe.returncode}"
            raise SandboxUnavailable(f"bubblewrap cannot create a sandbox here: {why}")

    def slot_uid(self, slot: int) -> int | None:
        if not self._privileged:
            return None
        block = os.getpid() % UID_BLOCKS
        return FIRST_SLOT_UID + block * UID_BLOCK + slot % UID_BLOCK

    def slot_uids(self) -> list[int]:
        uids = [self.slot_uid(slot) for slot in range(self._concurrency)]
        return [u for u in uids if u is not None]

    def _argv(self, command: list[str], limits: Limits, slot: int) -> list[str]:
        if self.unsafe_host:
            return command
        size = str(limits.workdir_mb * 1024 * 1024)
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
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--size", size, "--tmpfs", WORKDIR, "--size", size, "--tmpfs", "/tmp"]
        argv += ["--chdir", WORKDIR, "--", *command]
        return argv

    def _popen(self, argv: list[str], slot: int, **kwargs: Any) -> subprocess.Popen[bytes]:
        uid = self.slot_uid(slot)
        ids: dict[str, Any] = {}
        if uid is not None:
            ids = {"user": uid, "group": uid, "extra_groups": []}
        return subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": SANDBOX_ENV["PATH"]},  # bwrap clears it again; nothing else leaks
            cwd="/",
            start_new_session=True,  # one process group to kill on the host deadline
            close_fds=True,
            **ids,
            **kwargs,
        )

    def _execute(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits,
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[ExecResult, dict[str, bytes]]:
        rlimits = {
            "as_bytes": limits.memory_mb * 1024 * 1024,
            "nproc": limits.pids,
            "cpu_s": math.ceil(limits.timeout_s * limits.cpus) + 1,
        }
        if self.unsafe_host:
            rlimits["kill_scope"] = "group"
            rlimits["workdir"] = None  # set below, per execution
        job_extra = {**rlimits, **(extra or {})}
        slot = self._slots.get()
        workdir: Path | None = None
        try:
            if self.unsafe_host:
                import tempfile

                workdir = Path(tempfile.mkdtemp(prefix="codegen-unsafe-"))
                job_extra["workdir"] = str(workdir)
            job = encode_job(files, command, limits, wipe=[], extra=job_extra)
            return self._round_trip(job, limits, slot)
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            self._slots.put(slot)

    def _round_trip(
        self, job: bytes, limits: Limits, slot: int
    ) -> tuple[ExecResult, dict[str, bytes]]:
        started = time.perf_counter()
        deadline = time.monotonic() + limits.timeout_s + DEADLINE_GRACE_S
        proc = self._popen(
            self._argv([*supervisor_command("once"), owner_tag()], limits, slot),
            slot,
            stdin=subprocess.PIPE,
        )
        out = bytearray()
        err = bytearray()
        cap = max_result_bytes(limits)
        timed_out = False
        try:
            try:
                assert proc.stdin is not None
                proc.stdin.write(job)  # the supervisor reads the whole job before it runs it
                proc.stdin.close()
            except BrokenPipeError:
                pass
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ, out)  # type: ignore[arg-type]
            sel.register(proc.stderr, selectors.EVENT_READ, err)  # type: ignore[arg-type]
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(min(left, 1.0)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    key.data.extend(chunk)
                if len(out) > cap:
                    break
                if len(err) > 8192:
                    del err[:-4096]
            sel.close()
        finally:
            if not timed_out:
                # The supervisor answered or died: bwrap tears its namespace down by itself.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2.0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            self._kill_strays(slot)
        elapsed = time.perf_counter() - started
        try:
            payload, _ = split_result(out)
        except ValueError:
            payload = None
        if payload is None:
            why = "the supervisor did not answer in time" if timed_out else "no result"
            tail = " ".join(err.decode(errors="replace").split())[-500:]
            result = lost_result(self.backend, elapsed, f"{why}: {tail}", timed_out=timed_out)
            return result, {}
        result, _, collected = decode_result(payload, self.backend, elapsed)
        return result, collected

    def _kill_strays(self, slot: int) -> None:
        """Belt and braces: no process of this slot's uid may outlive the execution."""
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
