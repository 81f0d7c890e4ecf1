"""The sandbox backends: Docker and bubblewrap (and the bare host, for tests only), each one
``BackendKind`` (kind.py) beside its class (docker.py, bwrap.py with its spawner.py),
registered once in registry.py; the warm pool both keep their boxes in (pool.py).

Code outside this room imports it from here; its modules import each other directly.
"""

from __future__ import annotations

from codegen.sandbox.backends.kind import BackendKind, NotHere, OpenRequest
from codegen.sandbox.backends.registry import (
    backend_label,
    backend_names,
    memory_scopes,
    open_backend,
    own_pid_namespace,
    register,
    unregister,
)

__all__ = [
    "BackendKind",
    "NotHere",
    "OpenRequest",
    "backend_label",
    "backend_names",
    "memory_scopes",
    "open_backend",
    "own_pid_namespace",
    "register",
    "unregister",
]
