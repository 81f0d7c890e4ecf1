"""Reading agents' replies as real models send them (docs/architecture.md, "LLM endpoint").

Real replies are not our wire contract: reasoning in ``<think>`` blocks, fences with any
language tag or none, the definitions spread over several blocks, usage examples and their
printed output in blocks of their own, no fence at all, or only a function's body. The rules:

1. ``<think>...</think>`` is dropped first (and a leading unclosed reasoning run up to
   ``</think>``, which servers emit when they strip the opening tag).
   A reply that echoes its prompt first (the skeleton with empty bodies, then a response
   marker such as ``@@ Response:``, then the answer) is read from after its last marker
   (``RESPONSE_MARKERS``) when code is found there, else whole as below.
2. Fenced blocks (CommonMark, parsed by markdown-it-py) that parse as Python are the
   candidates, whatever their tag. The code is every block that defines something (a
   function, class or import) merged in order, so definitions spread over blocks are joined
   and a later definition of a name wins, as Python itself would have it, except that a class
   is kept whole (given in several blocks, as a skeleton and filled in, or with methods in a
   block of their own: ``agents.replies.class_merge``). Blocks that define
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
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # markdown_it loads only once a reply is parsed
    from markdown_it import MarkdownIt
from codegen.agents.replies.class_merge import first_line_outdented, merge_definitions
from codegen.agents.replies.repair import (
    _DEFS,
    _attach_body,
    _code_in_prose,
    _defined_names,
    _defines_something,
    _is_body_only,
    _missing_imports,
    _parse,
    _signature_header,
    _with_imports,
    _without_usage,
    parse_python,
)
from codegen.untrusted import loads_json


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


# What instruction-tuned models put between the prompt and their answer, as they echo it
# (Alpaca-style "### Response:", Magicoder's "@@ Response:", Llama's "[/INST]"): the ones
# ClassEval's authors cut replies at, in the order they try them
# (``evaluation.classeval.extract_code``).
RESPONSE_MARKERS = ("### Response:", "@@ Response:", "[/INST]")


def after_prompt_echo(text: str) -> str | None:
    """The answer of a reply that echoes its prompt: the text after the last response marker
    it holds, or None when it holds none or nothing follows it."""
    ends = [text.rfind(marker) + len(marker) for marker in RESPONSE_MARKERS if marker in text]
    if not ends:
        return None
    answer = re.sub(r"\A\s*\n", "", text[max(ends) :]).rstrip()
    return answer if answer.strip() else None


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


@dataclass
class _Piece:
    code: str
    tree: ast.Module


def _pieces(texts: Iterable[str]) -> list[_Piece]:
    out = []
    for text in texts:
        code = textwrap.dedent(text).strip("\n") + "\n"
        tree = _parse(code)
        if tree is None:
            code = first_line_outdented(code)
            tree = _parse(code) if code else None
        if tree is not None and tree.body:
            out.append(_Piece(code, tree))
    return out


def _merge(
    pieces: list[_Piece], notes: list[str], methods: Mapping[str, Sequence[str]] | None = None
) -> str:
    kept: list[str] = []
    dropped = 0
    for piece in pieces:
        code, n = _without_usage(piece.code, piece.tree)
        dropped += n
        if code.strip():
            kept.append(code.strip("\n") + "\n")
    if dropped:
        notes.append(f"dropped {dropped} top-level usage statement(s)")
    code, merged = merge_definitions(kept, methods)
    notes.extend(merged)
    return code


def _finish(code: str, how: str, notes: list[str]) -> ParsedCode:
    tree = _parse(code)
    if tree is not None:
        imports = _missing_imports(tree)
        if imports:
            code = _with_imports(code, imports)
            notes.append("added missing " + "; ".join(imports))
    return ParsedCode(code.rstrip() + "\n", how, tuple(notes))


def extract_module(
    text: str,
    functions: list[tuple[str, str]],
    classes: Mapping[str, Sequence[str]] | None = None,
) -> ParsedCode:
    """The programmer's ``solution.py`` from a reply; ``functions`` are the spec's free
    functions' ``(name, signature)`` pairs, ``classes`` its classes' names with their methods'
    (a class spread over blocks is kept whole: ``agents.replies.class_merge``). Raises
    AgentOutputError saying what was wrong."""
    return _answer_first(_prepared(text), lambda reply: _module_of(reply, functions, classes or {}))


def _answer_first(reply: str, read: Callable[[str], ParsedCode]) -> ParsedCode:
    """``read`` of the answer after an echoed prompt when it finds code there (the echo's
    empty methods are not the answer), else of the whole reply."""
    answer = after_prompt_echo(reply)
    if answer is not None:
        try:
            found = read(answer)
        except AgentOutputError:
            pass
        else:
            note = "read after the echoed prompt's response marker"
            return replace(found, notes=(note, *found.notes))
    return read(reply)


def _module_of(
    reply: str, functions: list[tuple[str, str]], classes: Mapping[str, Sequence[str]]
) -> ParsedCode:
    names = {name for name, _ in functions} | set(classes)
    if not reply.strip():
        raise AgentOutputError("the reply is empty (no code)")
    notes: list[str] = []
    blocks = fenced_blocks(reply)
    sources = [b.body for b in blocks] if blocks else []
    # A block of test_ functions is the model's own tests, unless it defines one of the
    # spec's functions (MBPP's test_duplicate, test_three_equal are entry points).
    pieces = [
        p for p in _pieces(sources) if not _is_test_module(p.tree) or _defined_names(p.tree) & names
    ]
    defining = [p for p in pieces if _defines_something(p.tree)]
    if len(blocks) > len(defining):
        notes.append(f"ignored {len(blocks) - len(defining)} block(s) that define nothing")
    if defining:
        code = _merge(defining, notes, classes)
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
            code = _merge([_Piece(reply + "\n", tree)], notes, classes)
            if _defined_names(_parse(code) or tree) & names or not names:
                return _finish(code, "bare code", notes)
        found_code = _code_in_prose(reply)
        if found_code is not None:
            tree = _parse(found_code)
            if tree is not None and (_defined_names(tree) & names or not names):
                return _finish(
                    _merge([_Piece(found_code + "\n", tree)], notes, classes),
                    "code in prose",
                    notes,
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
            return f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg
    return "unknown"


def extract_tests(text: str) -> ParsedCode:
    """The test designer's ``test_solution.py``: the block(s) holding ``test_`` functions,
    merged with the blocks that hold their imports and helpers."""
    return _answer_first(_prepared(text), _tests_of)


def _tests_of(reply: str) -> ParsedCode:
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
            if isinstance(loads_json(candidate), dict):  # too deep: a ValueError too
                return candidate
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", reply):
        try:
            value, end = decoder.raw_decode(reply, match.start())
        except (ValueError, RecursionError, MemoryError):
            continue
        if isinstance(value, dict):
            return reply[match.start() : end]
    raise AgentOutputError("the reply is not valid JSON (no JSON object found in it)")
