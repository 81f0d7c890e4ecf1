"""The import picture of ``codegen/`` (docs/architecture.md, "Import rules"), read from the code.

No file imports another in a circle; nothing imports upward against the layer order; only
``orchestration/`` and ``assets/`` import Dagster; nothing in the product imports the test
doubles (``codegen/testing/``); ``replay/`` is imported only by the recorder behind
``--record`` and the ``codegen replay`` commands. Every subpackage of ``codegen/`` is a room,
entered through its face (its ``__init__`` and the names in its ``__all__``); ``ROOMED`` names
the packages that hold rooms, and a test that it names them all. The model client imports
nothing of the pick. Every import counts: at module level, under
``TYPE_CHECKING``, inside a function, and ``importlib.import_module`` of a literal name. (How
many modules a folder may hold is a size rule: tests/test_sizes.py.)
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

import codegen

PACKAGE = Path(codegen.__file__).resolve().parent

# Top to bottom; a unit may import its own rank (no circle allowed, see below) and any rank
# under it. The last rank holds the small leaves every layer shares.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("orchestration",),
    ("assets",),
    # composition: settings -> each domain's configuration, above the domains it composes.
    ("requests", "evaluation", "replay", "composition", "deploy"),
    ("agents",),
    ("retrieval", "corpus", "sandbox"),
    ("settings",),
    ("json_types", "durable", "untrusted", ""),  # "": codegen/__init__.py
)
DAGSTER_LAYERS = ("orchestration", "assets")
TESTING = "testing"  # imports what it likes; nothing outside it imports it
# The only product modules outside replay/ that may import it, and why.
REPLAY_IMPORTERS = {
    "codegen.assets.resources": "the recorder behind --record",
    "codegen.orchestration.cli.replay": "the codegen replay commands (and --record)",
}

Graph = dict[str, dict[str, int]]  # module -> {imported codegen module: line of the import}


def modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["codegen", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _named(node: ast.AST, module: str, is_package: bool, dynamic: bool) -> Iterator[str]:
    """The dotted names one node imports (a module or a name inside one)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        # "from a.b import c": the module a.b.c when there is one, else a.b (c is a name)
        yield from (f"{base}.{alias.name}" for alias in node.names)
    elif dynamic and isinstance(node, ast.Constant) and isinstance(node.value, str):
        # import_module("codegen.x") or a "codegen.x:attr" path that one loads
        yield node.value.partition(":")[0]


def import_graph(root: Path = PACKAGE) -> tuple[Graph, dict[str, set[str]]]:
    """The codegen modules each file imports, and every top-level name it imports."""
    found = modules(root)
    graph: Graph = {name: {} for name in found}
    tops: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        text = path.read_text()
        dynamic = "import_module" in text
        for node in ast.walk(ast.parse(text, str(path))):
            for target in _named(node, name, path.name == "__init__.py", dynamic):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    tops[name].add(target.split(".")[0])
                if target.partition(".")[0] != "codegen":
                    continue
                while target and target not in found:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph, tops


def unit(module: str) -> str:
    """The top-level part of codegen a module belongs to ("" for codegen/__init__.py)."""
    return module.split(".")[1] if "." in module else ""


def rank(name: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if name in layer), None)


