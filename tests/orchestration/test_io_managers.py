"""Asset values stored by an older version of the code are refused in one line, never mis-read."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, asset, instance_for_test, materialize

from codegen.orchestration.io_managers import RefusingFilesystemIOManager

# What pickle wrote for a CrewState before the move into the codegen package: GLOBAL
# agents.crew.CrewState, EMPTY_TUPLE, NEWOBJ, STOP.
PRE_PACKAGE_PICKLE = b"\x80\x04cagents.crew\nCrewState\n)\x81."


@asset
def upstream() -> int:
    return 41


@asset
def downstream(upstream: int) -> int:
    return upstream + 1


def run_downstream(instance: DagsterInstance, base_dir: Path) -> int:
    result = materialize(
        [upstream.to_source_asset(), downstream],
        instance=instance,
        resources={"io_manager": RefusingFilesystemIOManager(base_dir=str(base_dir))},
        raise_on_error=False,
    )
    failures = [e for e in result.all_events if e.is_step_failure]
    assert failures, "the downstream step should have failed"
    message = failures[0].step_failure_data.error.message  # type: ignore[union-attr]
    assert "\n" not in message.strip()
    assert "older version of multiagent-codegen" in message and "upstream" in message
    return len(failures)


def test_a_value_pickled_before_the_move_is_refused_in_one_line(tmp_path: Path) -> None:
    io = RefusingFilesystemIOManager(base_dir=str(tmp_path))
    with instance_for_test() as instance:
        assert materialize([upstream, downstream], instance=instance, resources={"io_manager": io})
        assert (tmp_path / "upstream").read_bytes()  # where the filesystem manager keeps it
        (tmp_path / "upstream").write_bytes(PRE_PACKAGE_PICKLE)
        assert run_downstream(instance, tmp_path) == 1
        assert instance.get_latest_materialization_event(AssetKey("downstream"))


def test_the_stale_pickle_really_names_a_module_that_is_gone() -> None:
    import pickle

    with pytest.raises(ModuleNotFoundError, match="agents"):
        pickle.loads(PRE_PACKAGE_PICKLE)
