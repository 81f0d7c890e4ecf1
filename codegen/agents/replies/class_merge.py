"""Whole classes out of replies that spread them: the pieces of a reply's code (fenced blocks,
usage already dropped) merged so that a class keeps every method it was given.

Real replies split a class in ways plain concatenation loses ("a later definition wins", as
Python has it, would keep only the last ``class`` statement's methods):

* the class repeated in several blocks, each with some methods: one class, every method, a
  method given twice taking its later body;
* a class given as a skeleton (methods whose bodies are only a docstring, ``pass``, ``...``
  or ``raise NotImplementedError``) and again with the bodies filled in, in either order: a
  stub never replaces a body;
* methods continued in a block of their own, indented or not (``def deposit(self, ...)``,
  ``@staticmethod def helper(x)``): they go into the class that has them, or that the spec
  says has them, or the one class defined before them; methods of a spec's class that the
  reply never wraps in a ``class`` statement (the header was in the question) get the
  spec's class around them.

The merged class stands where its last ``class`` statement stood (its bases and decorators
are that one's). Source text is kept as written: members move between classes by whole
lines, re-indented outside string literals only. When no class needs merging the pieces are
joined as before, byte for byte.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from codegen.agents.replies.repair import _parse

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_METHOD_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})


@dataclass
class _Member:
    key: str | None  # a method's or class attribute's name; "__doc__"; None: anything else
    text: str  # its lines, at the class body's indentation of four spaces
    stub: bool = False


@dataclass
class _Class:
    name: str
    header: str  # decorators and the ``class`` line(s)
    members: list[_Member] = field(default_factory=list)

    def render(self) -> str:
        body = "".join(m.text for m in self.members) or "    pass\n"
        return self.header + body

    def find(self, key: str) -> _Member | None:
        return next((m for m in self.members if m.key == key), None)

    def add(self, member: _Member) -> None:
        """A new member, or a later body of one it has (a stub never replaces a body)."""
        old = self.find(member.key) if member.key is not None else None
        if old is None:
            self.members.append(member)
        elif not (member.stub and not old.stub):
            self.members[self.members.index(old)] = member


# -- source text ----------------------------------------------------------------------------
def _string_lines(text: str) -> set[int]:
    """0-based lines that begin inside a string literal (left as they are when re-indenting)."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0], tok.end[0]))  # rows after the first, 0-based
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return inside


def _reindent(text: str, old: int, new: int) -> str:
    """``text`` moved from ``old`` to ``new`` spaces of indentation, string contents kept."""
    if old == new:
        return text
    keep = _string_lines(text)
    out = []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if i in keep or not line.strip():
            out.append(line)
            continue
        stripped = line[old:] if line[:old].strip() == "" else line.lstrip(" ")
        out.append(" " * new + stripped)
    return "".join(out)


def first_line_outdented(code: str) -> str:
    """Methods continued from a class the question showed, whose first line lost its
    indentation (``def create_table(self):`` at column 0, the next ``def`` at four spaces):
    the first line put back at the others' indentation and the whole moved to column 0, or ""
    when the code is not in that shape."""
    lines = code.splitlines(keepends=True)
    if not lines or lines[0][:1].isspace() or not lines[0].startswith(("def ", "async def ")):
        return ""
    indents = [
        len(line) - len(line.lstrip(" "))
        for line in lines[1:]
        if line.lstrip().startswith(("def ", "async def ", "@"))
    ]
    if not indents or min(indents) == 0:
        return ""
    return _reindent(" " * min(indents) + code, min(indents), 0)


def _start(node: ast.stmt) -> int:
    """The 1-based first line of ``node``, its decorators included."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _is_stub(node: ast.stmt) -> bool:
    """A method whose body is only a docstring, ``pass``, ``...`` or ``raise
    NotImplementedError``: the skeleton's, not an implementation."""
    if not isinstance(node, _FUNCS):
        return False
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Raise) and "NotImplementedError" in ast.unparse(stmt):
            continue
        return False
    return True


