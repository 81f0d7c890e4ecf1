"""Replies derived from a ClassEval task's skeleton, for the roles a ClassEval run never had
(``codegen replay import --format classeval``): the analyzer's spec with the class as the
skeleton writes it (name, docstring, constructor, the attributes ``__init__`` sets, every
method's signature and docstring, the third-party distributions its imports name, and the
docstrings' ``>>>`` examples as sequences: the statements before a call, then the call and
its expected value), a pytest module asserting those examples on a fresh instance each and
running each docstring's statements past its last literal example (a doctest reads a
statement that shows no value as not raising; the value is not claimed), a reviewer
``APPROVED`` and a README from the class docstring. Built from the skeleton alone
(``classeval.ClassEvalTask`` holds no test and no solution); marked ``source: derived``.

A docstring's example may use an instance made in an earlier method's docstring (ClassEval
writes ``>>> calc.area(2, 3)`` after ``>>> calc = AreaCalculator(2)`` in another method): the
statement that made it is put in front. An example whose expected output is not a Python
literal, or that uses a name nothing defines, becomes a setup statement of the later ones
or is left out, never a guessed assertion.

Two slips ClassEval's docstrings make are read as meant, on the skeleton's class. When the
skeleton defines exactly one class, a name written as a class's (CapWords, not a constant's
all-capitals) that nothing defines is that class (``>>> NLPDataProcessor.process(...)`` in a
skeleton of ``NLPDataProcessor2``). A method that takes ``self`` called on the class itself
(``>>> Processor.process(['a'])``: the arguments fit the method after ``self``, and do not
fit it with the first one as ``self``) means an instance: it runs on a fresh one, made with no
arguments when the constructor takes none (or has a default for each); otherwise the example
is left out, never a guessed argument. A fresh instance keeps no state for the later
examples, so a docstring's examples after such a call that returns nothing are left out.
"""

from __future__ import annotations

import ast
import builtins
import json
import sys
from dataclasses import dataclass, field

from codegen.replay.classeval import ClassEvalTask
from codegen.replay.derived import DERIVED_REVIEW, docstring_as_written, entries_of
from codegen.replay.recording import Entry

# Import names whose distribution is named otherwise (the rest: the same name).
_DISTRIBUTIONS = {
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "docx": "python-docx",
    "sklearn": "scikit-learn",
    "yaml": "PyYAML",
    "cv2": "opencv-python",
}
_MAX_VALUE = 200  # characters of an attribute's initial value shown in its description


@dataclass
class ClassExample:
    """``setup`` statements, then ``call`` must equal ``expected`` (a literal's source)."""

    method: str
    setup: list[str]
    call: str
    expected: str


@dataclass
class _Skeleton:
    node: ast.ClassDef | None
    source: str
    methods: list[ast.FunctionDef] = field(default_factory=list)
    class_count: int = 0  # classes the skeleton defines

    @property
    def init(self) -> ast.FunctionDef | None:
        return next((m for m in self.methods if m.name == "__init__"), None)


def _closed_docstrings(source: str) -> str:
    """``source`` with a closing ``\"\"\"`` put before each ``def`` line (and at the end) that
    follows a method whose docstring was left open (an odd count of them since its ``def``)."""
    out: list[str] = []
    opened = 0
    for line in source.splitlines():
        if line.lstrip().startswith("def ") and opened % 2:
            out.append('        """')
            opened = 0
        elif line.lstrip().startswith("def "):
            opened = 0
        opened += line.count('"""')
        out.append(line)
    if opened % 2:
        out.append('        """')
    return "\n".join(out) + "\n"


def _parsed(source: str) -> tuple[ast.Module, str] | None:
    """The skeleton parsed, or repaired the least it takes to parse (a few of ClassEval's leave
    a docstring open, write its quotes as typographic ones, or sit inside one string literal
    themselves): (tree, the source read); else its longest prefix that parses, cut before a
    ``def`` line."""
    stripped = source.strip()
    if stripped[:3] in ("'''", '"""') and stripped[-3:] == stripped[:3] and len(stripped) > 6:
        source = stripped[3:-3]
    lines = source.splitlines()
    defs = [i for i, line in enumerate(lines) if line.lstrip().startswith("def ")]
    tries = [
        source,
        _closed_docstrings(source),
        source.replace("\u201c", '"').replace("\u201d", '"'),
        *("\n".join(lines[:i]) for i in reversed(defs)),
    ]
    for attempt in tries:
        try:
            return ast.parse(attempt), attempt
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
    return None


def _skeleton(task: ClassEvalTask) -> _Skeleton:
    parsed = _parsed(task.skeleton)
    if parsed is None:
        return _Skeleton(None, task.skeleton)
    tree, source = parsed
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for node in classes:
        if node.name == task.class_name:
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
            return _Skeleton(node, source, methods, len(classes))
    return _Skeleton(None, source, class_count=len(classes))


