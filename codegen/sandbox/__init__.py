"""Isolated execution of untrusted code: Docker (default) or bubblewrap, never the bare host.

    with open_sandbox() as sb:
        report = sb.run_pytest(solution_source, test_source, Limits(timeout_s=10))

Callers choose the backend and limits (the platform's come from settings, through
``codegen.composition``); there is no process-wide default sandbox that could read them
another way.
"""

from __future__ import annotations

import shutil
import sys

from codegen.sandbox.api import Sandbox
from codegen.sandbox.errors import SandboxError, SandboxUnavailable, UnsafePathError
from codegen.sandbox.files import Symlink
from codegen.sandbox.image import bwrap_root
from codegen.sandbox.packages import DEFAULT_SET, image_tag, package_set
from codegen.sandbox.types import ExecResult, Limits, TestCaseResult, TestReport

# The default package set's image (packages.py: its name and a digest of its pinned list).
DEFAULT_IMAGE = image_tag(package_set())
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
    host_usr: bool = False,
    set_name: str = DEFAULT_SET,
) -> Sandbox:
    """Open a sandbox; ``auto`` picks Docker when a daemon answers, else bubblewrap on Linux.

    Raises ``SandboxUnavailable`` (one-line message) when no requested backend works.
    Without the debootstrapped root file system (``codegen sandbox build --offline``)
    bubblewrap is unavailable unless ``host_usr`` lets it bind the host's /usr read-only
    instead (its results then say ``bwrap-host``). Only ``allow_unsafe_host=True``
    permits running on the bare host (rlimits, timeout and process-group kill, no isolation)
    when nothing else works; it is never chosen silently. ``set_name``: the package set
    ``image`` was made for, whose build command a missing image's message gives.
    """
    if backend not in BACKENDS:
        raise SandboxUnavailable(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS}")
    reasons: list[str] = []
    if backend in ("auto", "docker"):
        why = _docker_reason()
        if why is None:
            from codegen.sandbox.docker_backend import DockerSandbox

            return DockerSandbox(
                image,
                pool_size=pool_size,
                isolation=isolation,
                default_limits=default_limits,
                set_name=set_name,
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
                    rootfs=rootfs if rootfs is not None else bwrap_root(image, set_name=set_name),
                    concurrency=pool_size,
                    isolation=isolation,
                    default_limits=default_limits,
                    allow_host_binds=host_usr,
                    set_name=set_name,
                )
            except SandboxUnavailable as exc:
                reasons.append(f"bwrap: {exc}")
    if allow_unsafe_host:
        from codegen.sandbox.bwrap_backend import BwrapSandbox

        # Only rlimits, a timeout and a process-group kill: the caller asked for this by name.
        return BwrapSandbox(concurrency=pool_size, default_limits=default_limits, unsafe_host=True)
    raise SandboxUnavailable("no sandbox backend works here (" + "; ".join(reasons) + ")")