def cycles(graph: Graph) -> list[list[str]]:
    """One circle per strongly connected group of files (Tarjan), as a path back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_around(graph, group) for group in groups]


def _path_around(graph: Graph, group: set[str]) -> list[str]:
    start = min(group)
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if w in group and w not in came:
                came[w] = v
                queue.append(w)
    return sorted(group)


def shown(graph: Graph, path: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in pairwise(path)) + f" -> {path[-1]}"


def upward(graph: Graph) -> list[str]:
    """Imports against the layer order, and any circle between units of one rank."""
    found = []
    units: dict[str, set[str]] = {}
    for a, targets in graph.items():
        for b, line in targets.items():
            ua, ub = unit(a), unit(b)
            if ua == ub or TESTING in (ua, ub):
                continue
            ra, rb = rank(ua), rank(ub)
            if ra is not None and rb is not None and ra > rb:
                found.append(f"{a} (line {line}) imports {b}: {ua} is below {ub}")
            units.setdefault(ua, set()).add(ub)
    unit_graph = {u: dict.fromkeys(sorted(t), 0) for u, t in units.items()}
    found += [f"units import each other: {' -> '.join(c)}" for c in cycles(unit_graph)]
    return found


GRAPH, TOP_NAMES = import_graph()


def test_every_part_of_codegen_has_a_place_in_the_layers() -> None:
    placed = {name for layer in LAYERS for name in layer} | {TESTING}
    assert not {unit(m) for m in GRAPH} - placed, "add new packages to LAYERS"


def test_no_file_imports_another_in_a_circle() -> None:
    found = cycles(GRAPH)
    assert not found, "import circles:\n" + "\n".join(shown(GRAPH, c) for c in found)


def test_nothing_imports_upward() -> None:
    found = upward(GRAPH)
    assert not found, "\n".join(found)


def test_only_orchestration_and_assets_import_dagster() -> None:
    offenders = sorted(
        f"{m}: {name}"
        for m, names in TOP_NAMES.items()
        if unit(m) not in DAGSTER_LAYERS
        for name in names
        if name == "dagster" or name.startswith("dagster_")
    )
    assert not offenders


def test_the_product_never_imports_the_test_doubles() -> None:
    offenders = sorted(
        f"{a} (line {line})"
        for a, targets in GRAPH.items()
        if unit(a) != TESTING
        for b, line in targets.items()
        if unit(b) == TESTING
    )
    assert not offenders


def test_replay_is_imported_only_by_the_recorder_and_the_replay_commands() -> None:
    importers = {
        a
        for a, targets in GRAPH.items()
        if unit(a) not in ("replay", TESTING) and any(unit(b) == "replay" for b in targets)
    }
    assert importers <= set(REPLAY_IMPORTERS), sorted(importers - set(REPLAY_IMPORTERS))


# -- the rooms: every subpackage -----------------------------------------------------------
AGENTS = "codegen.agents"
EVALUATION = "codegen.evaluation"
SANDBOX = "codegen.sandbox"
CORPUS = "codegen.corpus"
RETRIEVAL = "codegen.retrieval"
ORCHESTRATION = "codegen.orchestration"
# The packages cut into rooms.
ROOMED = (AGENTS, EVALUATION, SANDBOX, CORPUS, RETRIEVAL, ORCHESTRATION)
# Not a room: the code that runs in the box, shipped as files; nothing imports it
# (tests/sandbox/test_inside.py).
NOT_ROOMS = {f"{SANDBOX}.inside"}
# The model client's room and the one it must not reach, directly or through anything else.
CLIENT, PICK = f"{AGENTS}.llm", f"{AGENTS}.pick"


def rooms(root: Path = PACKAGE) -> dict[str, Path]:
    """Every subpackage of a package in ``ROOMED`` (at any depth), by its dotted name: the
    rooms."""
    return {
        name: path
        for name, path in modules(root).items()
        if any(name.startswith(p + ".") for p in ROOMED)
        and path.name == "__init__.py"
        and name not in NOT_ROOMS
    }


def past_faces(graph: Graph, room_names: set[str]) -> list[str]:
    """Imports of a room's plain module from outside that room (its face is its package)."""
    found = []
    for a, targets in graph.items():
        for b, line in targets.items():
            room = b.rpartition(".")[0]
            if b in room_names or room not in room_names:
                continue  # a face, or a module outside every room
            if a != room and not a.startswith(room + "."):
                found.append(f"{a} (line {line}) imports {b}: use its face, {room}")
    return found


