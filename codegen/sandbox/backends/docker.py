"""Docker backend: a warm pool of locked-down containers, each with the supervisor as PID 1.

Every container runs with no network, a read-only root, size-capped tmpfs work dirs, a
non-root uid, all capabilities dropped, no-new-privileges, memory == memory+swap, a pids
limit, a CPU quota, no logging driver, and an environment built from nothing on the host.
Jobs travel over the container's attached stdin/stdout, so a pooled execution costs one
fork+exec inside the container instead of a ``docker exec`` (a runc process start each).

Reset guarantee (pooled mode): after each job the supervisor SIGKILLs every process but
itself, wipes /work, /tmp, /dev/shm, /dev/mqueue and System V IPC, and verifies all of that;
the environment is rebuilt per job. A container whose reset is not verified, whose
supervisor stops answering, or that breaks the wire format is removed, never reused.
``strict`` isolation uses a fresh container per execution.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import docker
    from docker.types import HostConfig

from codegen.sandbox.backends.kind import BackendKind, NotHere, OpenRequest
from codegen.sandbox.backends.pool import DEADLINE_GRACE_S, Deadline, PooledSandbox
from codegen.sandbox.errors import SandboxError, SandboxUnavailable
from codegen.sandbox.image import DEFAULT_SET, build_command, docker_client
from codegen.sandbox.protocol import (
    SANDBOX_ENV,
    SANDBOX_UID,
    WORKDIR,
    result_matcher,
    supervisor_command,
)
from codegen.sandbox.types import ExecResult, Limits

LABEL = "multiagent-codegen.sandbox"
OWNER_LABEL = "multiagent-codegen.sandbox.owner"
WIPE_DIRS = [WORKDIR, "/tmp", "/dev/shm", "/dev/mqueue"]
START_TIMEOUT_S = 60.0
# A creator starts its container at once, and gives up START_TIMEOUT_S later at most.
ABANDONED_AFTER_S = 2 * START_TIMEOUT_S


def _proc_start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_tag() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_proc_start_time(pid)}"


def _owner_alive(tag: str) -> bool:
    host, _, rest = tag.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's container: not ours to judge
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _proc_start_time(pid) == started  # a recycled pid is a different process


def reap_leftovers(
    client: docker.DockerClient, abandoned_after_s: float = ABANDONED_AFTER_S
) -> int:
    """Remove labelled containers whose owning process is gone (a crash), and containers
    created but never started for ``abandoned_after_s``, whoever made them: their creator
    died between create and start (a run container killed, on any host), and auto-remove
    only removes a container that ran. Returns the count."""
    removed = 0
    now = time.time()
    for info in client.api.containers(all=True, filters={"label": LABEL}):
        tag = (info.get("Labels") or {}).get(OWNER_LABEL, "")
        abandoned = info.get("State") == "created" and now - info.get("Created", now) > (
            abandoned_after_s
        )
        if abandoned or (tag and not _owner_alive(tag)):
            _remove(client, info["Id"])
            removed += 1
    return removed


def _remove(client: docker.DockerClient, cid: str) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
        client.api.remove_container(cid, force=True)
    # auto_remove may still be finishing: wait until the daemon no longer knows it.
    for _ in range(200):
        try:
            client.api.inspect_container(cid)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            pass
        time.sleep(0.05)


@dataclass
class _Box:
    cid: str
    sock: socket.socket
    sockio: socket.SocketIO  # keeps the HTTP response (and so the socket) alive
    shape: tuple[int, int, float, int]
    pending: bytearray = field(default_factory=bytearray)
    diag: bytearray = field(default_factory=bytearray)

    def send(self, data: bytes) -> None:
        self.sock.settimeout(DEADLINE_GRACE_S)
        self.sock.sendall(data)

    def _recv_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Deadline()
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            except TimeoutError as exc:
                raise Deadline() from exc
            if not chunk:
                raise ConnectionError("the container closed its output (it stopped)")
            buf += chunk
        return bytes(buf)

    def read_stdout_until(
        self, done: Callable[[bytearray], bytes | None], deadline: float, cap: int
    ) -> bytes:
        """Read multiplexed frames until ``done(stdout_bytes)`` returns a value."""
        while True:
            value = done(self.pending)
            if value is not None:
                return value
            if len(self.pending) > cap:
                raise ValueError("the supervisor's answer exceeds its size cap")
            header = self._recv_exact(8, deadline)
            size = int.from_bytes(header[4:8], "big")
            body = self._recv_exact(size, deadline)
            if header[0] == 1:
                self.pending += body
            else:
                self.diag = (self.diag + body)[-4000:]

    def read_result(self, deadline: float, cap: int) -> bytes:
        """The next ``RESULT`` payload; the size header spares re-scanning a growing buffer."""
        return self.read_stdout_until(result_matcher(), deadline, cap)


def open_docker(request: OpenRequest) -> DockerSandbox:
    """A Docker sandbox of ``request.image``; NotHere when no daemon answers."""
    try:
        docker_client(timeout=5).close()
    except SandboxUnavailable as exc:
        raise NotHere(str(exc)) from None
    return DockerSandbox(
        request.image,
        pool_size=request.pool_size,
        isolation=request.isolation,
        default_limits=request.default_limits,
        set_name=request.set_name,
    )


DOCKER = BackendKind(
    name="docker",
    open=open_docker,
    own_pid_namespace=True,
    environment="the image tag (its package set)",
    title="Docker",
    memory_scope=lambda: "the whole job (memory + swap; the container's cgroup)",
)


class DockerSandbox(PooledSandbox):
    kind = DOCKER
    backend = DOCKER.name
    memory_scope = DOCKER.memory_scope()
    wipe_dirs = tuple(WIPE_DIRS)

    def __init__(
        self,
        image: str,
        *,
        pool_size: int = 2,
        isolation: str = "pooled",
        default_limits: Limits | None = None,
        prestart: bool = True,
        client: docker.DockerClient | None = None,
        set_name: str = DEFAULT_SET,
    ) -> None:
        """``set_name``: the package set ``image`` was made for, named by the build command a
        missing image's message gives."""
        super().__init__(pool_size=pool_size, isolation=isolation, default_limits=default_limits)
        import docker.errors

        self.client = client or docker_client()
        self.image = self.environment = image
        try:
            self.client.api.inspect_image(image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"sandbox image {image!r} not found; build it with '{build_command(set_name)}'"
            ) from exc
        reap_leftovers(self.client)
        self._owner = owner_tag()
        self._all: set[str] = set()
        if prestart and isolation == "pooled":
            self.warm_up()

    # -- containers ------------------------------------------------------------------------

    @staticmethod
    def _shape(limits: Limits) -> tuple[int, int, float, int]:  # type: ignore[override]
        return (limits.memory_mb, limits.pids, limits.cpus, limits.workdir_mb)

    def _start(self, shape: tuple[int, int, float, int], mode: str = "serve") -> _Box:
        from docker.types import LogConfig, Ulimit

        memory_mb, pids, cpus, workdir_mb = shape
        api = self.client.api
        uid = f"{SANDBOX_UID}"
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            tmpfs={
                WORKDIR: f"size={workdir_mb}m,uid={uid},gid={uid},mode=0700",
                "/tmp": f"size={workdir_mb}m,mode=1777",
            },
            shm_size=f"{min(workdir_mb, 64)}m",
            mem_limit=f"{memory_mb}m",
            memswap_limit=f"{memory_mb}m",
            pids_limit=pids,
            nano_cpus=int(cpus * 1e9),
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
            log_config=LogConfig(type="none"),
            auto_remove=True,
            ipc_mode="private",
        )
        try:
            cid = self._create(api, host_config, mode)
        except Exception as exc:  # e.g. more CPUs than the host has: the daemon says why
            why = getattr(exc, "explanation", None) or exc
            raise SandboxError(f"could not create a sandbox container: {why}") from exc
        self._all.add(cid)
        try:
            sockio = api.attach_socket(
                cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            box = _Box(cid=cid, sock=sockio._sock, sockio=sockio, shape=shape)
            api.start(cid)
            if mode == "serve":
                deadline = time.monotonic() + START_TIMEOUT_S

                def ready(buf: bytearray) -> bytes | None:
                    if buf.startswith(b"READY\n"):
                        del buf[:6]
                        return b"ok"
                    return None

                box.read_stdout_until(ready, deadline, 64)
        except Exception as exc:
            self._discard_cid(cid)
            raise SandboxError(f"could not start a sandbox container: {exc}") from exc
        return box

    def _create(self, api: docker.APIClient, host_config: HostConfig, mode: str) -> str:
        return api.create_container(
            self.image,
            command=supervisor_command(mode),
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            # Not detached + stdin_open sets StdinOnce: our socket closing, even by a crash,
            # closes the supervisor's stdin, it exits and auto_remove deletes the container.
            stdin_open=True,
            detach=False,
            use_config_proxy=False,  # never inject the client's proxy settings
            environment=dict(SANDBOX_ENV),
            working_dir=WORKDIR,
            hostname="sandbox",
            network_disabled=True,
            labels={LABEL: "1", OWNER_LABEL: self._owner},
            host_config=host_config,
        )["Id"]

    def _discard_cid(self, cid: str) -> None:
        _remove(self.client, cid)
        self._all.discard(cid)

    def _discard(self, box: _Box) -> None:
        with contextlib.suppress(OSError):
            box.sock.close()
        with contextlib.suppress(Exception):
            box.sockio.close()
        self._discard_cid(box.cid)

    def _after_loss(self, box: _Box, result: ExecResult) -> None:
        try:
            state = self.client.api.inspect_container(box.cid)["State"]
            result.oom_killed = bool(state.get("OOMKilled"))
        except Exception:
            pass

    def _shutdown(self) -> None:
        super()._shutdown()
        for cid in list(self._all):
            self._discard_cid(cid)
        with contextlib.suppress(Exception):
            self.client.close()
