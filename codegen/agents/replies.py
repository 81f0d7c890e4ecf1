"""Reading agents' replies as real models send them (docs/architecture.md, "LLM endpoint").

Real replies are not our wire contract: reasoning in ``<think>`` blocks, fences with any
language tag or none, the definitions spread over several blocks, usage examples and their
printed output in blocks of their own, no fence at all, or only a function's body. The rules:

1. ``<think>...</think>`` is dropped first (and a leading unclosed reasoning run up to
   ``</think>``, which servers emit when they strip the opening tag).
2. Fenced blocks (CommonMark, parsed by markdown-it-py) that parse as Python are the
   candidates, whatever their tag. The code is every block that defines something (a
   function, class or import) merged in order, so definitions spread over blocks are joined
   and a later definition of a name wins, as Python itself would have it. Blocks that define
   nothing (usage calls, printed output) are ignored, and so are top-level usage statements
   inside a kept block (bare calls such as ``print(f(3))``, ``assert`` lines and
   ``if __name__ == "__main__":`` sections): ``solution.py`` is imported by the tests, so it
   must have no side effects.
3. With no usable fence, the whole reply is the code when it parses; else the longest run of
   lines from a ``def``/``class``/``import`` line onwards that parses (code in prose).
4. A reply that is only a function's body is attached to the spec's signature.
5. Repairs a reader would make without asking: ``typing`` names used in annotations and
   standard-library modules used as ``module.attr`` but never imported get their import
   (models drop them because the prompt they saw had them).

What counts as usable is role-specific: the programmer's code must define at least one of
the spec's functions, the test designer's module at least one ``test_`` function. Anything
else raises ``AgentOutputError`` naming what was wrong, which the crew feeds back.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
import threading
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # markdown_it loads only once a reply is parsed
    from markdown_it import MarkdownIt


class AgentOutputError(Exception):
    """An agent's reply broke the wire contract (no usable code, invalid spec, ...)."""


@dataclass(frozen=True)
class Block:
    lang: str
    body: str


@dataclass(frozen=True)
class ParsedCode:
    """The code read from a reply, how it was found, and what was repaired or ignored."""

    code: str
    how: str
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        return "; ".join((self.how, *self.notes))


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_THINK_CLOSE = re.compile(r"^.*?</think>", re.S | re.I)
_THINK_OPEN = re.compile(r"<think>.*\Z", re.S | re.I)


# No real module is this long (replies are capped by max_tokens); a longer one is refused
# before any parsing, so a hostile endpoint cannot make the parser do unbounded work.
MAX_REPLY_CHARS = 200_000


def _prepared(text: str) -> str:
    if len(text) > MAX_REPLY_CHARS:
        raise AgentOutputError(
            f"the reply is {len(text)} characters long; the limit is {MAX_REPLY_CHARS}"
        )
    return strip_reasoning(text)


