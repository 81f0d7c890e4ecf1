"""benchmarks/ is a package of its own (issue 47): its scripts import one another as
``benchmarks.*`` (never through ``sys.path``), only beside the installed ``codegen``, the
standard library and third-party libraries, in folders and modules a reader takes in whole."""

from __future__ import annotations

import ast
import importlib
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def sources() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text(), str(path))
        for path in sorted(BENCHMARKS.rglob("*.py"))
    }


def optional_libraries() -> set[str]:
    """Import names of the optional extras (``bench``: openvino), which may not be installed."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirements in extras.get("optional-dependencies", {}).values():
        for requirement in requirements:
            names.add(requirement.split("=")[0].split(">")[0].strip().replace("-", "_"))
    return names


def top_names(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, top-level name) of every import; a relative import is named by its dots."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.partition(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            top = "." * node.level if node.level else (node.module or "").partition(".")[0]
            found.append((node.lineno, top))
    return found


def test_no_benchmark_edits_sys_path() -> None:
    found = [
        f"{name}:{node.lineno}"
        for name, tree in sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]
    assert not found, f"benchmarks reach sys.path (import benchmarks.* instead): {found}"


def test_benchmarks_import_only_codegen_the_stdlib_libraries_and_themselves() -> None:
    allowed = {"codegen", "benchmarks", *sys.stdlib_module_names}
    allowed |= set(packages_distributions()) | optional_libraries()
    # A flat sibling import (``from machine import machine``) worked only with the scripts'
    # folder on sys.path; a sibling's name must never pass as a library's.
    siblings = {p.stem for p in BENCHMARKS.rglob("*.py")} | {
        p.name for p in BENCHMARKS.rglob("*") if p.is_dir()
    }
    found = [
        f"{name}:{line} imports {top}"
        for name, tree in sources().items()
        for line, top in top_names(tree)
        if top not in allowed or (top in siblings and top != "benchmarks")
    ]
    assert not found, "\n".join(found)


def benchmark_module_names() -> list[str]:
    return [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted(BENCHMARKS.rglob("*.py"))
    ]


@pytest.mark.parametrize("name", benchmark_module_names())
def test_every_benchmark_module_imports_as_a_package_module(name: str) -> None:
    # What `python -m benchmarks.<group>.<script>` needs first; main() is not run.
    importlib.import_module(name)
