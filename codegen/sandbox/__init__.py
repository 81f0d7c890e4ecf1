"""Isolated execution of untrusted code: Docker (default) or bubblewrap, never the bare host.

    with open_sandbox() as sb:
        report = sb.run_pytest(solution_source, test_source, Limits(timeout_s=10))

``run`` / ``run_pytest`` at module level use one lazily opened default sandbox, shared by the
threads of this process and closed at exit.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Mapping

from codegen.sandbox.api import Sandbox
from codegen.sandbox.errors import SandboxError, SandboxUnavailable, UnsafePathError
from codegen.sandbox.files import FileContent, Symlink
from codegen.sandbox.types import ExecResult, Limits, TestCaseResult, TestReport

DEFAULT_IMAGE = "multiagent-codegen-sandbox:1"
BACKENDS = ("auto", "docker", "bwrap")

__all__ = [
    "BACKENDS",
    "DEFAULT_IMAGE",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "Symlink",
    "TestCaseResult",
    "TestReport",
    "UnsafePathError",
    "open_sandbox",
    "run",
    "run_pytest",
]


def _docker_reason() -> str | None:
    try:
        from codegen.sandbox.docker_backend import docker_client

        docker_client(timeout=5).close()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


def open_sandbox(
    backend: str = "auto",
    *,
    image: str = DEFAULT_IMAGE,
    pool_size: int = 2,
    isolation: str = "pooled",
    allow_unsafe_host: bool = False,
    default_limits: Limits | None = None,
    rootfs: str | None = None,
) -> Sandbox:
    """Open a sandbox; ``auto`` picks Docker when a daemon answers, else bubblewrap on Linux.

    Raises ``SandboxUnavailable`` (one-line message) when no requested backend works.
    Without the debootstrapped root file system (``codegen sandbox build --offline``)
    bubblewrap binds the host's /usr read-only instead. Only ``allow_unsafe_host=True``
    permits running on the bare host (rlimits, timeout and process-group kill, no isolation)
    when nothing else works; it is never chosen silently.
    """
    if backend not in BACKENDS:
        raise SandboxUnavailable(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS}")
    reasons: list[str] = []
    if backend in ("auto", "docker"):
        why = _docker_reason()
        if why is None:
            from codegen.sandbox.docker_backend import DockerSandbox

            return DockerSandbox(
                image, pool_size=pool_size, isolation=isolation, default_limits=default_limits
            )
        if backend == "docker":
            raise SandboxUnavailable(why)
        reasons.append(f"docker: {why}")
    if backend in ("auto", "bwrap"):
        if not sys.platform.startswith("linux"):
            reasons.append("bwrap: bubblewrap needs Linux")
        elif shutil.which("bwrap") is None:
            reasons.append("bwrap: bubblewrap is not installed")
        else:
            from codegen.sandbox.bwrap_backend import BwrapSandbox

            try:
                return BwrapSandbox(
                    rootfs=rootfs,
                    concurrency=pool_size,
                    isolation=isolation,
                    default_limits=default_limits,
                )
            except SandboxUnavailable as exc:
                reasons.append(f"bwrap: {exc}")
    if allow_unsafe_host:
        from codegen.sandbox.bwrap_backend import BwrapSandbox

        # Only rlimits, a timeout and a process-group kill: the caller asked for this by name.
        return BwrapSandbox(concurrency=pool_size, default_limits=default_limits, unsafe_host=True)
    raise SandboxUnavailable("no sandbox backend works here (" + "; ".join(reasons) + ")")


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide sandbox, opened on first use from ``CODEGEN_SANDBOX__*`` variables."""
    global _default
    with _default_lock:
        if _default is None:
            _default = open_sandbox(
                os.environ.get("CODEGEN_SANDBOX__BACKEND", "auto"),
                image=os.environ.get("CODEGEN_SANDBOX__IMAGE", DEFAULT_IMAGE),
                pool_size=int(os.environ.get("CODEGEN_SANDBOX__POOL_SIZE", "2")),
                isolation=os.environ.get("CODEGEN_SANDBOX__ISOLATION", "pooled"),
            )
        return _default


def run(
    files: Mapping[str, FileContent], command: list[str], limits: Limits | None = None
) -> ExecResult:
    return default_sandbox().run(files, command, limits)


def run_pytest(solution_source: str, test_source: str, limits: Limits | None = None) -> TestReport:
    return default_sandbox().run_pytest(solution_source, test_source, limits)
