"""Worked examples written in a prompt's prose, as (call, expected) pairs.

HumanEval writes about half its worked examples outside doctest: ``f(x) ➞ y``,
``f(x) == y``, ``f(x) => y``, ``f(x) ==> y``, ``f(x) -> y``, ``f(x) = y``, ``f(x) returns
y``, ``f(x) should return y.``, ``f(x) # => y``, with a leading ``>>>``, ``*``, ``-`` or
``for``. A line counts when the call is the entry point on literal arguments and the
expected value is a Python literal (a trailing full stop, comment or parenthesised remark
is dropped); anything else (``== 1 + 9 = 10``, a call on a variable) is left out, so an
example is either read exactly or not at all. The importer derives the analyzer's examples
and the test designer's assertions from these when the docstring has no ``>>>`` ones.
"""

from __future__ import annotations

import ast
import re

from codegen.agents.seeds import bracket_end

_LEAD = re.compile(r"^(?:>>>|\*|-|for\b|e\.g\.|examples?\s*:)\s*", re.IGNORECASE)
_SEPARATOR = re.compile(
    r"^#?\s*(?:==>|==|➞|=>|->|→|=|should\s+return|returns?)\s*(?P<want>.+)$", re.IGNORECASE
)


def _literal(text: str) -> str | None:
    """``text`` as a Python literal's source (normalised), trying it whole, without a
    trailing full stop, and without a trailing comment or parenthesised remark."""
    text = text.strip()
    tries = [text, text.rstrip(". "), text.split(" #")[0], text.split(" (")[0].rstrip(". ")]
    for attempt in dict.fromkeys(t.strip() for t in tries if t.strip()):
        try:
            ast.literal_eval(attempt)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return ast.unparse(ast.parse(attempt, mode="eval"))
    return None


def _literal_call(call: str, entry_point: str) -> bool:
    try:
        node = ast.parse(call, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id != entry_point or node.keywords:
        return False
    try:
        for arg in node.args:
            ast.literal_eval(arg)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def written_examples(text: str, entry_point: str) -> list[tuple[str, str]]:
    """The worked examples ``text`` writes one per line in prose styles: (call, expected)."""
    found: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        for _ in range(3):
            line = _LEAD.sub("", line, count=1)
        if not line.startswith(entry_point + "("):
            continue
        end = bracket_end(line, len(entry_point))
        if end < 0:
            continue
        call, rest = line[:end], line[end:].strip()
        match = _SEPARATOR.match(rest)
        if not match or not _literal_call(call, entry_point):
            continue
        want = _literal(match.group("want"))
        if want is None:
            continue
        pair = (ast.unparse(ast.parse(call, mode="eval")), want)
        if pair not in found:
            found.append(pair)
    return found
