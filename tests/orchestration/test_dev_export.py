"""`make run` starts the embedder's one-off model export beside the UI when the first build
will run, and stopping `make run` ends it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codegen.orchestration import dev
from codegen.settings import get_settings


def test_make_run_starts_the_export_only_for_a_first_build_and_stops_it(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "user-model-cache"
    monkeypatch.setenv("CODEGEN_RETRIEVAL__MODEL_CACHE_DIR", str(cache))
    get_settings.cache_clear()
    assert dev._first_build_export() is None  # isolated_home turns the first build off

    monkeypatch.setenv("CODEGEN_CORPUS__BUILD_ON_FIRST_RUN", "true")
    get_settings.cache_clear()
    exporting = dev._first_build_export()
    get_settings.cache_clear()
    assert exporting is not None
    time.sleep(2)
    assert exporting.poll() is None, "the export ended before make run stopped"
    dev._stop_export(exporting)
    assert exporting.returncode is not None  # it never outlives make run
    # What it may have left (killed inside a C call) the next export clears: see
    # tests/retrieval/test_embedders.py::test_partial_or_damaged_export_is_rebuilt.
