"""Sandbox fixtures: one warm sandbox per backend for the session, and a hygiene check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sandbox_support import ROOMY, TIMINGS, ensure_docker_image, ensure_rootfs_or_skip

from codegen.sandbox import open_sandbox
from codegen.sandbox.api import Sandbox


def _open(backend: str) -> Sandbox:
    if backend == "docker":
        ensure_docker_image()
    else:
        ensure_rootfs_or_skip()
    return open_sandbox(backend, pool_size=2, default_limits=ROOMY)


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
