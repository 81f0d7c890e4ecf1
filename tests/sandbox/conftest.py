"""Sandbox fixtures: one warm sandbox per backend for the session, and a hygiene check."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sandbox_support import SMALL, TIMINGS

from sandbox import open_sandbox
from sandbox.api import Sandbox


def _ensure_docker_image() -> str:
    from sandbox import DEFAULT_IMAGE
    from sandbox.docker_backend import docker_client
    from sandbox.image import build_image, image_exists

    client = docker_client()
    try:
        present = image_exists(client, DEFAULT_IMAGE)
    finally:
        client.close()
    if not present:
        # A fresh machine: build it (debootstrap, a few minutes) rather than skip.
        build_image(DEFAULT_IMAGE, offline=True)
    return DEFAULT_IMAGE


def _ensure_rootfs() -> None:
    from sandbox.image import ensure_rootfs, rootfs_path, rootfs_ready

    if rootfs_ready(rootfs_path()):
        return
    if os.geteuid() != 0:
        pytest.skip("no debootstrapped root file system and not root to build one")
    ensure_rootfs()


def _open(backend: str) -> Sandbox:
    if backend == "docker":
        _ensure_docker_image()
    else:
        _ensure_rootfs()
    return open_sandbox(backend, pool_size=2, default_limits=SMALL)


@pytest.fixture(scope="session")
def docker_sandbox() -> Iterator[Sandbox]:
    sb = _open("docker")
    yield sb
    sb.close()


@pytest.fixture(scope="session")
def bwrap_sandbox() -> Iterator[Sandbox]:
    sb = _open("bwrap")
    yield sb
    sb.close()


@pytest.fixture(
    params=[
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("bwrap", marks=pytest.mark.bwrap),
    ]
)
def sb(request: pytest.FixtureRequest) -> Sandbox:
    return request.getfixturevalue(f"{request.param}_sandbox")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("sandbox hostile-case timings (measured, not asserted)")
    for backend, case, seconds, limit in TIMINGS:
        terminalreporter.line(f"{backend:7} {case:28} {seconds:6.2f}s  (timeout {limit:.1f}s)")
