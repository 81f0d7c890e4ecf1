"""Wiring: settings are a leaf, each setting has one definition, jobs and sensors form no cycle."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assets.resources import LLMResource, SandboxResource
from settings import SandboxSettings, get_settings


def imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_settings_import_nothing_of_the_platform() -> None:
    modules = imported_after("import settings, settings.retrieval")
    platform = {"assets", "orchestration", "agents", "dagster"}
    assert not {m.split(".")[0] for m in modules} & platform


def test_jobs_and_sensors_do_not_import_the_definitions() -> None:
    assert "orchestration.definitions" not in imported_after(
        "import orchestration.jobs, orchestration.sensors"
    )


def test_resources_take_their_defaults_from_the_settings() -> None:
    assert SandboxResource().model_dump() == SandboxSettings().model_dump()


def test_retrieval_context_settings_reach_the_crew(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEGEN_RETRIEVAL__TOP_K", "3")
    monkeypatch.setenv("CODEGEN_RETRIEVAL__CONTEXT_TOKEN_BUDGET", "200")
    get_settings.cache_clear()
    options = LLMResource.from_settings(get_settings()).crew_options()
    assert (options.top_k, options.context_token_budget) == (3, 200)
    # A request's own options still win.
    assert LLMResource.from_settings(get_settings()).crew_options({"top_k": 5}).top_k == 5


def test_loading_the_definitions_leaves_corpus_only_libraries_unloaded() -> None:
    # Every run and every CLI request loads the definitions; HTML parsing and the secret
    # patterns are imported by the corpus steps that use them (~0.15 s otherwise).
    loaded = {m.split(".")[0] for m in imported_after("import orchestration.definitions")}
    assert not {"bs4", "soupsieve", "lxml", "detect_secrets"} & loaded


@pytest.mark.bwrap
def test_a_run_fills_the_sandbox_pool_before_its_first_test_run() -> None:
    import time

    from dagster import build_resources

    from assets import resources

    key = ("bwrap", SandboxSettings().image, 1, "pooled")
    resources.close_shared_sandboxes()
    with build_resources({"sandbox": SandboxResource(backend="bwrap", pool_size=1)}):
        deadline = time.monotonic() + 30
        while key not in resources._sandboxes and time.monotonic() < deadline:
            time.sleep(0.05)  # opened by the resource's warm-up thread, not by a step
        box = resources._sandboxes[key]
        assert len(box._idle) == 1  # type: ignore[attr-defined]
    resources.close_shared_sandboxes()


def test_assets_import_nothing_of_orchestration() -> None:
    # Imports run one way: orchestration (definitions, jobs, sensors, CLI) -> assets -> domain.
    modules = imported_after(
        "import assets.codegen, assets.corpus, assets.evaluation, assets.index, "
        "assets.evaluation_session, assets.resources"
    )
    assert not [m for m in modules if m.split(".")[0] == "orchestration"]