def _signature(node: ast.FunctionDef) -> str:
    decorators = "".join(f"@{ast.unparse(d)} " for d in node.decorator_list)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{decorators}def {node.name}({ast.unparse(node.args)}){returns}"


def _docstring(skeleton: _Skeleton, node: ast.FunctionDef | ast.ClassDef) -> str:
    return docstring_as_written(skeleton.source, node) or ""


def distributions(import_lines: tuple[str, ...]) -> list[str]:
    """The third-party distributions the import lines name, each once, in their order."""
    found: list[str] = []
    for line in import_lines:
        try:
            nodes = ast.parse(line.strip()).body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for node in nodes:
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                name = _DISTRIBUTIONS.get(top, top)
                if top not in sys.stdlib_module_names and name not in found:
                    found.append(name)
    return found


def _attributes(skeleton: _Skeleton) -> list[dict[str, str]]:
    """The public attributes ``__init__`` sets (``self.x = ...``), in order, each once."""
    init = skeleton.init
    found: dict[str, dict[str, str]] = {}
    for node in ast.walk(init) if init else ():
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        kind = ""
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value, kind = [node.target], node.value, ast.unparse(node.annotation)
        for target in targets:
            if not (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and not target.attr.startswith("_")
            ):
                continue
            shown = ast.unparse(value) if value is not None else ""
            if len(shown) > _MAX_VALUE:
                shown = shown[:_MAX_VALUE] + "..."
            found.setdefault(
                target.attr,
                {"name": target.attr, "type": kind, "description": f"set by __init__: {shown}"},
            )
    return list(found.values())


