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
formula. Prompts also give a call as parameter values: one line ``For N = 150, the
output should be "110".`` (or ``the result should be``), or an ``Input: arr = [1, 2], k =
1`` block (one parameter: ``Input: [4, 2, 3]``) followed by ``Output: [2]``; these count
when every parameter of the signature gets a literal value (``agents.pick.inputs.assigned_values``
reads them, as it does for the shared inputs) and the expected value is a literal. The
importer derives the analyzer's examples and the test designer's assertions
from these when the docstring has no ``>>>`` ones.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from itertools import pairwise

from codegen.agents.pick.inputs import assigned_values, bracket_end

_LEAD = re.compile(r"^(?:>>>|\*|-|for\b|e\.g\.|examples?\s*:)\s*", re.IGNORECASE)
_SEPARATOR = re.compile(
    r"^#?\s*(?P<sep>==>|==|➞|=>|->|→|=|should\s+return|returns?)\s*(?P<want>.+)$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^(?:for\s+)?(?:examples?\b|e\.g\.)", re.IGNORECASE)
_SHOULD_BE = re.compile(r"\b(?:output|result)\s+should\s+be\s+(?P<want>.+)$", re.IGNORECASE)
_INPUT = re.compile(r"\bInput\s*:")
_OUTPUT = re.compile(r"\bOutput\s*:[ \t]*(?P<want>[^\n]*)")


def _literal(text: str) -> str | None:
    """``text`` as a Python literal's source (normalised), trying it without a trailing full
    stop, whole, and without a trailing comment or parenthesised remark."""
    text = text.strip()
    # A sentence's full stop first: ``should be 1.`` means 1, not 1.0.
    tries = [text.rstrip(". "), text, text.split(" #")[0], text.split(" (")[0].rstrip(". ")]
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


def _assigned_examples(text: str, entry_point: str, params: Sequence[str]) -> list[tuple[str, str]]:
    """``For x = 1, ... the output should be y`` lines and ``Input: x = 1`` / ``Output: y``
    blocks: (call, expected)."""
    pairs: list[tuple[str, str]] = []  # (the values' text, the expected value's text)
    for raw in text.splitlines():
        line = raw.strip()
        match = _SHOULD_BE.search(line)
        if match and line.lower().startswith("for "):
            pairs.append((line[: match.start()], match.group("want")))
    starts = [m.start() for m in _INPUT.finditer(text)]
    for start, end in pairwise([*starts, len(text)]):
        output = _OUTPUT.search(text, start, end)
        if output is not None:
            pairs.append((text[start : output.start()], output.group("want")))
    found: list[tuple[str, str]] = []
    for values, want_text in pairs:
        args = assigned_values(values, params)
        want = _literal(want_text)
        if args is None or want is None:
            continue
        call = f"{entry_point}({', '.join(repr(a) for a in args)})"
        found.append((ast.unparse(ast.parse(call, mode="eval")), want))
    return found


def written_examples(
    text: str, entry_point: str, params: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """The worked examples ``text`` writes in prose styles: (call, expected). Those given as
    parameter values need the signature's ``params``."""
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
    for pair in _assigned_examples(text, entry_point, params):
        if pair not in found:
            found.append(pair)
    return found
