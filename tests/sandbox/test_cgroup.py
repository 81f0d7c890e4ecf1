"""The bubblewrap backend's memory cgroup: where it can be made, what it holds, and what the
sandbox says when it cannot be made (the limit is then RLIMIT_AS, per process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codegen.sandbox.backends import cgroup


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    cgroup.place.cache_clear()
    yield
    cgroup.place.cache_clear()


def test_without_root_the_limit_is_per_process_and_says_why(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cgroup.os, "geteuid", lambda: 1000)
    assert cgroup.place() == "not root (a memory cgroup needs root here)"
    assert cgroup.scope() == (
        "each process on its own (RLIMIT_AS; no job cgroup: not root (a memory cgroup needs "
        "root here))"
    )


def test_a_sandbox_cgroup_holds_the_limit_for_memory_and_swap_and_goes(fresh_probe: None) -> None:
    where = cgroup.place()
    if isinstance(where, str):
        pytest.skip(f"no memory cgroup can be made here: {where}")
    group = cgroup.make(where, 96 << 20, "test")
    try:
        assert group.path.parent == where.path and group.path.is_dir()
        if group.version == 1:
            assert (group.path / "memory.limit_in_bytes").read_text().strip() == str(96 << 20)
            memsw = group.path / "memory.memsw.limit_in_bytes"
            assert not memsw.exists() or memsw.read_text().strip() == str(96 << 20)
        else:
            assert (group.path / "memory.max").read_text().strip() == str(96 << 20)
        assert group.oom_kills() == 0
    finally:
        group.remove()
    assert not group.path.exists()
    assert cgroup.scope().startswith("the whole job (memory")
    assert f"a cgroup v{where.version} under {where.path} per sandbox" in cgroup.scope()
