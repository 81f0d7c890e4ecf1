"""Shared by the sandbox tests: small limits, timings, and what 'nothing is left behind'
means, checked against the real daemon and /proc."""

from __future__ import annotations

import dataclasses
import os

import pytest

from codegen.sandbox import Limits
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends.bwrap import processes_of_uid
from codegen.sandbox.backends.docker import LABEL, OWNER_LABEL, owner_tag

# Small limits keep the hostile suite quick on a 2-core machine.
SMALL = Limits(
    timeout_s=2.0, memory_mb=128, pids=64, cpus=1.0, workdir_mb=16, max_output_bytes=200_000
)
# The same sandbox shape with room for a loaded machine, for tests that are not about limits.
ROOMY = dataclasses.replace(SMALL, timeout_s=60.0)
TIMINGS: list[tuple[str, str, float, float]] = []


def record_timing(backend: str, case: str, seconds: float, limit: float) -> None:
    TIMINGS.append((backend, case, seconds, limit))


def supervisors_on_host(owner: str) -> list[int]:
    """Host pids running a sandbox supervisor started by ``owner`` (this test process)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if b"The in-sandbox supervisor" in cmdline and owner.encode() in cmdline:
            found.append(int(name))
    return found


def assert_clean(sb: Sandbox) -> None:
    """Nothing of *this* sandbox is left; other engineers' sandboxes may be running."""
    if sb.backend == "docker":
        api = sb.client.api  # type: ignore[attr-defined]
        mine = {"label": [LABEL, f"{OWNER_LABEL}={owner_tag()}"]}
        stopped = [c for c in api.containers(all=True, filters=mine) if c["State"] != "running"]
        assert not stopped, f"stopped sandbox containers left: {[c['Id'][:12] for c in stopped]}"
        for info in api.containers(filters=mine):
            procs = api.top(info["Id"])["Processes"] or []
            assert len(procs) == 1, f"container {info['Id'][:12]} still runs {procs}"
    else:
        # An idle pooled bwrap sandbox is exactly: bwrap, its PID-namespace init, the
        # supervisor. Anything else of ours (by uid or by supervisor marker) is a leak.
        allowed: set[int] = set()
        for box in list(sb._idle):  # type: ignore[attr-defined]
            tree = descendants(box.proc.pid)
            assert len(tree) == 2, f"bwrap sandbox {box.proc.pid} runs extra processes {tree}"
            allowed |= tree | {box.proc.pid}
        for uid in sb.slot_uids():  # type: ignore[attr-defined]
            left = set(processes_of_uid(uid)) - allowed
            assert not left, f"bwrap uid {uid} left processes {left}"
        strays = set(supervisors_on_host(owner_tag())) - allowed
        assert not strays, f"supervisor processes left on the host: {strays}"


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def assert_still_works(sb: Sandbox) -> None:
    result = sb.run({"ok.py": "print('still ok')\n"}, ["python3", "ok.py"])
    assert result.exit_code == 0, result
    assert result.stdout == "still ok\n"


def ensure_docker_image() -> str:
    from codegen.sandbox import DEFAULT_IMAGE
    from codegen.sandbox.image import build_image, docker_client, image_exists

    client = docker_client()
    try:
        present = image_exists(client, DEFAULT_IMAGE)
    finally:
        client.close()
    if not present:
        # A fresh machine: build it (debootstrap, a few minutes) rather than skip.
        build_image(DEFAULT_IMAGE, offline=True)
    return DEFAULT_IMAGE


def ensure_rootfs_or_skip() -> None:
    from codegen.sandbox import DEFAULT_IMAGE
    from codegen.sandbox.image import (
        ensure_image_rootfs,
        image_rootfs_path,
        package_set,
        rootfs_ready,
    )

    # bubblewrap's root for the default image: the debootstrapped tree plus its package set.
    if rootfs_ready(image_rootfs_path(DEFAULT_IMAGE)):
        return
    if os.geteuid() != 0:
        pytest.skip("no debootstrapped root file system and not root to build one")
    ensure_image_rootfs(DEFAULT_IMAGE, package_set())
