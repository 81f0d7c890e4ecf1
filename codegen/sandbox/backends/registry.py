"""The sandbox backends, registered once: ``open_sandbox`` opens them, and the settings check
(``codegen.composition``), the CLI's ``--backend`` and ``codegen info`` list them from here.

A new backend is a module defining its ``BackendKind`` (kind.py) and one ``register``
line below; ``auto`` tries the registered kinds in this order.
"""

from __future__ import annotations

from pathlib import Path

from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends.bwrap import BWRAP, UNSAFE_HOST
from codegen.sandbox.backends.docker import DOCKER
from codegen.sandbox.backends.kind import BackendKind, NotHere, OpenRequest
from codegen.sandbox.errors import SandboxUnavailable
from codegen.sandbox.image import image_rootfs_path, rootfs_path, rootfs_ready

AUTO = "auto"  # not a backend: the first registered one in ``auto`` that works here

_KINDS: dict[str, BackendKind] = {}


def register(kind: BackendKind) -> BackendKind:
    """Make ``kind`` a backend settings, the CLI and ``open_sandbox`` accept by its name."""
    if kind.name == AUTO or _KINDS.get(kind.name, kind) is not kind:
        raise ValueError(f"sandbox backend {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister(kind: BackendKind) -> None:
    """Forget ``kind`` (a test's own backend, when the test ends)."""
    if _KINDS.get(kind.name) is kind:
        del _KINDS[kind.name]


register(DOCKER)
register(BWRAP)


def backend_names() -> tuple[str, ...]:
    """What ``[sandbox] backend`` and ``--backend`` accept: ``auto``, then each backend."""
    return (AUTO, *_KINDS)


def memory_scopes() -> dict[str, str]:
    """Per backend, what its memory limit covers on this machine (``codegen info``)."""
    return {name: kind.memory_scope() for name, kind in _KINDS.items()}


def backend_kind(name: str) -> BackendKind | None:
    return _KINDS.get(name)


def kind_of(sandbox: Sandbox) -> BackendKind | None:
    """The kind of an open sandbox (None for a stand-in without one)."""
    kind = getattr(sandbox, "kind", None)
    return kind if isinstance(kind, BackendKind) else None


def own_pid_namespace(sandbox: Sandbox) -> bool:
    """Whether ``sandbox`` has its own PID namespace (there a driver may kill every process but
    its own line); the bare host (tests only) and stand-ins do not."""
    kind = kind_of(sandbox)
    return kind is not None and kind.own_pid_namespace


def refusal(name: str) -> str:
    """Why ``name`` is not a backend, naming those that are."""
    return f"unknown sandbox backend {name!r}; choose one of {', '.join(backend_names())}"


def open_backend(name: str, request: OpenRequest, *, allow_unsafe_host: bool) -> Sandbox:
    """The sandbox of backend ``name`` (``auto``: the first that works here); else the bare
    host where ``allow_unsafe_host`` permits it; else SandboxUnavailable saying why each failed.
    """
    if name == AUTO:
        kinds = [kind for kind in _KINDS.values() if kind.in_auto]
    elif name in _KINDS:
        kinds = [_KINDS[name]]
    else:
        raise SandboxUnavailable(refusal(name))
    reasons: list[str] = []
    for kind in kinds:
        try:
            return kind.open(request)
        except NotHere as exc:
            reasons.append(f"{kind.name}: {exc}")
    if allow_unsafe_host:
        return UNSAFE_HOST.open(request)
    raise SandboxUnavailable("no sandbox backend works here (" + "; ".join(reasons) + ")")


def backend_label(
    name: str, host_usr: bool, cache_dir: Path | None = None, image: str | None = None
) -> str:
    """The configured backend as ``codegen info`` shows it: where a backend would bind the
    host's /usr (no root of its own built, ``host_usr`` set), the name its results carry."""
    kinds = [k for k in _KINDS.values() if k.in_auto] if name == AUTO else [_KINDS.get(name)]
    binding = next((k for k in kinds if k is not None and k.host_usr_label), None)
    if binding is None or not host_usr or rootfs_ready(rootfs_path(cache_dir)):
        return name
    if image is not None and rootfs_ready(image_rootfs_path(image, cache_dir)):
        return name
    label = str(binding.host_usr_label)
    before = [k.title for k in kinds[: kinds.index(binding)] if k is not None]
    if name == binding.name or not before:
        return label if name == binding.name else f"{name} ({label})"
    return f"{name} ({label} without {', '.join(before)})"
