"""benchmarks.pick.move_unchanged: what counts as the same pick in two trees."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS
from benchmarks.pick.move_unchanged import against_stored, compared, selection_of


def run(**summary: Any) -> dict[str, Any]:
    base = {
        "tasks": 2,
        "executed_tasks": 2,
        "execution_seconds": 9.5,
        "solved": {"weighted_checks": 1.5, "random": 1.0},
    }
    picks = {
        "weighted_checks": [[1.0, True, True], [0.5, None, None]],
        "random": [[1.0, None, None], [0.0, None, None]],
    }
    return {"summary": {**base, **summary}, "picks": picks}


def test_the_same_picks_with_other_timings_are_identical() -> None:
    old, new = run(), run(executed_tasks=0, execution_seconds=0.1)
    got = compared(old, new)
    assert got["identical"] is True
    assert got["picks_compared"] == 4
    assert got["executed_tasks"] == {"old": 2, "new": 0}


def test_one_task_picked_otherwise_is_not_identical() -> None:
    old, new = run(), run()
    new = copy.deepcopy(new)
    new["picks"]["weighted_checks"][1] = [1.0, None, None]
    got = compared(old, new)
    assert got["identical"] is False
    assert got["picks_differing"] == {"weighted_checks": 1}


def test_a_rule_or_a_figure_in_one_tree_only_is_not_identical() -> None:
    new = run(solved={"weighted_checks": 2.0, "random": 1.0})
    del new["picks"]["random"]
    got = compared(run(), new)
    assert got["identical"] is False
    assert got["rules_only_in_one"] == ["random"]
    assert got["summary_fields_differing"] == ["solved"]


def test_a_flat_tree_runs_its_script_and_a_package_tree_its_module(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    assert selection_of(tmp_path)[0] == "benchmarks.pick.selection.__main__"
    (tmp_path / "benchmarks" / "selection.py").write_text("")
    module, path = selection_of(tmp_path)
    assert module == "selection"
    assert str(tmp_path / "benchmarks") in path.split(":")


def test_a_figure_off_the_stored_record_is_named() -> None:
    stored = json.loads((RESULTS / "selection_mapcoder_humaneval.json").read_text())["solved"]
    solved = {**stored, "weighted_checks": stored["weighted_checks"] - 1}
    got = against_stored("humaneval", {"summary": {"solved": solved}})
    assert got["rules_compared"] == len(stored)
    assert list(got["differing"]) == ["weighted_checks"]
    assert against_stored("humaneval", {"summary": {"solved": stored}})["differing"] == {}
