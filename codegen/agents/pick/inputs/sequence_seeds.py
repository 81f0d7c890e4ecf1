"""Where a class's shared inputs start: call sequences on one fresh instance, read from the
spec's worked examples (``setup`` statements, then ``call``) and from the generated tests.

A sequence is a constructor call, then method calls and attribute reads on that instance, in
the order the source makes them (``c = LRUCache(2)``, ``c.put(1, 1)``, ``c.get(1)``). In a
test, every variable (or ``self.x``) bound to a spec class's constructor starts one; a
unittest ``setUp`` and a pytest fixture that returns a constructor call start the ones of
the tests that use them. Arguments are literals only (``ast.literal_eval``) and JSON-shaped,
as for function inputs; a plain name bound to such a literal earlier in the same source
(``cart = [{'price': 2.5}]``, then ``Order(cart)``) stands for that literal. The first step
with any other argument (another name, another instance) ends its sequence there, and so
does any other use of the instance (passed to a call, an attribute assigned), since the
replay could no longer follow what the source does. Nothing here executes model-written code.
"""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from codegen.agents.pick.inputs.seeds import _literal_args
from codegen.agents.replies import parse_python
from codegen.json_types import JSONValue

StepKind = Literal["new", "call", "attr"]
SequenceOrigin = Literal["example", "docstring", "test", "signature", "mutation"]


@dataclass(frozen=True)
class Step:
    """``new``: the class's constructor; ``call``: a method (a module function when the
    sequence has no instance); ``attr``: an attribute read."""

    kind: StepKind
    name: str
    args: tuple[JSONValue, ...] = ()

    def wire(self) -> list[JSONValue]:
        return [self.kind, self.name, list(self.args)]

    def source(self, var: str = "obj") -> str:
        args = ", ".join(repr(a) for a in self.args)
        if self.kind == "new":
            return f"{var} = {self.name}({args})"
        if self.kind == "attr":
            return f"{var}.{self.name}"
        return f"{var}.{self.name}({args})" if var else f"{self.name}({args})"


@dataclass(frozen=True)
class CallSequence:
    steps: tuple[Step, ...]
    origin: SequenceOrigin

    def key(self) -> str:
        return json.dumps([s.wire() for s in self.steps], sort_keys=True)

    @property
    def has_instance(self) -> bool:
        return bool(self.steps) and self.steps[0].kind == "new"

    def source(self, upto: int | None = None) -> str:
        """The sequence as Python (``obj = C(1); obj.put(1, 2); obj.get(1)``) up to step
        ``upto`` (default: all)."""
        var = "obj" if self.has_instance else ""
        steps = self.steps if upto is None else self.steps[: upto + 1]
        return "; ".join(s.source(var) for s in steps)


# -- reading sources --------------------------------------------------------------------------
@dataclass
class _Tracker:
    """Sequences being read: per variable (``c``, ``self.acct``), its steps so far."""

    classes: frozenset[str]
    open: dict[str, list[Step]] = field(default_factory=dict)
    done: list[list[Step]] = field(default_factory=list)
    literals: dict[str, ast.expr] = field(default_factory=dict)  # names bound to literals

    def close(self, key: str) -> None:
        steps = self.open.pop(key, None)
        if steps:
            self.done.append(steps)

    def close_all(self) -> list[list[Step]]:
        for key in list(self.open):
            self.close(key)
        return self.done

    def copy(self) -> _Tracker:
        opened = {k: list(v) for k, v in self.open.items()}
        return _Tracker(self.classes, opened, literals=dict(self.literals))


class _Substitute(ast.NodeTransformer):
    def __init__(self, literals: dict[str, ast.expr]) -> None:
        self.literals = literals

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.literals.get(node.id, node))


