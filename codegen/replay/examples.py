"""Worked examples written in a prompt's prose, as (call, expected) pairs.

HumanEval writes about half its worked examples outside doctest: ``f(x) ➞ y``,
``f(x) == y``, ``f(x) => y``, ``f(x) ==> y``, ``f(x) -> y``, ``f(x) = y``, ``f(x) returns
y``, ``f(x) should return y.``, ``f(x) # => y``, with a leading ``>>>``, ``*``, ``-`` or
``for``. A line counts when the call is the entry point on literal arguments and the
expected value is a Python literal (a trailing full stop, comment or parenthesised remark
is dropped); anything else (``== 1 + 9 = 10``, a call on a variable) is left out, so an
example is either read exactly or not at all. A prompt that defines the name as a formula
with ``=`` (``f(n) = f(n - 1) + 2``, a sequence's recurrence) writes values of that formula
with ``=`` too (``f(4) = 3``), not of the function asked for, which may return a list of
them: there a bare ``=`` line counts only under the last "Example(s)" heading after the
formula. The importer derives the analyzer's examples and the test designer's assertions
from these when the docstring has no ``>>>`` ones.
"""

from __future__ import annotations

import ast
import re

from codegen.agents.seeds import bracket_end

_LEAD = re.compile(r"^(?:>>>|\*|-|for\b|e\.g\.|examples?\s*:)\s*", re.IGNORECASE)
_SEPARATOR = re.compile(
    r"^#?\s*(?P<sep>==>|==|➞|=>|->|→|=|should\s+return|returns?)\s*(?P<want>.+)$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^(?:for\s+)?(?:examples?\b|e\.g\.)", re.IGNORECASE)


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


def _is_call(text: str) -> bool:
    try:
        return isinstance(ast.parse(text, mode="eval").body, ast.Call)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False


def written_examples(text: str, entry_point: str) -> list[tuple[str, str]]:
    """The worked examples ``text`` writes one per line in prose styles: (call, expected)."""
    written: list[tuple[str, re.Match[str]]] = []  # (call, separator and expected value)
    formula_at = heading_at = -1  # the last formula's and the last heading's place in written
    for raw in text.splitlines():
        line = raw.strip()
        if _HEADING.match(line):
            heading_at = len(written)
        for _ in range(3):
            line = _LEAD.sub("", line, count=1)
        if not line.startswith(entry_point + "("):
            continue
        end = bracket_end(line, len(entry_point))
        match = _SEPARATOR.match(line[end:].strip()) if end >= 0 else None
        if match is None:
            continue
        call = line[:end]
        if match.group("sep") == "=" and _is_call(call) and not _literal_call(call, entry_point):
            formula_at = len(written)
        written.append((call, match))
    found: list[tuple[str, str]] = []
    for at, (call, match) in enumerate(written):
        if not _literal_call(call, entry_point):
            continue
        values_of_formula = formula_at >= 0 and not (formula_at < heading_at <= at)
        if match.group("sep") == "=" and values_of_formula:
            continue
        want = _literal(match.group("want"))
        if want is None:
            continue
        pair = (ast.unparse(ast.parse(call, mode="eval")), want)
        if pair not in found:
            found.append(pair)
    return found