def _member_key(node: ast.stmt, index: int) -> str | None:
    if isinstance(node, (*_FUNCS, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if (
        index == 0
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ):
        return "__doc__"
    return None


def _decorator_names(node: ast.stmt) -> set[str]:
    names: set[str] = set()
    for d in getattr(node, "decorator_list", []):
        if isinstance(d, ast.Name):
            names.add(d.id)
        elif isinstance(d, ast.Attribute):
            names.add(d.attr)  # x.setter
    return names


def _method_like(node: ast.stmt) -> bool:
    """A top-level function that only makes sense inside a class."""
    if not isinstance(node, _FUNCS):
        return False
    args = [*node.args.posonlyargs, *node.args.args]
    if args and args[0].arg in ("self", "cls"):
        return True
    return bool(_decorator_names(node) & (_METHOD_DECORATORS | {"setter", "getter", "deleter"}))


def _class_of(node: ast.ClassDef, lines: list[str]) -> _Class | None:
    """The class as a header and members, from ``lines`` (its piece's source), or None when
    its body shares the ``class`` line (then the caller re-renders it first)."""
    first = node.body[0]
    body_start = _start(first)
    if body_start <= node.lineno:
        return None
    # The header may run over several lines (bases split): the shortest run that parses as a
    # class statement; comments and blank lines after it belong to the first member.
    parts = [*node.bases, *node.keywords]
    last = max([node.lineno, *((b.end_lineno or b.lineno) for b in parts)])
    header_end = next(
        (
            k
            for k in range(last, body_start)
            if _parse("".join(lines[_start(node) - 1 : k]) + "    pass\n") is not None
        ),
        body_start - 1,
    )
    header = "".join(lines[_start(node) - 1 : header_end])
    indent = first.col_offset
    out = _Class(node.name, header if header.endswith("\n") else header + "\n")
    prev_end = header_end
    for index, stmt in enumerate(node.body):
        end = stmt.end_lineno or stmt.lineno
        text = "".join(lines[prev_end:end])
        prev_end = end
        out.members.append(
            _Member(_member_key(stmt, index), _reindent(text, indent, 4), _is_stub(stmt))
        )
    return out


# -- merging ----------------------------------------------------------------------------------
@dataclass
class _Merge:
    methods: Mapping[str, Sequence[str]]  # the spec's classes: name -> method names
    items: list[str | _Class] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    changed: bool = False

    def classes(self) -> list[_Class]:
        return [i for i in self.items if isinstance(i, _Class)]

    def named(self, name: str) -> _Class | None:
        return next((c for c in self.classes() if c.name == name), None)

    def text(self, text: str) -> None:
        if text.strip():
            self.items.append(text)

    def add_class(self, found: _Class) -> None:
        old = self.named(found.name)
        if old is None:
            self.items.append(found)
            return
        self.changed = True
        self.notes.append(f"class {found.name} given more than once: merged")
        self.items.remove(old)
        for member in found.members:
            old.add(member)
        old.header = found.header
        self.items.append(old)

    def owner(self, name: str, node: ast.stmt) -> tuple[str, bool] | None:
        """The class a top-level method belongs to, and whether the reply defines it."""
        defined = self.classes()
        having = [c for c in defined if c.find(name) is not None]
        if having:
            return having[-1].name, True
        for cls, methods in self.methods.items():
            if name in methods:
                return cls, self.named(cls) is not None
        if len(defined) == 1 and _method_like(node):
            return defined[0].name, True
        return None

    def graft(self, node: ast.stmt, text: str) -> bool:
        if not _method_like(node) or not isinstance(node, _FUNCS):
            return False
        found = self.owner(node.name, node)
        if found is None:
            return False
        name, defined = found
        member = _Member(node.name, _reindent(text, node.col_offset, 4), _is_stub(node))
        if defined:
            target = self.named(name)
            assert target is not None  # owner() said it is defined
            target.add(member)
            self.notes.append(f"method {node.name} given outside class {name}: put in it")
        else:
            self.items.append(_Class(name, f"class {name}:\n", [member]))
            self.notes.append(f"method {node.name} given without its class: put in class {name}")
        self.changed = True
        return True

    def piece(self, code: str, tree: ast.Module) -> None:
        lines = code.splitlines(keepends=True)
        pending: list[str] = []
        prev_end = 0
        for node in tree.body:
            end = node.end_lineno or node.lineno
            text = "".join(lines[prev_end:end])
            prev_end = end
            if isinstance(node, ast.ClassDef):
                found = _class_of(node, lines)
                if found is None:  # a one-line class: re-rendered on lines of its own
                    rendered = ast.unparse(node) + "\n"
                    again = _parse(rendered)
                    assert again is not None and isinstance(again.body[0], ast.ClassDef)
                    found = _class_of(again.body[0], rendered.splitlines(keepends=True))
                if found is not None:
                    self.text("".join(pending))
                    pending = []
                    self.add_class(found)
                    continue
            elif self.graft(node, text):
                continue
            pending.append(text)
        self.text("".join(pending) + "".join(lines[prev_end:]))

    def render(self) -> str:
        parts = [
            (i.render() if isinstance(i, _Class) else i).strip("\n") + "\n" for i in self.items
        ]
        return "\n\n".join(parts)


def merge_definitions(
    codes: Sequence[str], methods: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, list[str]]:
    """The pieces of one reply's code as one module, classes whole (see the module's doc), and
    what was merged; ``methods``: the spec's classes, each with its method names. Pieces that
    need no merging come back joined as before ("\\n\\n" between them)."""
    merge = _Merge(methods or {})
    try:
        for code in codes:
            tree = _parse(code)
            if tree is None:
                merge.text(code)
                continue
            merge.piece(code, tree)
    except RecursionError:  # nested past ast.unparse's depth: joined as they are
        return "\n\n".join(codes), []
    if not merge.changed:
        return "\n\n".join(codes), []
    return merge.render(), merge.notes