def _args(call: ast.Call, literals: dict[str, ast.expr]) -> tuple[JSONValue, ...] | None:
    """The call's arguments as literals, the names bound to literals replaced by them."""
    if literals and any(isinstance(n, ast.Name) for a in call.args for n in ast.walk(a)):
        call = _Substitute(literals).visit(copy.deepcopy(call))
    return _literal_args(call)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _constructed(
    node: ast.expr, classes: frozenset[str], literals: dict[str, ast.expr] | None = None
) -> Step | Literal[False] | None:
    """``C(literals)`` for a spec class ``C``: its step; None when its arguments are not
    literals; False when ``node`` is no constructor call."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id not in classes:
        return False
    args = _args(node, literals or {})
    return Step("new", node.func.id, args) if args is not None else None


def _key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return "self." + node.attr
    return None


def _visit(node: ast.AST, t: _Tracker) -> None:
    """Post-order (arguments before the call that takes them: evaluation order)."""
    if isinstance(node, ast.Assign | ast.AnnAssign):
        value = node.value
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if value is not None:
            made = _constructed(value, t.classes, t.literals)
            if made is not False and len(targets) == 1 and (key := _key(targets[0])):
                if isinstance(value, ast.Call):
                    for arg in value.args:
                        _visit(arg, t)
                t.close(key)
                if made is not None:
                    t.open[key] = [made]
                return
            _visit(value, t)
        literal = value is not None and len(targets) == 1 and _is_literal(value)
        for target in targets:
            key = _key(target)
            if key is not None:
                t.close(key)  # rebound to something else
                t.literals.pop(key, None)
                if literal and isinstance(target, ast.Name) and value is not None:
                    t.literals[key] = value
            else:
                _visit(target, t)
        return
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            key = _key(func.value)
            chained = _constructed(func.value, t.classes, t.literals)
            for child in [*node.args, *(k.value for k in node.keywords)]:
                _visit(child, t)
            if key is not None and key in t.open:
                args = _args(node, t.literals)
                if args is None:
                    t.close(key)
                else:
                    t.open[key].append(Step("call", func.attr, args))
                return
            if chained:  # C(1).m(2): a sequence of its own
                args = _args(node, t.literals)
                if args is not None:
                    t.done.append([chained, Step("call", func.attr, args)])
                return
            _visit(func.value, t)
            return
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        key = _key(node.value)
        if key is not None and key in t.open:
            t.open[key].append(Step("attr", node.attr))
            return
        made = _constructed(node.value, t.classes, t.literals)
        if made is not False:  # C(1).size: a sequence of its own
            if made is not None:
                t.done.append([made, Step("attr", node.attr)])
            return
    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
        key = _key(node.value)
        if key is not None:
            t.close(key)  # an attribute assigned from outside
            return
    if isinstance(node, ast.Name) and node.id in t.open:
        t.close(node.id)  # the instance used some other way (passed to a call, compared)
        return
    if isinstance(node, ast.Call) and _constructed(node, t.classes, t.literals):
        made = _constructed(node, t.classes, t.literals)
        if isinstance(made, Step):
            t.done.append([made])
    for child in ast.iter_child_nodes(node):
        _visit(child, t)


def _fixtures(tree: ast.Module, classes: frozenset[str]) -> dict[str, Step]:
    """pytest fixtures (any top-level function named as a parameter of a test) that return
    a constructor call with literal arguments."""
    out: dict[str, Step] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.body:
            last = node.body[-1]
            if isinstance(last, ast.Return) and last.value is not None:
                made = _constructed(last.value, classes)
                if isinstance(made, Step):
                    out[node.name] = made
    return out


def _test_functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, ast.FunctionDef | None]]:
    """Every test function, with its unittest class's ``setUp`` (or None)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node, None
        elif isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            setup = next((m for m in methods if m.name in ("setUp", "setup_method")), None)
            for method in methods:
                if method.name.startswith("test"):
                    yield method, setup


def suite_sequences(source: str, classes: Sequence[str]) -> list[list[Step]]:
    """The sequences the test module ``source`` drives, in order, without repeats."""
    try:
        tree = parse_python(source)
    except SyntaxError:
        return []
    assert isinstance(tree, ast.Module)
    names = frozenset(classes)
    fixtures = _fixtures(tree, names)
    found: list[list[Step]] = []
    for function, setup in _test_functions(tree):
        t = _Tracker(names)
        for arg in function.args.args:
            if arg.arg in fixtures:
                t.open[arg.arg] = [fixtures[arg.arg]]
        try:
            for stmt in [*(setup.body if setup else []), *function.body]:
                _visit(stmt, t)
        except RecursionError:  # nested past the visitor's depth: a hostile suite
            continue
        found += t.close_all()
    return _unique(found)


def _implied_instances(
    trees: Sequence[ast.AST], implied: tuple[str, frozenset[str]], t: _Tracker
) -> None:
    """Open a fresh ``C()`` for each name the example uses as an instance of ``C`` without
    making it (``proc.read('a.json')`` in a docstring that never shows ``proc = C()``), and
    for ``C`` itself (``C.to_binary(5)``, a static method): only names never assigned whose
    every attribute used is one of ``C``'s methods or attributes."""
    name, members = implied
    assigned = {
        n.id
        for tree in trees
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    used: dict[str, set[str]] = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                used.setdefault(n.value.id, set()).add(n.attr)
    for root, attrs in used.items():
        if root in assigned or not attrs <= members:
            continue
        if root == name or root not in t.classes:
            t.open[root] = [Step("new", name, ())]


def example_sequences(
    setup: Sequence[str],
    call: str,
    classes: Sequence[str],
    implied: tuple[str, frozenset[str]] | None = None,
) -> list[list[Step]]:
    """The sequence a worked example drives (``setup`` statements, then ``call``): the one
    its ``call`` ends, or [] when that cannot be followed with literals. ``implied``: the
    spec's one class made without arguments and its members' names, for the instance an
    example uses without making it (``_implied_instances``)."""
    try:
        statements = [parse_python(s) for s in setup]
        expression = parse_python(call, mode="eval")
    except SyntaxError:
        return []
    t = _Tracker(frozenset(classes))
    assert isinstance(expression, ast.Expression)
    if implied is not None:
        _implied_instances([*statements, expression], implied, t)
    body = expression.body
    target = None
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute):
        target = _key(body.func.value)
    elif isinstance(body, ast.Attribute):
        target = _key(body.value)
    try:
        for tree in statements:
            assert isinstance(tree, ast.Module)
            for stmt in tree.body:
                _visit(stmt, t)
        before = len(t.done)
        _visit(body, t)
    except RecursionError:  # nested past the visitor's depth
        return []
    if target is not None and target in t.open:
        return [t.open[target]]
    return [s for s in t.done[before:] if len(s) > 1]


def _unique(sequences: list[list[Step]]) -> list[list[Step]]:
    seen: set[str] = set()
    out = []
    for steps in sequences:
        key = json.dumps([s.wire() for s in steps], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(steps)
    return out
