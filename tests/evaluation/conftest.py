"""Fixtures for the evaluation tests: a real sandbox, shared by the tests of a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codegen.sandbox.api import Sandbox


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    sandbox = open_sandbox("auto", pool_size=2)
    try:
        yield sandbox
    finally:
        sandbox.close()
