"""What a person is shown of a request's module: the spec's outline (its program's interface,
functions, classes with their methods, constants, dependencies) and the suite's results per
program, function and method.

Per-method results are read from the suite itself, conservatively: a test counts for the
spec's functions and methods it calls (``ast``: ``f(...)``, ``obj.m(...)``, ``C(...)``,
directly or through a module-level helper it calls), narrowed to those its name names
(``test_get_missing`` -> ``get``) when it names any of them. A constructor counts only for
tests that call no method of its class. A test that asks for the ``program`` fixture counts
for the program (by its name). A test that calls nothing of the spec is listed
under the empty name; a suite that does not parse gives no per-method results at all.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from codegen.agents.spec.schema import Spec
from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.types import TestReport

CONSTRUCTOR = "__init__"


def module_outline(spec: Spec) -> JSONObject:
    """The spec's public parts, as report.json, the CLI and the UI show them (``program``,
    its interface, only for a spec that has one)."""
    outline: JSONObject = {
        "functions": [{"name": f.name, "signature": f.signature} for f in spec.functions],
        "classes": [
            {
                "name": c.name,
                "constructor": c.constructor,
                "attributes": [a.name for a in c.attributes],
                "methods": [{"name": m.name, "signature": m.signature} for m in c.methods],
            }
            for c in spec.classes
        ],
        "constants": [c.name for c in spec.constants],
        "dependencies": list(spec.dependencies),
    }
    program = spec.program
    if program is not None:
        outline["program"] = {
            "name": program.name,
            "usage": program.usage,
            "reads": list[JSONValue](program.reads),
            "writes": list[JSONValue](program.writes),
            "input_format": program.input_format,
            "output_format": program.output_format,
            "comparison": program.comparison,
            "examples": len(program.examples),
        }
    return outline


@dataclass(frozen=True)
class MethodResult:
    """The tests that exercise one function or method (``LRUCache.get``, ``LRUCache.__init__``,
    ``primes_up_to``; empty: tests that call nothing of the spec) and how they ended."""

    name: str
    passed: int
    total: int
    failed: tuple[str, ...] = ()  # the failing (or erroring) tests' node names

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "passed": self.passed,
            "total": self.total,
            "failed": list[JSONValue](self.failed),
        }

    @classmethod
    def from_dict(cls, data: JSONObject) -> MethodResult:
        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        name, failed = data.get("name"), data.get("failed")
        return cls(
            name=name if isinstance(name, str) else "",
            passed=count("passed"),
            total=count("total"),
            failed=tuple(f for f in failed if isinstance(f, str))
            if isinstance(failed, list)
            else (),
        )


# The fixture through which a test runs the program (``program.check``, ``program.run``).
PROGRAM_FIXTURE = "program"


def _targets(spec: Spec) -> list[str]:
    out = [spec.program.name] if spec.program is not None else []
    out += [f.name for f in spec.functions]
    for c in spec.classes:
        out += [f"{c.name}.{CONSTRUCTOR}", *(f"{c.name}.{m.name}" for m in c.methods)]
    return out


def words(name: str) -> list[str]:
    """``test_get_missing`` -> test, get, missing; ``TestLRUCacheGet`` -> test, lru, cache, get."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name))
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def has_words(text: list[str], name: str) -> bool:
    """Whether ``name``'s words stand together, in order, in ``text`` (a ``words`` list)."""
    wanted = words(name)
    n = len(wanted)
    return n > 0 and any(text[i : i + n] == wanted for i in range(len(text) - n + 1))