def benchmark_graph(root: Path = PACKAGE) -> Graph:
    """What the scripts in ``benchmarks/`` import of codegen, resolved as ``import_graph`` does."""
    folder = root.parent / "benchmarks"
    known = modules(root)
    graph: Graph = {}
    for path in sorted(folder.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        text = path.read_text()
        targets: dict[str, int] = {}
        for node in ast.walk(ast.parse(text, str(path))):
            for target in _named(node, name, False, "import_module" in text):
                if target.partition(".")[0] != "codegen":
                    continue
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    targets.setdefault(target, node.lineno)
        graph[name] = targets
    return graph


def face_names(init: Path) -> list[str] | None:
    """A face's ``__all__`` (None: it has none)."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [
            "__all__"
        ]:
            return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return None


def reached(graph: Graph, start: set[str]) -> set[str]:
    """Every module the ``start`` modules import, at any distance."""
    seen, todo = set(start), list(start)
    while todo:
        for b in graph.get(todo.pop(), {}):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


ROOMS = rooms()


def test_agents_and_evaluation_have_their_rooms() -> None:
    assert {f"{AGENTS}.{r}" for r in ("llm", "replies", "pick", "pick.inputs")} <= set(ROOMS)
    rooms_of_evaluation = ("classeval", "store", "report", "session")
    assert {f"{EVALUATION}.{r}" for r in rooms_of_evaluation} <= set(ROOMS)


def test_sandbox_has_its_rooms() -> None:
    assert {f"{SANDBOX}.{r}" for r in ("backends", "image")} <= set(ROOMS)


def test_every_package_that_holds_a_room_is_checked() -> None:
    # A new subpackage anywhere is a room: its face is checked like the others'.
    holding = {
        ".".join(name.split(".")[:2])
        for name, path in modules(PACKAGE).items()
        if path.name == "__init__.py" and name.count(".") >= 2
    }
    assert holding == set(ROOMED), "add the package to ROOMED"


def test_orchestration_has_its_rooms() -> None:
    assert {f"{ORCHESTRATION}.{r}" for r in ("instance", "launch", "cli")} <= set(ROOMS)


def test_nothing_outside_a_room_imports_past_its_face() -> None:
    # The product and the benchmarks; a test may reach inside a room to test what it hides.
    found = past_faces({**GRAPH, **benchmark_graph()}, set(ROOMS))
    assert not found, "\n".join(found)


def test_each_face_exports_with_all_and_names_no_module_of_its_room() -> None:
    # A face name that is also a module of the room would make ``from room import name`` an
    # import of that module to the checks above (and to a reader).
    for room, init in ROOMS.items():
        exported = face_names(init)
        assert exported, f"{init}: a room's face lists what it exports in __all__"
        siblings = {p.stem for p in init.parent.glob("*.py")} | {
            p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()
        }
        assert not set(exported) & siblings, f"{room}: exports a name its modules have"
        module = __import__(room, fromlist=["_"])
        assert all(hasattr(module, name) for name in exported), room


def test_the_model_client_imports_nothing_of_the_pick() -> None:
    # The step that picks hands the client's drafts their reliabilities, never the reverse.
    client = {m for m in GRAPH if m == CLIENT or m.startswith(CLIENT + ".")}
    assert client
    found = sorted(m for m in reached(GRAPH, client) if m == PICK or m.startswith(PICK + "."))
    assert not found, found


def test_the_room_checks_see_a_violation(tmp_path: Path) -> None:
    # A module reaching past a face, also lazily; a face importing its own modules, a sibling
    # importing a sibling and a sub-room's module importing its parent room's are all fine.
    files = {
        "__init__.py": "",
        "agents/__init__.py": "",
        "agents/steps.py": "def f():\n    from codegen.agents.pick.vote import x\n",
        "agents/pick/__init__.py": "from codegen.agents.pick.vote import x\n",
        "agents/pick/vote.py": "from codegen.agents.pick.inputs import y\n",
        "agents/pick/other.py": "from codegen.agents.pick.vote import x\n",
        "agents/pick/inputs/__init__.py": "from codegen.agents.pick.inputs.seeds import y\n",
        "agents/pick/inputs/seeds.py": "from codegen.agents.pick import vote\n",
        "agents/llm/__init__.py": "from codegen.agents.llm.client import c\n",
        "agents/llm/client.py": "from codegen.agents.steps import f\n",
        "orchestration/__init__.py": "",
        "orchestration/definitions.py": "from codegen.orchestration.launch.jobs import j\n",
        "orchestration/launch/__init__.py": "from codegen.orchestration.launch.jobs import j\n",
        "orchestration/launch/jobs.py": "from codegen.orchestration.instance import k\n",
        "orchestration/instance/__init__.py": "k = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph, _ = import_graph(tmp_path)
    assert past_faces(graph, set(rooms(tmp_path))) == [
        "codegen.agents.steps (line 2) imports codegen.agents.pick.vote: use its face, "
        "codegen.agents.pick",
        "codegen.orchestration.definitions (line 1) imports codegen.orchestration.launch.jobs: "
        "use its face, codegen.orchestration.launch",
    ]
    client = {m for m in graph if m.startswith(CLIENT)}
    assert "codegen.agents.pick.vote" in reached(graph, client)  # through steps


def test_the_checks_see_lazy_and_type_only_imports(tmp_path: Path) -> None:
    # A circle made only of a TYPE_CHECKING import and a function-local one, an upward import
    # through importlib, Dagster in a domain package, and the doubles imported by the product.
    files = {
        "__init__.py": "",
        "evaluation/__init__.py": "",
        "evaluation/store.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from codegen.evaluation.harness import C\n"
        ),
        "evaluation/harness.py": "def f():\n    from . import store\n",
        "agents/__init__.py": "import importlib\nimportlib.import_module('codegen.assets.x')\n",
        "assets/__init__.py": "",
        "assets/x.py": "from codegen.testing import doubles\n",
        "sandbox/__init__.py": "def g():\n    import dagster\n",
        "testing/__init__.py": "",
        "testing/doubles.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph, tops = import_graph(tmp_path)
    assert cycles(graph) == [
        ["codegen.evaluation.harness", "codegen.evaluation.store", "codegen.evaluation.harness"]
    ]
    assert upward(graph) == [
        "codegen.agents (line 2) imports codegen.assets.x: agents is below assets"
    ]
    assert "dagster" in tops["codegen.sandbox"]
    assert graph["codegen.assets.x"] == {"codegen.testing.doubles": 1}


@pytest.mark.parametrize("module", sorted(REPLAY_IMPORTERS))
def test_the_allowed_replay_importers_exist(module: str) -> None:
    assert module in GRAPH, f"{module} is gone: drop it from REPLAY_IMPORTERS"
