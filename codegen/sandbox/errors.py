"""Exceptions the sandbox raises; each message is one line meant for a user."""

from __future__ import annotations


class SandboxError(RuntimeError):
    """Something about the sandbox itself went wrong (not the code it ran)."""


class SandboxUnavailable(SandboxError):
    """No requested backend works here (no Docker daemon, no bubblewrap, no image)."""


class UnsafePathError(SandboxError, ValueError):
    """A file path or link would reach outside the sandbox work dir."""