class _Calls(ast.NodeVisitor):
    """The spec's names a function's body calls (``aliases``: local name -> spec name)."""

    def __init__(self, spec: Spec, aliases: dict[str, str], modules: set[str]) -> None:
        self.functions = {f.name for f in spec.functions}
        self.classes = {c.name: {m.name for m in c.methods} for c in spec.classes}
        self.aliases, self.modules = aliases, modules
        self.names: set[str] = set()  # functions and classes called by name
        self.methods: set[str] = set()  # attribute calls: the method names
        self.static: set[str] = set()  # ``C.m(...)``
        self.helpers: set[str] = set()  # other module-level names called

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            name = self.aliases.get(func.id, func.id)
            if name in self.functions or name in self.classes:
                self.names.add(name)
            else:
                self.helpers.add(func.id)
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            owner = self.aliases.get(owner, owner) if owner else None
            if owner in self.modules and (func.attr in self.functions or func.attr in self.classes):
                self.names.add(func.attr)
            elif owner in self.classes and func.attr in self.classes[owner]:
                self.static.add(f"{owner}.{func.attr}")
            else:
                self.methods.add(func.attr)
        self.generic_visit(node)

    def targets(self) -> set[str]:
        constructed = {n for n in self.names if n in self.classes}
        out = {n for n in self.names if n in self.functions} | set(self.static)
        for method in self.methods:
            owners = [c for c, ms in self.classes.items() if method in ms]
            if len(owners) > 1 and constructed & set(owners):
                owners = [c for c in owners if c in constructed]
            out |= {f"{c}.{method}" for c in owners}
        return out | {f"{c}.{CONSTRUCTOR}" for c in constructed}


def _without_bare_constructors(targets: set[str]) -> set[str]:
    """A constructor counts only for a test that calls no method of its class."""
    out = set(targets)
    for target in targets:
        cls, _, name = target.rpartition(".")
        if name == CONSTRUCTOR and any(t.startswith(f"{cls}.") and t != target for t in targets):
            out.discard(target)
    return out


def _imports(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    aliases: dict[str, str] = {}
    modules = {"solution"}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "solution":
            aliases.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == "solution" and a.asname}
    return aliases, modules


def _test_calls(spec: Spec, tests: str) -> dict[str, set[str]] | None:
    """Each test's node name (without the file) -> the spec targets it calls; None: the
    suite does not parse."""
    try:
        tree = ast.parse(tests)
    except (SyntaxError, ValueError):
        return None
    aliases, modules = _imports(tree)

    def calls(node: ast.AST) -> _Calls:
        visitor = _Calls(spec, aliases, modules)
        visitor.visit(node)
        return visitor

    helpers = {
        n.name: calls(n).targets()
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("test")
    }
    found: dict[str, set[str]] = {}
    units: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            units.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            units += [
                (f"{node.name}::{m.name}", m)
                for m in node.body
                if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                and m.name.startswith("test")
            ]
    program = spec.program.name if spec.program is not None else None
    for key, node in units:
        visitor = calls(node)
        targets = visitor.targets()
        if program is not None and _takes_program(node):
            targets.add(program)
        for helper in visitor.helpers & set(helpers):
            targets |= helpers[helper]
        found[key] = _without_bare_constructors(targets)
    return found


def _takes_program(node: ast.AST) -> bool:
    """Whether a test function asks for the ``program`` fixture (it runs the program)."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return any(a.arg == PROGRAM_FIXTURE for a in [*node.args.args, *node.args.kwonlyargs])


def method_results(spec: Spec, tests: str, report: TestReport | None) -> list[MethodResult]:
    """The suite's results per function and method of ``spec``, in the spec's order, each
    with the tests that exercise it (see the module's docstring); [] without a report or
    when the suite does not parse."""
    calls = _test_calls(spec, tests) if report is not None else None
    if report is None or calls is None:
        return []
    targets = _targets(spec)
    tally: dict[str, tuple[int, int, list[str]]] = {t: (0, 0, []) for t in [*targets, ""]}
    for case in report.tests:
        node = re.sub(r"\[.*\]\Z", "", case.name.split("::", 1)[-1])
        called = calls.get(node, set())
        test_words = words(node.split("::")[-1])
        named = {t for t in targets if has_words(test_words, t.rsplit(".", 1)[-1])}
        chosen = (named & called) or called or named or {""}
        for target in chosen:
            passed, total, failed = tally[target]
            ok = case.outcome == "passed"
            if case.outcome in ("failed", "error"):
                failed = [*failed, case.name]
            tally[target] = (passed + ok, total + 1, failed)
    return [
        MethodResult(name, passed, total, tuple(failed))
        for name, (passed, total, failed) in tally.items()
        if name or total
    ]
