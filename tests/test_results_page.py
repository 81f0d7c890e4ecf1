"""docs/results.md is exactly what benchmarks/results_page.py makes of the stored JSON."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "results_page", ROOT / "benchmarks" / "results_page.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


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
