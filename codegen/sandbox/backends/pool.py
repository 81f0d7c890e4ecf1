"""The warm pool both backends share: boxes (a container, or a bwrap process) each running the
supervisor in ``serve`` mode, checked out for one job at a time.

Reset guarantee (``pooled``): after each job the supervisor SIGKILLs every process but itself,
wipes the writable directories and System V IPC and verifies all of that before it answers;
the environment is rebuilt per job. A box whose reset is not verified, whose supervisor stops
answering, or that breaks the wire format is discarded, never reused. ``strict`` starts a
fresh box for every execution.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Hashable, Mapping
from typing import Protocol

from codegen.sandbox.base import BaseSandbox
from codegen.sandbox.errors import SandboxError
from codegen.sandbox.files import FileContent
from codegen.sandbox.protocol import (
    JobExtra,
    collect_bytes,
    decode_result,
    encode_job,
    lost_result,
    max_result_bytes,
)
from codegen.sandbox.types import ExecResult, Limits

# Beyond the job's own timeout: time to ship files in, kill, wipe and answer.
DEADLINE_GRACE_S = 10.0
ISOLATIONS = ("pooled", "strict")


_live: weakref.WeakSet[PooledSandbox] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Containers and bwrap sandboxes go when this process exits normally, too."""
    for sandbox in list(_live):
        with contextlib.suppress(Exception):
            sandbox.close()


class Deadline(Exception):
    """The supervisor did not answer before the host's hard deadline."""


class Box(Protocol):
    shape: Hashable

    def send(self, data: bytes) -> None: ...

    def read_result(self, deadline: float, cap: int) -> bytes: ...


class PooledSandbox(BaseSandbox):
    """Subclasses start and discard boxes; checkout, reuse and the job round trip live here."""

    wipe_dirs: tuple[str, ...] = ()
    memory_scope: str = "the whole job"  # what the memory limit covers (``BackendKind``)
    # Links copied in may point anywhere: they resolve in the sandbox's own file system. Only
    # a backend whose work dir is on the host must keep them inside it.
    confine_links: bool = False

    def __init__(
        self,
        *,
        pool_size: int,
        isolation: str,
        default_limits: Limits | None,
    ) -> None:
        super().__init__(default_limits)
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}, not {isolation!r}")
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.pool_size = pool_size
        self.isolation = isolation
        self._cond = threading.Condition()
        self._idle: list[Box] = []
        self._live_count = 0  # boxes alive, idle or busy (pooled mode)
        _live.add(self)

    # -- hooks -------------------------------------------------------------------------------

    def _shape(self, limits: Limits) -> Hashable:
        raise NotImplementedError

    def _start(self, shape: Hashable) -> Box:
        raise NotImplementedError

    def _discard(self, box: Box) -> None:
        raise NotImplementedError

    def _job_extra(self, limits: Limits) -> JobExtra:
        return {}

    def _after_loss(self, box: Box, result: ExecResult) -> None:
        """Add what the backend knows when a supervisor is lost (e.g. the OOM flag)."""

    def _oom_kills(self, box: Box) -> int | None:
        """The OOM kills of the box's own memory cgroup, where the host counts them (a
        bubblewrap box's; a container's supervisor reads its own)."""
        return None

    # -- pool --------------------------------------------------------------------------------

    def warm_up(self, limits: Limits | None = None) -> None:
        """Start idle boxes until the pool is full (concurrently)."""
        if self.isolation != "pooled":
            return
        shape = self._shape(limits or self.default_limits)
        with self._cond:
            missing = max(self.pool_size - self._live_count, 0)
            self._live_count += missing
        errors: list[Exception] = []

        def one() -> None:
            try:
                box = self._start(shape)
            except Exception as exc:
                errors.append(exc)
                with self._cond:
                    self._live_count -= 1
                    self._cond.notify_all()
                return
            with self._cond:
                self._idle.append(box)
                self._cond.notify_all()

        threads = [threading.Thread(target=one, daemon=True) for _ in range(missing)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def _checkout(self, shape: Hashable) -> Box:
        if self.isolation == "strict":
            return self._start(shape)
        evict: Box | None = None
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxError("the sandbox is closed")
                for i, box in enumerate(self._idle):
                    if box.shape == shape:
                        return self._idle.pop(i)
                if self._live_count < self.pool_size:
                    self._live_count += 1
                    break
                if self._idle:  # an idle box of another shape: replace it
                    evict = self._idle.pop(0)
                    break
                self._cond.wait()
        if evict is not None:
            self._discard(evict)
        try:
            return self._start(shape)
        except Exception:
            with self._cond:
                self._live_count -= 1
                self._cond.notify_all()
            raise

    def _checkin(self, box: Box, reusable: bool) -> None:
        if self.isolation == "strict":
            self._discard(box)
            return
        with self._cond:
            if reusable and not self._closed:
                self._idle.append(box)
                self._cond.notify_all()
                return
        self._discard(box)
        with self._cond:
            self._live_count -= 1
            self._cond.notify_all()

    # -- jobs --------------------------------------------------------------------------------

    def _execute(
        self,
        files: Mapping[str, FileContent],
        command: list[str],
        limits: Limits,
        extra: JobExtra | None = None,
    ) -> tuple[ExecResult, dict[str, bytes]]:
        job_extra: JobExtra = {**self._job_extra(limits), **(extra or {})}
        job = encode_job(
            files,
            command,
            limits,
            wipe=list(self.wipe_dirs),
            extra=job_extra,
            confine_links=self.confine_links,
        )
        started = time.perf_counter()
        box = self._checkout(self._shape(limits))
        reusable = False
        collected: dict[str, bytes] = {}
        kills = self._oom_kills(box)
        try:
            deadline = time.monotonic() + limits.timeout_s + DEADLINE_GRACE_S
            box.send(job)
            payload = box.read_result(deadline, max_result_bytes(limits, collect_bytes(job_extra)))
            result, reusable, collected = decode_result(
                payload, self.backend, time.perf_counter() - started
            )
            if not reusable:
                result.stderr += "sandbox: reset not verified; sandbox discarded\n"
        except Deadline:
            result = lost_result(
                self.backend,
                time.perf_counter() - started,
                "the supervisor did not answer in time; sandbox discarded",
                timed_out=True,
            )
        except (OSError, ConnectionError, ValueError) as exc:
            result = lost_result(
                self.backend,
                time.perf_counter() - started,
                f"the supervisor was lost ({exc}); sandbox discarded",
                timed_out=False,
            )
            self._after_loss(box, result)
        finally:
            after = self._oom_kills(box) if kills is not None else None
            self._checkin(box, reusable)
        if kills is not None and after is not None and after > kills:
            result.oom_killed = True
        result.memory_limit = f"{limits.memory_mb} MB for {self.memory_scope}"
        return result, collected

    def _shutdown(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._live_count -= len(idle)
            self._cond.notify_all()
        for box in idle:
            self._discard(box)
