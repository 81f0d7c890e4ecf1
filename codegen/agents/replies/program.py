"""Reading a program from a programmer's reply, for a spec with a program (``spec.program``).

A program is run, not imported, so its top-level statements are the program: they are kept
(``extract_module`` drops them as usage). Real replies to stdin/stdout tasks are mostly a bare
script (statements, no ``def``), fenced or not, often between prose, sometimes after worked
examples of other problems in blocks of their own, or followed by blocks of sample input and
output. The rules, after ``<think>`` reasoning and an echoed prompt go as for any reply:

1. Of the fenced blocks that parse as Python, those that do something (a call, a
   definition or an import: not a data block such as ``[3, 88, 85]``) are candidates. The
   program is the last one that reads input (``input()``, ``sys.stdin``, ``sys.argv``,
   ``open``, ``fileinput``), else the last one with a statement that runs at top level, else
   the last candidate. Earlier blocks that define names the program uses but does not define
   (or the spec's functions it lacks) are put before it, their usage statements dropped.
2. With no usable fence, the whole reply when it parses, else the longest run of lines that
   parses, starting at a line that reads as code (a definition, an import, an assignment, a
   loop, a call).
3. A program that only defines ``main()`` and never calls it gets the call under
   ``if __name__ == "__main__":``; one that runs nothing at all is refused (it would print
   nothing). Missing imports are added as for any module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from codegen.agents.replies.extract import (
    AgentOutputError,
    ParsedCode,
    _answer_first,
    _finish,
    _is_test_module,
    _Piece,
    _pieces,
    _prepared,
    fenced_blocks,
)
from codegen.agents.replies.repair import (
    _DEFS,
    MAX_PROSE_LINES,
    MAX_PROSE_STARTS,
    _defined_names,
    _parse,
    _without_usage,
)

_READERS = {"input", "open"}
_READER_MODULES = {"sys": {"stdin", "argv"}, "fileinput": None, "argparse": None}
_CODE_LINE = re.compile(
    r"^(?:async\s+def|def|class|import|from|if|for|while|with|try|print\(|"
    r"[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_]\w*)*\s*(?:=|\+=|\())"
)
_MAIN = "main"


def extract_program(
    text: str,
    functions: list[tuple[str, str]],
    classes: Mapping[str, Sequence[str]] | None = None,
) -> ParsedCode:
    """``solution.py`` as a program from a reply (see the module's docstring); ``functions``
    and ``classes`` are the spec's besides the program, which the code must then define.
    Raises AgentOutputError saying what was wrong."""
    names = {name for name, _ in functions} | set(classes or {})
    return _answer_first(_prepared(text), lambda reply: _program_of(reply, names))


def _does_something(tree: ast.Module) -> bool:
    return any(
        isinstance(n, (*_DEFS, ast.Import, ast.ImportFrom, ast.Call)) for n in ast.walk(tree)
    )


def _reads_input(tree: ast.AST) -> bool:
    """Whether the code reads stdin, its arguments or a file (``input()``, ``sys.stdin``...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _READERS:
                return True
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            wanted = _READER_MODULES.get(node.value.id, set())
            if node.value.id in _READER_MODULES and (wanted is None or node.attr in wanted):
                return True
    return False


def _runs_at_top(tree: ast.Module) -> bool:
    """A statement at top level beyond definitions, imports and a docstring."""
    quiet = (*_DEFS, ast.Import, ast.ImportFrom)
    for index, node in enumerate(tree.body):
        docstring = (
            index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        )
        if not isinstance(node, quiet) and not docstring:
            return True
    return False


def _free_names(tree: ast.Module) -> set[str]:
    """The names the code reads and binds nowhere (not assigned, imported, defined or a
    parameter at any depth): what it expects another block to define."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, _DEFS):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return loaded - bound


def _definitions(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, _DEFS)}


def _the_program(candidates: list[_Piece]) -> _Piece:
    for wanted in (lambda p: _reads_input(p.tree), lambda p: _runs_at_top(p.tree)):
        chosen = [p for p in candidates if wanted(p)]
        if chosen:
            return chosen[-1]
    return candidates[-1]


def _with_definitions(program: _Piece, others: list[_Piece], names: set[str]) -> tuple[str, int]:
    """The program after the earlier blocks' definitions it uses and lacks (usage dropped)."""
    lacking = _free_names(program.tree) | (names - _defined_names(program.tree))
    parts: list[str] = []
    for piece in others:
        if _definitions(piece.tree) & lacking:
            code, _ = _without_usage(piece.code, piece.tree)
            parts.append(code.strip("\n") + "\n")
            lacking -= _definitions(piece.tree)
    return "\n\n".join([*parts, program.code]), len(parts)


def _code_lines(reply: str) -> str | None:
    """The longest run of lines that parses and does something, from a line that reads as
    code to the last line that keeps it parsing (code between prose)."""
    lines = reply.splitlines()[:MAX_PROSE_LINES]
    starts = [i for i, line in enumerate(lines) if _CODE_LINE.match(line)][:MAX_PROSE_STARTS]
    best: str | None = None
    covered = -1
    for start in starts:
        if start <= covered:
            continue
        for end in range(len(lines), start, -1):
            chunk = "\n".join(lines[start:end]).strip("\n")
            tree = _parse(chunk)
            if tree is None:
                continue
            if _does_something(tree) and (best is None or len(chunk) > len(best)):
                best, covered = chunk, end - 1
            break
    return best


def _runnable(code: str, notes: list[str]) -> str:
    """``code`` that runs when started: a never-called ``main()`` gets its call; code that
    runs nothing is refused."""
    tree = _parse(code)
    assert tree is not None  # every caller parsed it
    if _runs_at_top(tree):
        return code
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == _MAIN]
    if mains and not (mains[-1].args.args or mains[-1].args.posonlyargs):
        notes.append("added the call of main() under __main__")
        return code.rstrip("\n") + '\n\n\nif __name__ == "__main__":\n    main()\n'
    defined = ", ".join(sorted(_defined_names(tree))) or "nothing"
    raise AgentOutputError(
        f"the code never runs as a program: it only defines {defined}, with no top-level "
        'statement and no `if __name__ == "__main__":` section'
    )


def _program_of(reply: str, names: set[str]) -> ParsedCode:
    if not reply.strip():
        raise AgentOutputError("the reply is empty (no code)")
    notes: list[str] = []
    blocks = fenced_blocks(reply)
    if blocks:
        pieces = _pieces(b.body for b in blocks)
        candidates = [
            p
            for p in pieces
            if _does_something(p.tree)
            and (not _is_test_module(p.tree) or _defined_names(p.tree) & names)
        ]
        if not candidates:
            raise AgentOutputError(
                f"none of the {len(blocks)} fenced block(s) is a Python program "
                f"({len(pieces)} parse as Python, none of them calls or defines anything)"
            )
        program = _the_program(candidates)
        others = [p for p in candidates if p is not program]
        code, joined = _with_definitions(program, others, names)
        how = "fenced block" if not joined else f"fenced block with {joined} block(s) it uses"
        if len(blocks) > 1 + joined:
            notes.append(f"ignored {len(blocks) - 1 - joined} other block(s)")
    else:
        tree = _parse(reply)
        found = reply if tree is not None and _does_something(tree) else _code_lines(reply)
        if found is None:
            raise AgentOutputError(
                "no Python program found: the reply has no fenced block and no run of lines "
                "that parses as Python"
            )
        code, how = found.strip("\n") + "\n", "bare code" if found is reply else "code in prose"
    code = _runnable(code, notes)
    missing = names - _defined_names(_parse(code) or ast.Module(body=[], type_ignores=[]))
    if names and missing == names:
        wanted = ", ".join(sorted(names))
        raise AgentOutputError(f"the program does not define {wanted} (the spec's functions)")
    return _finish(code, how, notes)
