"""Wiring: settings are a leaf, each setting has one definition, jobs and sensors form no cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import codegen
from codegen.assets.resources import LLMResource, SandboxResource
from codegen.composition import sandbox_image, sandbox_limits
from codegen.sandbox import DEFAULT_IMAGE, Limits
from codegen.settings import get_settings


def imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


PACKAGE = Path(codegen.__file__).resolve().parent
DOMAIN = (
    "agents",
    "requests",
    "evaluation",
    "replay",
    "sandbox",
    "corpus",
    "retrieval",
    "settings",
)
SUBPACKAGES = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}


def imports_of(package: str) -> dict[str, set[str]]:
    """Every module each file of ``codegen.<package>`` imports, at any depth (lazy ones too)."""
    found: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        found[str(path.relative_to(PACKAGE))] = names
    return found


def test_the_layout_has_every_package_of_the_architecture() -> None:
    assert set(DOMAIN) | {"orchestration", "assets", "deploy"} <= SUBPACKAGES


@pytest.mark.parametrize("package", DOMAIN)
def test_domain_packages_import_neither_dagster_nor_the_layers_above(package: str) -> None:
    forbidden = ("dagster", "codegen.assets", "codegen.orchestration")
    offenders = {
        f"{file}: {name}"
        for file, names in imports_of(package).items()
        for name in names
        if any(name == f or name.startswith(f + ".") or name.startswith(f + "_") for f in forbidden)
    }
    assert not offenders


def test_settings_import_no_sibling() -> None:
    siblings = {f"codegen.{name}" for name in SUBPACKAGES - {"settings"}}
    offenders = {
        f"{file}: {name}"
        for file, names in imports_of("settings").items()
        for name in names
        if any(name == s or name.startswith(s + ".") for s in siblings)
    }
    assert not offenders


def test_the_import_checks_see_a_violation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checks above read files: prove they would catch a lazy, function-level import.
    fake = tmp_path / "codegen"
    (fake / "settings").mkdir(parents=True)
    (fake / "settings" / "__init__.py").write_text("def f():\n    from codegen.corpus import x\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert imports_of("settings") == {"settings/__init__.py": {"codegen.corpus"}}


def test_settings_import_nothing_of_the_platform() -> None:
    modules = imported_after("import codegen.settings")
    # Its own modules (codegen.settings.checks, ...) and nothing else of the package.
    own = {m for m in modules if m == "codegen.settings" or m.startswith("codegen.settings.")}
    assert "codegen.settings.checks" in own
    assert not {m for m in modules if m.startswith("codegen.")} - own
    assert not {m.split(".")[0] for m in modules} & {"dagster"}


def test_only_one_top_level_package_is_installed() -> None:
    # The distribution's own record of what it put into site-packages.
    from importlib.metadata import distribution

    dist = distribution("multiagent-codegen")
    top = dist.read_text("top_level.txt")
    if top is None:  # an editable install records its packages in the finder mapping
        files = [str(f) for f in dist.files or []]
        mapping = [f for f in files if f.endswith(".py") and "__editable__" in f]
        text = "".join((Path(str(dist.locate_file(f)))).read_text() for f in mapping)
        assert "'codegen'" in text and "'settings'" not in text and "'agents'" not in text
    else:
        assert top.split() == ["codegen"]
    with pytest.raises(subprocess.CalledProcessError):
        imported_after("import settings")


def test_jobs_and_sensors_do_not_import_the_definitions() -> None:
    assert "codegen.orchestration.definitions" not in imported_after(
        "import codegen.orchestration.launch"
    )


def test_sandbox_limits_come_from_settings_over_the_sandboxs_own_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unset, every limit is the sandbox's own default (defined once, in Limits).
    assert SandboxResource.from_settings(get_settings()).limits() == Limits()
    monkeypatch.setenv("CODEGEN_SANDBOX__TIMEOUT_S", "7")
    monkeypatch.setenv("CODEGEN_SANDBOX__PIDS", "64")
    get_settings.cache_clear()
    limits = SandboxResource.from_settings(get_settings()).limits()
    assert (limits.timeout_s, limits.pids, limits.memory_mb) == (7.0, 64, Limits().memory_mb)
    # The evaluation's per-test timeout wins over the sandbox setting, as the CLI flag does.
    assert sandbox_limits(get_settings().sandbox, timeout_s=2.5).timeout_s == 2.5
    assert sandbox_image(get_settings().sandbox) == DEFAULT_IMAGE


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
    loaded = {m.split(".")[0] for m in imported_after("import codegen.orchestration.definitions")}
    assert not {"bs4", "soupsieve", "lxml", "detect_secrets"} & loaded


@pytest.mark.bwrap
def test_a_run_fills_the_sandbox_pool_before_its_first_test_run() -> None:
    import time

    from dagster import build_resources

    from codegen.assets import resources

    key = ("bwrap", DEFAULT_IMAGE, 1, "pooled", False)  # False: no host /usr
    resources.close_shared_sandboxes()
    with build_resources({"sandbox": SandboxResource(backend="bwrap", pool_size=1)}):
        deadline = time.monotonic() + 30
        while key not in resources._sandboxes and time.monotonic() < deadline:
            time.sleep(0.05)  # opened by the resource's warm-up thread, not by a step
        box = resources._sandboxes[key]
        assert len(box._idle) == 1  # type: ignore[attr-defined]
    resources.close_shared_sandboxes()


def test_the_sandbox_warm_up_waits_for_the_runs_first_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Until then the process's CPU is the way to that call: the sandbox's imports and container
    # start would lengthen it.
    import threading

    from codegen.assets import resources

    started, opened = threading.Event(), threading.Event()
    monkeypatch.setattr(resources, "first_call_started", started)
    monkeypatch.setattr(resources, "_shared_sandbox", lambda *_: opened.set())
    SandboxResource(backend="bwrap", pool_size=1).setup_for_execution(None)  # type: ignore[arg-type]
    assert not opened.wait(0.3)
    started.set()
    assert opened.wait(10)


def test_assets_import_nothing_of_orchestration() -> None:
    # Imports run one way: orchestration (definitions, jobs, sensors, CLI) -> assets -> domain.
    modules = imported_after(
        "import codegen.assets.codegen, codegen.assets.codegen_checks, codegen.assets.corpus, "
        "codegen.assets.evaluation, "
        "codegen.assets.index, codegen.assets.evaluation_family, codegen.assets.resources"
    )
    assert not [m for m in modules if m.startswith("codegen.orchestration")]
