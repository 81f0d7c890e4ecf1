"""The code that runs inside the box (``codegen/sandbox/inside/``) is shipped as files: each
module imports only the standard library, its siblings by bare name (as they sit side by side
in the box) and, for the pytest driver alone, the image's pytest; and no host module imports
it (host code reads its files, ``protocol.inside_source``)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import codegen

ROOT = Path(codegen.__file__).parent
INSIDE = ROOT / "sandbox" / "inside"
MODULES = sorted(p for p in INSIDE.glob("*.py") if p.name != "__init__.py")
THIRD_PARTY = {"pytest_driver.py": {"pytest", "_pytest"}}


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: a relative import cannot work in the box"
            names.add(str(node.module).split(".")[0])
    return names


def test_inside_imports_only_the_standard_library_pytest_and_its_siblings() -> None:
    assert {p.name for p in MODULES} >= {
        "supervisor.py",
        "call_driver.py",
        "handles.py",
        "isolation.py",
        "isolation_codec.py",
        "isolation_kinds.py",
        "isolation_wire.py",
        "pytest_driver.py",
        "score_driver.py",
    }
    siblings = {p.stem for p in MODULES}
    for path in MODULES:
        allowed = set(sys.stdlib_module_names) | siblings | THIRD_PARTY.get(path.name, set())
        assert _imported(path) <= allowed, (path.name, _imported(path) - allowed)


def test_no_host_module_imports_the_inside() -> None:
    for path in ROOT.rglob("*.py"):
        if INSIDE in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [str(node.module)]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.startswith("codegen.sandbox.inside") for n in names), path
