"""Repairs that make a model's code reply runnable: usage lines dropped, missing imports
added, a bare body put under its signature, code found inside prose; and the one lock-held
Python parser they and the reply readers share."""

from __future__ import annotations

import ast
import re
import sys
import textwrap
import threading
import typing
from collections.abc import Callable

# -- reading Python ---------------------------------------------------------------------------
# CPython 3.11/3.12 keep the AST converter's recursion depth in per-interpreter state, so
# parsing in several threads at once (parallel drafts) can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905). Parsing is serialized.
_AST_LOCK = threading.Lock()


def parse_python(code: str, mode: str = "exec") -> ast.AST:
    """``ast.parse``, safe to call from several threads and on hostile text: every way the
    text can fail to parse is a SyntaxError. Nesting deep enough to overflow the parser or the
    AST builder (``-`` * 100_000, ``a.b.b...``) raises MemoryError or RecursionError in
    CPython, which the callers' ``except SyntaxError`` would let through to end the request
    (or an inbox scan, or an evaluation); NUL bytes raise ValueError on 3.11."""
    with _AST_LOCK:
        try:
            return ast.parse(code, mode=mode)
        except (RecursionError, MemoryError):
            raise SyntaxError("nested too deeply or too large to parse") from None
        except ValueError as exc:
            raise SyntaxError(str(exc)) from None


def _parse(code: str) -> ast.Module | None:
    try:
        tree = parse_python(code)
    except SyntaxError:
        return None
    return tree if isinstance(tree, ast.Module) else None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, _DEFS):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _defines_something(tree: ast.Module) -> bool:
    return any(isinstance(n, (*_DEFS, ast.Import, ast.ImportFrom)) for n in tree.body)


def _is_usage(node: ast.stmt, index: int) -> bool:
    """A top-level statement that only exercises the code: a bare call, an assert, a main."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr):
        value = node.value
        docstring = index == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str)
        return not docstring and isinstance(value, ast.Call | ast.Await)
    if isinstance(node, ast.If):
        test = node.test
        return (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
        )
    return False


def _without_usage(code: str, tree: ast.Module) -> tuple[str, int]:
    """The code minus its top-level usage statements, and how many were dropped."""
    lines = code.splitlines(keepends=True)
    drop: set[int] = set()
    for index, node in enumerate(tree.body):
        if _is_usage(node, index) and node.end_lineno is not None:
            drop.update(range(node.lineno - 1, node.end_lineno))
    if not drop:
        return code, 0
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    dropped = sum(1 for i, n in enumerate(tree.body) if _is_usage(n, i))
    return kept, dropped


_TYPING_NAMES = frozenset(n for n in dir(typing) if not n.startswith("_") and n[0].isupper())


_STDLIB = frozenset(sys.stdlib_module_names)


def _missing_imports(tree: ast.Module) -> list[str]:
    """Import lines for typing names in annotations and stdlib modules used but never bound."""
    bound: set[str] = set(dir(__builtins__) if isinstance(__builtins__, dict) else [])
    bound |= set(dir(__import__("builtins")))
    annotations: set[str] = set()
    attr_bases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, _DEFS):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                args = node.args
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                every += [a for a in (args.vararg, args.kwarg) if a is not None]
                bound.update(a.arg for a in every)
                for a in every:
                    if a.annotation is not None:
                        annotations |= _names_in(a.annotation)
                if node.returns is not None:
                    annotations |= _names_in(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations |= _names_in(node.annotation)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attr_bases.add(node.value.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    typing_names = sorted((annotations & _TYPING_NAMES) - bound)
    modules = sorted(m for m in attr_bases - bound if m in _STDLIB and not m.startswith("_"))
    lines = [f"import {m}" for m in modules]
    if typing_names:
        lines.append(f"from typing import {', '.join(typing_names)}")
    return lines


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _with_imports(code: str, imports: list[str]) -> str:
    """``imports`` inserted after the module docstring and any ``__future__`` imports."""
    tree = _parse(code)
    at = 0
    if tree is not None:
        for index, node in enumerate(tree.body):
            is_doc = (
                index == 0
                and isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            )
            is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
            if not (is_doc or is_future):
                break
            at = node.end_lineno or at
    lines = code.splitlines(keepends=True)
    return "".join([*lines[:at], *(line + "\n" for line in imports), *lines[at:]])


# -- finding the code -------------------------------------------------------------------------
def _signature_header(signature: str) -> str | None:
    """``def name(args) -> ret:`` from a spec signature in any of the usual spellings."""
    header = signature.strip().splitlines()[0].strip() if signature.strip() else ""
    header = header.removesuffix(":").strip()
    if not header:
        return None
    if not header.startswith(("def ", "async def ")):
        header = "def " + header
    return header + ":" if _parse(header + ":\n    pass\n") is not None else None


def _attach_body(text: str, header: str) -> str | None:
    """A function body (indented or not) placed under ``header``, when that parses."""
    body = textwrap.dedent(text).strip("\n")
    if not body.strip():
        return None
    code = header + "\n" + textwrap.indent(body, "    ") + "\n"
    return code if _parse(code) is not None else None


def _is_body_only(text: str) -> bool:
    """A function's body: its top level returns (``ast.parse`` accepts a bare ``return``; only
    the compiler refuses it), or it only parses once dedented and placed inside a function."""
    body = textwrap.dedent(text).strip("\n")
    if not body.strip():
        return False
    tree = _parse(body)
    if tree is not None:
        return any(isinstance(n, ast.Return) for n in tree.body) and not any(
            isinstance(n, _DEFS) for n in tree.body
        )
    return _attach_body(body, "def _f():") is not None


_CODE_START = re.compile(r"^(?:async\s+def|def|class|import|from)\s", re.M)


# Searching prose for code parses many spans; these bound the work a hostile reply can cause.
MAX_PROSE_LINES = 400


MAX_PROSE_STARTS = 12


def _code_in_prose(
    text: str,
    start: re.Pattern[str] = _CODE_START,
    keep: Callable[[ast.Module], bool] = _defines_something,
) -> str | None:
    """The longest run of lines, from a line ``start`` matches (a definition or import) to the
    last that keeps it parsing, whose tree ``keep`` accepts (it defines something)."""
    lines = text.splitlines()[:MAX_PROSE_LINES]
    starts = [i for i, line in enumerate(lines) if start.match(line)][:MAX_PROSE_STARTS]
    best: str | None = None
    covered = -1  # a start inside the best run so far cannot give a longer one
    for start in starts:
        if start <= covered:
            continue
        for end in range(len(lines), start, -1):
            chunk = "\n".join(lines[start:end]).strip("\n")
            tree = _parse(chunk)
            if tree is None:
                continue
            if keep(tree) and (best is None or len(chunk) > len(best)):
                best, covered = chunk, end - 1
            break
    return best