def strip_reasoning(text: str) -> str:
    """The reply without ``<think>`` reasoning (closed, unopened or never closed)."""
    text = _THINK.sub("", text)
    if re.search(r"</think>", text, re.I):
        text = _THINK_CLOSE.sub("", text, count=1)
    text = _THINK_OPEN.sub("", text)
    # Leading blank lines go, the first line's indentation stays (a body-only reply has it).
    return re.sub(r"\A\s*\n", "", text).rstrip()


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt  # deferred: only replies need it

    return MarkdownIt("commonmark")


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown reply, in order (an unclosed fence runs to the end)."""
    tokens = _markdown().parse(text)
    return [
        Block(t.info.strip().split()[0].lower() if t.info.strip() else "", t.content)
        for t in tokens
        if t.type == "fence"
    ]


# -- reading Python ---------------------------------------------------------------------------
# CPython 3.11/3.12 keep the AST converter's recursion depth in per-interpreter state, so
# parsing in several threads at once (parallel drafts) can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905). Parsing is serialized.
_AST_LOCK = threading.Lock()


def parse_python(code: str, mode: str = "exec") -> ast.AST:
    """``ast.parse``, safe to call from several threads."""
    with _AST_LOCK:
        return ast.parse(code, mode=mode)


def _parse(code: str) -> ast.Module | None:
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError):  # ValueError: NUL bytes
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


def _code_in_prose(text: str) -> str | None:
    """The longest run of lines, starting at a definition or import, that parses as Python."""
    lines = text.splitlines()[:MAX_PROSE_LINES]
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:MAX_PROSE_STARTS]
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
            if _defines_something(tree) and (best is None or len(chunk) > len(best)):
                best, covered = chunk, end - 1
            break
    return best


@dataclass
class _Piece:
    code: str
    tree: ast.Module


def _pieces(texts: Iterable[str]) -> list[_Piece]:
    out = []
    for text in texts:
        code = textwrap.dedent(text).strip("\n") + "\n"
        tree = _parse(code)
        if tree is not None and tree.body:
            out.append(_Piece(code, tree))
    return out


def _merge(pieces: list[_Piece], notes: list[str]) -> str:
    kept: list[str] = []
    dropped = 0
    for piece in pieces:
        code, n = _without_usage(piece.code, piece.tree)
        dropped += n
        if code.strip():
            kept.append(code.strip("\n") + "\n")
    if dropped:
        notes.append(f"dropped {dropped} top-level usage statement(s)")
    return "\n\n".join(kept)


def _finish(code: str, how: str, notes: list[str]) -> ParsedCode:
    tree = _parse(code)
    if tree is not None:
        imports = _missing_imports(tree)
        if imports:
            code = _with_imports(code, imports)
            notes.append("added missing " + "; ".join(imports))
    return ParsedCode(code.rstrip() + "\n", how, tuple(notes))


def extract_module(text: str, functions: list[tuple[str, str]]) -> ParsedCode:
    """The programmer's ``solution.py`` from a reply; ``functions`` are the spec's
    ``(name, signature)`` pairs. Raises AgentOutputError saying what was wrong."""
    names = {name for name, _ in functions}
    reply = _prepared(text)
    if not reply.strip():
        raise AgentOutputError("the reply is empty (no code)")
    notes: list[str] = []
    blocks = fenced_blocks(reply)
    sources = [b.body for b in blocks] if blocks else []
    pieces = [p for p in _pieces(sources) if not _is_test_module(p.tree)]
    defining = [p for p in pieces if _defines_something(p.tree)]
    if len(blocks) > len(defining):
        notes.append(f"ignored {len(blocks) - len(defining)} block(s) that define nothing")
    if defining:
        code = _merge(defining, notes)
        found = _defined_names(_parse(code) or ast.Module(body=[], type_ignores=[]))
        if found & names or not names:
            how = "fenced block" if len(defining) == 1 else f"{len(defining)} fenced blocks merged"
            return _finish(code, how, notes)
    # Body-only replies, fenced or bare, go under the spec's first signature.
    header = _signature_header(functions[0][1]) if functions else None
    body_sources = [b.body for b in blocks] or [reply]
    for source in body_sources:
        if header is not None and _is_body_only(source):
            attached = _attach_body(source, header)
            if attached is not None:
                return _finish(attached, "body attached to the spec's signature", notes)
    if not blocks:
        tree = _parse(reply)
        if tree is not None and _defines_something(tree):
            code = _merge([_Piece(reply + "\n", tree)], notes)
            if _defined_names(_parse(code) or tree) & names or not names:
                return _finish(code, "bare code", notes)
        found_code = _code_in_prose(reply)
        if found_code is not None:
            tree = _parse(found_code)
            if tree is not None and (_defined_names(tree) & names or not names):
                return _finish(
                    _merge([_Piece(found_code + "\n", tree)], notes), "code in prose", notes
                )
    wanted = ", ".join(sorted(names)) or "the module"
    if not blocks:
        raise AgentOutputError(
            f"no Python code found: the reply has no fenced block and is not Python "
            f"defining {wanted}"
        )
    if not pieces:
        raise AgentOutputError(
            f"none of the {len(blocks)} fenced block(s) parses as Python: "
            f"{_first_syntax_error([b.body for b in blocks])}"
        )
    raise AgentOutputError(
        f"no fenced block defines {wanted} (the spec's functions); "
        f"the blocks define {', '.join(sorted(_all_names(pieces))) or 'nothing'}"
    )


def _is_test_module(tree: ast.Module) -> bool:
    return any(isinstance(n, _DEFS) and n.name.startswith("test_") for n in tree.body)


def _all_names(pieces: list[_Piece]) -> set[str]:
    out: set[str] = set()
    for p in pieces:
        out |= _defined_names(p.tree)
    return out


def _first_syntax_error(sources: list[str]) -> str:
    for source in sources:
        try:
            parse_python(textwrap.dedent(source))
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
    return "unknown"


def extract_tests(text: str) -> ParsedCode:
    """The test designer's ``test_solution.py``: the block(s) holding ``test_`` functions,
    merged with the blocks that hold their imports and helpers."""
    reply = _prepared(text)
    if not reply.strip():
        raise AgentOutputError("the reply is empty (no test module)")
    notes: list[str] = []
    blocks = fenced_blocks(reply)
    pieces = _pieces(b.body for b in blocks)
    if any(_is_test_module(p.tree) for p in pieces):
        kept = [p for p in pieces if _defines_something(p.tree)]
        if len(blocks) > len(kept):
            notes.append(f"ignored {len(blocks) - len(kept)} block(s) that define nothing")
        how = "fenced block" if len(kept) == 1 else f"{len(kept)} fenced blocks merged"
        return _finish(_merge(kept, notes), how, notes)
    if not blocks:
        tree = _parse(reply)
        if tree is not None and _is_test_module(tree):
            return _finish(_merge([_Piece(reply + "\n", tree)], notes), "bare code", notes)
        found = _code_in_prose(reply)
        tree = _parse(found) if found else None
        if found and tree is not None and _is_test_module(tree):
            return _finish(_merge([_Piece(found + "\n", tree)], notes), "code in prose", notes)
        raise AgentOutputError(
            "no test module found: the reply has no fenced block and no test_ functions"
        )
    if not pieces:
        raise AgentOutputError(
            f"none of the {len(blocks)} fenced block(s) parses as Python: "
            f"{_first_syntax_error([b.body for b in blocks])}"
        )
    raise AgentOutputError(
        f"none of the {len(blocks)} fenced block(s) defines a test_ function (pytest style)"
    )


# -- JSON ---------------------------------------------------------------------------------
def extract_json(text: str) -> str:
    """The JSON object of a reply: the whole reply, a fenced block, or the first object
    found in prose. Returns the JSON text (validation is the caller's); raises
    AgentOutputError when there is no JSON object at all."""
    reply = _prepared(text)
    candidates = [reply, *(b.body for b in fenced_blocks(reply))]
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            if isinstance(json.loads(candidate), dict):
                return candidate
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", reply):
        try:
            value, end = decoder.raw_decode(reply, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return reply[match.start() : end]
    raise AgentOutputError("the reply is not valid JSON (no JSON object found in it)")