def _parses(source: str, mode: str) -> bool:
    try:
        ast.parse(source, mode=mode)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _literal(want: str) -> str | None:
    try:
        ast.literal_eval(want)
        return ast.unparse(ast.parse(want, mode="eval"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _assigned(statement: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(statement)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _loaded(source: str) -> set[str]:
    return {
        n.id
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }


def _defined(statements: list[str]) -> set[str]:
    return {n for s in statements for n in _assigned(s)}


def _borrowed(source: str, known: set[str], made: dict[str, str]) -> list[str] | None:
    """The earlier docstrings' statements that define the names ``source`` uses and ``known``
    lacks (in their order, each once); None when a name (or one such a statement uses) has
    no definition."""
    borrowed: list[str] = []
    missing = sorted(_loaded(source) - known)
    while missing:
        name = missing.pop()
        statement = made.get(name)
        if statement is None:
            return None
        if statement not in borrowed:
            borrowed.insert(0, statement)
            known = known | _assigned(statement)
            missing = sorted(set(missing) | (_loaded(statement) - known))
    return borrowed


def _binds(args: ast.arguments, positional: int, keywords: list[str], skip: int) -> bool:
    """Whether a call with ``positional`` arguments and ``keywords`` fits ``args`` with its
    first ``skip`` positional parameters already bound."""
    params = [a.arg for a in [*args.posonlyargs, *args.args]]
    required = params[: len(params) - len(args.defaults)]
    params, required = params[skip:], required[skip:]
    if positional > len(params) and args.vararg is None:
        return False
    filled = set(params[:positional])
    named = {a.arg for a in [*args.args, *args.kwonlyargs]} - {a.arg for a in args.posonlyargs}
    for keyword in keywords:
        if keyword in filled or (keyword not in named and args.kwarg is None):
            return False
        filled.add(keyword)
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return set(required) <= filled


def _takes_no_argument(init: ast.FunctionDef | None) -> bool:
    return init is None or _binds(init.args, 0, [], skip=1)


def _instance_methods(skeleton: _Skeleton) -> dict[str, ast.arguments]:
    """The skeleton's methods that take ``self`` (neither static nor class methods)."""
    bound = {"staticmethod", "classmethod"}
    return {
        m.name: m.args
        for m in skeleton.methods
        if [*m.args.posonlyargs, *m.args.args]
        and not any(isinstance(d, ast.Name) and d.id in bound for d in m.decorator_list)
    }


def _meant_for_an_instance(call: ast.Call, args: ast.arguments) -> bool:
    """A call on the class whose arguments fit the method after ``self`` and not with the
    first one as ``self`` (``Counter.increment(c, 2)`` is a call on the instance ``c``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    keywords = [k.arg for k in call.keywords if k.arg is not None]
    return _binds(args, len(call.args), keywords, skip=1) and not _binds(
        args, len(call.args), keywords, skip=0
    )


@dataclass
class _OnTheClass:
    """Reads an example's source as meant on the skeleton's class (see the module docstring)."""

    name: str
    strangers: set[str]  # class-style names nothing defines, read as the class
    methods: dict[str, ast.arguments]
    bare_instance: bool  # the constructor takes no argument

    def read(self, source: str) -> tuple[str | None, bool]:
        """(the source as meant, or None when it cannot run as meant; whether it calls a
        method on a fresh instance); the source as written when nothing is read otherwise."""
        if not _parses(source, "exec"):
            return source, False
        tree = ast.parse(source)
        changed = on_fresh = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in self.strangers:
                node.id, changed = self.name, True
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == self.name
                and node.func.attr in self.methods
                and _meant_for_an_instance(node, self.methods[node.func.attr])
            ):
                continue
            if not self.bare_instance:
                return None, False
            node.func.value = ast.Call(ast.Name(self.name, ast.Load()), [], [])
            changed = on_fresh = True
        return (ast.unparse(tree) if changed else source), on_fresh


def _on_the_class(task: ClassEvalTask, skeleton: _Skeleton, known: set[str]) -> _OnTheClass:
    """``known``: the names defined before any example (builtins, imports, the class, and
    every name a docstring's statement makes)."""
    strangers: set[str] = set()
    if skeleton.class_count == 1:
        for method in skeleton.methods:
            for source, _ in doc_examples(_docstring(skeleton, method)):
                if _parses(source, "exec"):
                    strangers |= _loaded(source) - known
    strangers = {n for n in strangers if n[:1].isupper() and not n.isupper()}
    methods = _instance_methods(skeleton)
    return _OnTheClass(task.class_name, strangers, methods, _takes_no_argument(skeleton.init))


def doc_examples(docstring: str) -> list[tuple[str, str]]:
    """A docstring's ``>>>`` examples as (source, output), read as ClassEval writes them: the
    prompt's blank may be missing (``>>>x = 1``), and a statement may go on over lines without
    ``...`` until it parses; the output is the lines up to a blank one or the next ``>>>``."""
    lines = docstring.splitlines()
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        i += 1
        if not text.startswith(">>>"):
            continue
        source = [text[3:].strip()]
        while i < len(lines):
            text = lines[i].strip()
            if text.startswith("..."):
                source.append(lines[i].lstrip()[4:] if text.startswith("... ") else text[3:])
            elif text and not text.startswith(">>>") and not _parses("\n".join(source), "exec"):
                source.append(text)
            else:
                break
            i += 1
        output = []
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(">>>"):
            output.append(lines[i].strip())
            i += 1
        found.append(("\n".join(source).strip(), "\n".join(output)))
    return found


@dataclass
class ClassRun:
    """A docstring's statements in order (``statements``, with any borrowed in front) that
    no example of it runs to the end: as a doctest reads them, none of them raises."""

    method: str
    statements: list[str]


def _walk(task: ClassEvalTask) -> tuple[list[ClassExample], list[ClassRun]]:
    """Every method docstring's examples whose expected output is a literal, and each
    docstring's statements as a run (see ``class_examples`` and ``class_runs``)."""
    skeleton = _skeleton(task)
    known = set(dir(builtins)) | {task.class_name}
    for line in task.import_statement:
        if _parses(line.strip(), "exec"):
            known |= _assigned(line.strip())
    as_written = [(m.name, doc_examples(_docstring(skeleton, m))) for m in skeleton.methods]
    everywhere = {
        n for _, ex in as_written for s, _ in ex if _parses(s, "exec") for n in _assigned(s)
    }
    meant = _on_the_class(task, skeleton, known | everywhere)
    written = [(method, [(*meant.read(s), w) for s, w in ex]) for method, ex in as_written]
    made: dict[str, str] = {}  # name -> the statement (in any docstring) that made it
    for _, examples in reversed(written):
        for source, _, _ in reversed(examples):
            if source is not None and _parses(source, "exec"):
                made.update(dict.fromkeys(_assigned(source), source))
    found: list[ClassExample] = []
    runs: list[ClassRun] = []
    for method, examples in written:
        setup: list[str] = []
        asserted = False  # the last statement is an example's call
        for source, on_fresh, want in examples:
            if source is None or want.startswith("Traceback") or not _parses(source, "exec"):
                continue  # an example that raises is no statement for the later ones
            if on_fresh and not want and not _assigned(source):
                break  # what it changed is gone with its instance: the later ones are unsure
            borrowed = _borrowed(source, known | _defined(setup), made)
            if borrowed is None:
                break  # a name nothing defines: this docstring's later examples are unsure
            setup = [*borrowed, *setup]
            expected = _literal(want) if want else None
            asserted = expected is not None and _parses(source, "eval")
            if asserted:
                found.append(ClassExample(method, list(setup), source, expected))
            setup.append(source)
            made.update(dict.fromkeys(_assigned(source), source))
        if setup and not asserted and all(run.statements != setup for run in runs):
            runs.append(ClassRun(method, setup))
    return found, runs


def class_examples(task: ClassEvalTask) -> list[ClassExample]:
    """Every method docstring's ``>>>`` examples whose expected output is a literal, read on
    the skeleton's class (see the module docstring), each with the statements before it in
    that docstring (another docstring's statement in front for a name only it defines: the
    last one before, else the first one after)."""
    return _walk(task)[0]


def class_runs(task: ClassEvalTask) -> list[ClassRun]:
    """Each docstring's statements (read as ``class_examples`` reads them, up to where its
    examples become unsure) when they go on past its last literal example: a doctest reads a
    statement that shows no value as one that does not raise. The value is not claimed
    (ClassEval's docstrings leave out values their methods return); statements that end in a
    literal example are already run by it."""
    return _walk(task)[1]


def classeval_spec(task: ClassEvalTask) -> dict[str, object]:
    """The analyzer's spec (``agents.spec.Spec`` as JSON) with the skeleton's class."""
    skeleton = _skeleton(task)
    described = _docstring(skeleton, skeleton.node) if skeleton.node else ""
    summary = " ".join(described.split("\n\n")[0].split())
    init = skeleton.init
    methods = [
        {"name": m.name, "signature": _signature(m), "description": _docstring(skeleton, m)}
        for m in skeleton.methods
        if m is not init
    ]
    cls = {
        "name": task.class_name,
        "description": described,
        "constructor": _signature(init) if init else "def __init__(self)",
        "attributes": _attributes(skeleton),
        "methods": methods,
    }
    return {
        "purpose": f"Complete the class {task.class_name}" + (f": {summary}" if summary else "."),
        "functions": [],
        "classes": [cls],
        "constants": [],
        "dependencies": distributions(task.import_statement),
        "behaviours": [],
        "edge_cases": [],
        "examples": [
            {"setup": e.setup, "call": e.call, "expected": e.expected} for e in class_examples(task)
        ],
        "constraints": [
            "keep the class name, the constructor and every method signature exactly as the "
            "skeleton writes them",
            *(f"the module starts with `{line.strip()}`" for line in task.import_statement),
        ],
    }


def _indented(statement: str) -> str:
    return "\n".join("    " + line for line in statement.splitlines())


def _float_literal(expected: str) -> bool:
    node = ast.parse(expected, mode="eval").body
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, float)


def _attribute_name(class_name: str, name: str) -> str:
    """The name a method is found under on its class (``__x`` is stored as ``_Class__x``)."""
    if name.startswith("__") and not name.endswith("__"):
        return f"_{class_name.lstrip('_')}{name}"
    return name


def classeval_tests(task: ClassEvalTask) -> str:
    """A pytest module: the class defines every method of the skeleton, each docstring
    example holds on a fresh instance (a float compared with ``pytest.approx``), and each
    docstring's statements past its last literal example run without raising
    (``class_runs``)."""
    skeleton = _skeleton(task)
    name = task.class_name
    methods = [_attribute_name(name, m.name) for m in skeleton.methods if m.name != "__init__"]
    lines = [
        "import pytest",
        *(line.strip() for line in task.import_statement),
        f"from solution import {name}",
        "",
        "",
        f"def test_{name}_defines_the_skeletons_methods():",
        f"    assert isinstance({name}, type)",
        f"    for method in {methods!r}:",
        f"        assert callable(getattr({name}, method, None)), method",
        "",
        "",
    ]
    counts: dict[str, int] = {}
    for example in class_examples(task):
        number = counts.get(example.method, 0)
        counts[example.method] = number + 1
        want = f"pytest.approx({example.expected})" if _float_literal(example.expected) else None
        lines += [
            f"def test_{example.method}_example_{number}():",
            *(_indented(s) for s in example.setup),
            _indented(f"assert {example.call} == {want or example.expected}"),
            "",
            "",
        ]
    for run in class_runs(task):
        lines += [
            f"def test_{run.method}_runs_as_documented():",
            *(_indented(s) for s in run.statements),
            "",
            "",
        ]
    return "```python\n" + "\n".join(lines).rstrip() + "\n```"


def classeval_derived_entries(task: ClassEvalTask, skip_roles: set[str]) -> list[Entry]:
    spec = classeval_spec(task)
    classes = spec["classes"]
    assert isinstance(classes, list) and isinstance(classes[0], dict)  # built just above
    methods = classes[0]["methods"]
    assert isinstance(methods, list)
    listed = "\n".join(f"- `{m['signature']}`" for m in methods if isinstance(m, dict))
    replies = {
        "analyzer": json.dumps(spec),
        "test_designer": classeval_tests(task),
        "reviewer": DERIVED_REVIEW,
        "documenter": f"# {task.class_name}\n\n{classes[0]['description']}\n\n{listed}\n",
    }
    return entries_of(task.task_id, replies, skip_roles)
