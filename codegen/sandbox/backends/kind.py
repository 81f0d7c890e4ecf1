"""What a sandbox backend is to the rest of the platform: one ``BackendKind`` declaring its
properties, so that callers read a property instead of comparing backend names.

Each backend module defines its kind beside its class; ``registry.py`` registers the kinds
once and is where ``open_sandbox``, the settings check, the CLI and ``codegen info`` list them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codegen.sandbox.errors import SandboxUnavailable
from codegen.sandbox.image import DEFAULT_SET
from codegen.sandbox.types import Limits

if TYPE_CHECKING:
    from codegen.sandbox.api import Sandbox


class NotHere(SandboxUnavailable):
    """This backend cannot run on this machine (no daemon, no program): ``auto`` tries the next.
    Any other ``SandboxUnavailable`` (a missing image, say) stops the search: it is the fix."""


@dataclass(frozen=True)
class OpenRequest:
    """What ``open_sandbox`` hands every backend's ``open``; each reads what applies to it."""

    image: str
    pool_size: int = 2
    isolation: str = "pooled"
    default_limits: Limits | None = None
    rootfs: str | None = None  # a bubblewrap root to mount instead of the image's
    host_usr: bool = False  # bubblewrap may bind the host's /usr when no root is built
    set_name: str = DEFAULT_SET  # the package set ``image`` was made for (its build command)


@dataclass(frozen=True)
class BackendKind:
    """One sandbox backend: its name and what callers may rely on."""

    # The name settings (``[sandbox] backend``), the CLI (``--backend``) and results carry.
    name: str
    # Opens a sandbox; raises NotHere when this machine cannot run it.
    open: Callable[[OpenRequest], Sandbox]
    # The box has its own PID namespace: a driver inside may kill every process but its own
    # line. Without one (the bare host) leftovers are left to the supervisor.
    own_pid_namespace: bool
    # What ``Sandbox.environment`` holds for it, the part of a verdict's cache key that says
    # what the code ran on and could import (a verdict holds there only).
    environment: str
    # A file-system fence inside the box beyond its mounts (Landlock): none yet, anywhere.
    fence: str = "none"
    # The name its results carry when it binds the host's /usr (no root of its own built).
    host_usr_label: str | None = None
    # How a person names what it needs, in a message saying another was used without it.
    title: str = ""
    # ``auto`` tries it (in registration order); False: only by name.
    in_auto: bool = True
    # What its memory limit covers here ("the whole job (...)", "each process on its own
    # (...)"), for ``codegen info`` and each result's ``memory_limit``.
    memory_scope: Callable[[], str] = lambda: "the whole job"
