"""Isolated execution of untrusted code: Docker (default) or bubblewrap, never the bare host.

The core is here (the ``Sandbox`` interface, the shared base, the wire protocol, files, limits
and results); around it two rooms, each entered through its ``__init__``: ``backends/`` (each
backend one ``BackendKind``, registered once) and ``image/`` (the package set, the image and
the bubblewrap root). ``inside/`` holds the code that runs in the box, shipped as files.

    with open_sandbox() as sb:
        report = sb.run_pytest(solution_source, test_source, Limits(timeout_s=10))

Callers choose the backend and limits (the platform's come from settings, through
``codegen.composition``); there is no process-wide default sandbox that could read them
another way.
"""

from __future__ import annotations

from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import BackendKind, OpenRequest, backend_names, open_backend, register
from codegen.sandbox.errors import SandboxError, SandboxUnavailable, UnsafePathError
from codegen.sandbox.files import Symlink
from codegen.sandbox.image import DEFAULT_SET, image_tag, package_set
from codegen.sandbox.types import (
    ExecResult,
    Limits,
    ProgramRun,
    TestCaseResult,
    TestReport,
)

# The default package set's image (image/packages.py: its name and a digest of its pinned list).
DEFAULT_IMAGE = image_tag(package_set())

__all__ = [
    "DEFAULT_IMAGE",
    "BackendKind",
    "ExecResult",
    "Limits",
    "OpenRequest",
    "ProgramRun",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "Symlink",
    "TestCaseResult",
    "TestReport",
    "UnsafePathError",
    "backend_names",
    "open_sandbox",
    "register",
]


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
    """Open a sandbox of ``backend`` (one of ``backend_names()``); ``auto`` picks the first
    registered backend that works here: Docker when a daemon answers, else bubblewrap on Linux.

    Raises ``SandboxUnavailable`` (one-line message) when no requested backend works.
    Without the debootstrapped root file system (``codegen sandbox build --offline``)
    bubblewrap is unavailable unless ``host_usr`` lets it bind the host's /usr read-only
    instead (its results then say ``bwrap-host``). Only ``allow_unsafe_host=True``
    permits running on the bare host (rlimits, timeout and process-group kill, no isolation)
    when nothing else works; it is never chosen silently. ``set_name``: the package set
    ``image`` was made for, whose build command a missing image's message gives.
    """
    request = OpenRequest(
        image,
        pool_size=pool_size,
        isolation=isolation,
        default_limits=default_limits,
        rootfs=rootfs,
        host_usr=host_usr,
        set_name=set_name,
    )
    return open_backend(backend, request, allow_unsafe_host=allow_unsafe_host)
