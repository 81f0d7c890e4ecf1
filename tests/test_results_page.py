"""docs/results.md is exactly what benchmarks/results_page.py makes of the stored JSON."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

import benchmarks.results_page

ROOT = Path(__file__).resolve().parents[1]


def load_script() -> ModuleType:
    return benchmarks.results_page


def test_the_committed_page_is_what_the_stored_json_gives() -> None:
    page = load_script()
    assert (ROOT / "docs" / "results.md").read_text() == page.render()


def test_a_changed_figure_changes_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = load_script()
    stored = page.RESULTS / "gpu_corpus_build_store.json"
    data = json.loads(stored.read_text())
    data["store"]["upsert_rows_per_s"] = 1.25
    for src in page.RESULTS.glob("*.json"):
        (tmp_path / src.name).write_text(src.read_text())
    (tmp_path / stored.name).write_text(json.dumps(data))
    monkeypatch.setattr(page, "RESULTS", tmp_path)
    text = page.render()
    assert "| upsert rows per second | 1.25 |" in text
    assert text != (ROOT / "docs" / "results.md").read_text()


def test_a_file_without_a_description_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = load_script()
    (tmp_path / "new_bench.json").write_text("{}")
    monkeypatch.setattr(page, "RESULTS", tmp_path)
    with pytest.raises(page.StaleError, match="new_bench"):
        page.render()


def test_a_recorded_command_shows_how_it_runs_today() -> None:
    page = load_script()
    text = page.render()
    # The stored JSON is history: its command stays as recorded, the moved script beside it.
    assert "- Command, as recorded: `.venv/bin/python benchmarks/replay_crew.py`" in text
    assert "- Runs today as: `.venv/bin/python -m benchmarks.crew.replay_crew`" in text


def test_every_moved_script_names_a_module_that_runs_today() -> None:
    page = load_script()
    runnable = set(page.benchmark_modules()) | {"benchmarks.common.classeval_heldout"}
    assert set(page.MOVED.values()) <= runnable


def test_a_recorded_script_the_page_cannot_place_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = load_script()
    for src in page.RESULTS.glob("*.json"):
        (tmp_path / src.name).write_text(src.read_text())
    stored = tmp_path / "replay_crew.json"
    data = json.loads(stored.read_text())
    data["command"] = ".venv/bin/python benchmarks/gone.py"
    stored.write_text(json.dumps(data))
    monkeypatch.setattr(page, "RESULTS", tmp_path)
    with pytest.raises(page.StaleError, match=r"benchmarks/gone\.py"):
        page.render()
