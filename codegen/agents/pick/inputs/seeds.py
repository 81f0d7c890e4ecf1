"""Where the seeds of the shared inputs come from (``inputs.functions`` mutates them): literal
calls of the entry point in test modules, assertions and prose, the values prose gives its
parameters, and argument lists built from its signature's types. Nothing here executes
model-written code: arguments are literals only (``ast.literal_eval``) and JSON-shaped (the
sandbox runner's wire format)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from codegen.json_types import JSONValue


def bracket_end(text: str, start: int, stop: int | None = None) -> int:
    """The index just after the bracket or quoted string opened at ``text[start]`` closes
    (brackets of all three kinds count together, as in ``f([1, (2)])``), or -1 when it does
    not close before ``stop`` (default: the end). Brackets inside ``'...'`` or ``"..."`` do not
    count, and a backslash in a string escapes the next character."""
    stop = len(text) if stop is None else min(stop, len(text))
    depth, quote, escaped = 0, "", False
    for i in range(start, stop):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
                if depth == 0:
                    return i + 1
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _json_shaped(value: object, depth: int = 0) -> bool:
    if depth > 16:
        return False
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return all(_json_shaped(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_shaped(v, depth + 1) for k, v in value.items())
    return False


def _literal_args(call: ast.Call) -> tuple[JSONValue, ...] | None:
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    values: list[JSONValue] = []
    for arg in call.args:
        try:
            value = ast.literal_eval(arg)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        if not _json_shaped(value):
            return None
        values.append(value)
    return tuple(values)


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):  # solution.f(...)
        return func.attr
    return None


def call_sites(source: str, entry_point: str) -> list[tuple[JSONValue, ...]]:
    """The literal argument lists of every call to ``entry_point`` in ``source`` (a test
    module, an assertion or one call expression), in order, without repeats."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    found: dict[str, tuple[JSONValue, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node.func) == entry_point:
            args = _literal_args(node)
            if args is not None:
                found.setdefault(json.dumps(list(args), sort_keys=True), args)
    return list(found.values())


def text_calls(text: str, entry_point: str, limit: int = 16) -> list[tuple[JSONValue, ...]]:
    """Literal calls of ``entry_point`` written anywhere in prose (a docstring's examples in
    any style: ``f(15)   # returns "db1111db"``, ``for f(7, 34, 12) == 34``, ``f("a", 3) ->
    ...``): each ``entry_point(`` with its balanced parentheses, parsed as a call; no
    expected value is read, so these are inputs only, never trusted tests."""
    found: dict[str, tuple[JSONValue, ...]] = {}
    start = 0
    needle = entry_point + "("
    while len(found) < limit:
        at = text.find(needle, start)
        if at < 0:
            break
        start = at + len(needle)
        if at and (text[at - 1].isalnum() or text[at - 1] in "_."):
            continue  # another name ending in entry_point
        end = bracket_end(text, at + len(entry_point), stop=at + 2000)
        if end < 0:
            continue
        for args in call_sites(text[at:end], entry_point):
            found.setdefault(json.dumps(list(args), sort_keys=True), args)
    return list(found.values())


def _leading_literal(text: str) -> JSONValue | None:
    """The longest literal at the start of ``text`` (within its line, or its brackets)."""
    text = text.lstrip()
    if not text:
        return None
    if text[0] in "([{'\"":
        end = bracket_end(text, 0, stop=2000)
        if end < 0:
            return None
        candidates = [text[:end]]
    else:
        line = text.split("\n", 1)[0]
        words = line.replace(",", " ").split()
        candidates = words[:1]
    for piece in candidates:
        try:
            value = ast.literal_eval(piece.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, tuple):
            value = list(value)
        if _json_shaped(value):
            return value
    return None


def assigned_values(block: str, params: Sequence[str]) -> tuple[JSONValue, ...] | None:
    """The call one line or ``Input:`` block of prose writes as parameter values (``For N =
    150, ...``, ``Input: grid = [[1,2],[3,4]], k = 3``, and for one parameter ``Input: 3``),
    in the signature's order, or None unless every parameter gets a literal value."""
    if not params:
        return None
    values: dict[str, JSONValue] = {}
    for name in params:
        for marker in (f"{name} = ", f"{name}="):
            at = block.find(marker)
            while at > 0 and (block[at - 1].isalnum() or block[at - 1] == "_"):
                at = block.find(marker, at + 1)
            if at >= 0:
                value = _leading_literal(block[at + len(marker) :])
                if value is not None:
                    values[name] = value
                break
    if len(params) == 1 and params[0] not in values and block.strip().startswith("Input:"):
        value = _leading_literal(block.strip()[len("Input:") :])
        if value is not None:
            values[params[0]] = value
    if len(values) < len(params):
        return None
    return tuple(values[n] for n in params)


def assigned_calls(
    text: str, params: Sequence[str], limit: int = 16
) -> list[tuple[JSONValue, ...]]:
    """Calls written as parameter values in prose (``assigned_values``), one per line or
    ``Input:`` block."""
    found: dict[str, tuple[JSONValue, ...]] = {}
    for block in text.replace("Input:", "\nInput:").split("\n"):
        args = assigned_values(block, params)
        if args is not None:
            found.setdefault(json.dumps(list(args), sort_keys=True), args)
        if len(found) >= limit:
            break
    return list(found.values())


_NUMBER = r"-?\d+(?:\s*(?:\^|\*\*)\s*\d{1,2})?"
_LENGTH = r"len\(\s*[A-Za-z_]\w*\s*\)"
# ``0 <= k <= len(arr)``, ``1 ≤ n ≤ 10^3``, ``1 <= len(s)``: inclusive bounds only; a term
# followed by ``.``, ``[`` or ``(`` (``nodes.length``, ``grid[:,1]``) is not a parameter.
_BOUND = re.compile(
    rf"(?P<low>{_NUMBER})\s*(?:<=|≤)\s*(?P<term>{_LENGTH}|[A-Za-z_]\w*)(?![\w.\[(])"
    rf"(?:\s*(?:<=|≤)\s*(?P<high>{_NUMBER}|{_LENGTH}))?"
)


def _number(text: str) -> int:
    """``10``, ``-3``, ``10^3`` or ``10**3`` as an int."""
    base, _, power = re.sub(r"\s+", "", text).replace("**", "^").partition("^")
    return int(base) ** int(power) if power else int(base)


def _length_of(term: str) -> str | None:
    """``arr`` for ``len(arr)``, None for anything else."""
    return term[4:-1].strip() if term.startswith("len(") else None


@dataclass(frozen=True)
class Bound:
    """An inclusive range the prompt states for a parameter or its length (``0 <= k <=
    len(arr)``, ``1 <= len(s) <= 100``); ``high_length_of``: the upper bound is that
    parameter's length."""

    param: int
    of_length: bool
    low: int
    high: int | None = None
    high_length_of: int | None = None

    def holds(self, args: Sequence[JSONValue]) -> bool:
        """Whether ``args`` keep to it; a value of another type than the bound's, or an
        argument the call leaves to its default, says nothing (True)."""
        if self.param >= len(args):
            return True
        value = args[self.param]
        if self.of_length:
            if not isinstance(value, list | str):
                return True
            size = len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            size = value
        else:
            return True
        high = self.high
        if self.high_length_of is not None:
            other = args[self.high_length_of] if self.high_length_of < len(args) else None
            high = len(other) if isinstance(other, list | str) else None
        return size >= self.low and (high is None or size <= high)


def stated_bounds(text: str, params: Sequence[str]) -> list[Bound]:
    """The inclusive ranges ``text`` states for the parameters ``params`` or their lengths:
    ``0 <= k <= len(arr)``, ``Constraints: 0 ≤ N ≤ 10000``, ``1 <= len(arr) <= 100``. Only
    these explicit forms: prose (``a positive integer n``) is not read."""
    found: list[Bound] = []
    for match in _BOUND.finditer(text):
        term, high_text = match.group("term"), match.group("high")
        name = _length_of(term) or term
        if name not in params:
            continue
        high: int | None = None
        high_length_of: int | None = None
        if high_text is not None:
            other = _length_of(high_text)
            if other is None:
                high = _number(high_text)
            elif other in params:
                high_length_of = params.index(other)
        bound = Bound(
            params.index(name), term != name, _number(match.group("low")), high, high_length_of
        )
        if bound not in found:
            found.append(bound)
    return found


def params_of(source: str, name: str) -> list[str]:
    """The positional parameter names of function ``name`` in ``source`` (a module or just a
    signature line such as ``def f(a: int, b)``); [] when it does not parse."""
    text = source.strip()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        try:  # a bare signature line
            tree = ast.parse(text.split("\n", 1)[0].rstrip().rstrip(":") + ": ...")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    return []


_INT_NAMES = {"n", "k", "m", "x", "y", "z", "a", "b", "c", "num", "number", "base", "decimal"}
_INT_NAMES |= {"value", "capacity", "shift", "p", "i", "j", "start", "end", "low", "high"}
_STR_NAMES = {"s", "string", "text", "txt", "word", "message", "sentence", "name", "char"}
_LIST_NAMES = {"lst", "arr", "l", "nums", "numbers", "xs", "array", "list", "values", "q"}
_GRID_NAMES = {"grid", "matrix"}
_TYPED: dict[str, list[JSONValue]] = {
    "int": [0, 1, 2, 5, 10],
    "float": [0.0, 1.5, -2.5, 3.0, 10.25],
    "str": ["", "a", "abc", "Hello world", "aabbcc"],
    "bool": [True, False, True, False, True],
    "list[int]": [[], [1], [1, 2, 3], [3, 1, 2, 2], [-1, 0, 5, 10]],
    "list[float]": [[], [1.0], [1.5, 2.5], [3.0, -1.0, 2.0], [0.5, 0.25, 4.0]],
    "list[str]": [[], ["a"], ["ab", "c"], ["hello", "world", "a"], ["x", "yy", "zzz"]],
    "list[list[int]]": [[[1, 0], [0, 1]], [[1, 1, 1], [0, 0, 0]], [[0]], [[1, 2], [3, 4]], []],
}


def _type_key(annotation: ast.expr | None, name: str) -> str | None:
    if annotation is not None:
        text = ast.unparse(annotation).replace("List", "list").replace("typing.", "")
        text = text.replace(" ", "")
        if text == "list":
            return "list[int]"
        return text if text in _TYPED else None
    if name in _INT_NAMES:
        return "int"
    if name in _STR_NAMES:
        return "str"
    if name in _LIST_NAMES:
        return "list[int]"
    if name in _GRID_NAMES:
        return "list[list[int]]"
    return None


def signature_seeds(source: str, name: str) -> list[tuple[JSONValue, ...]]:
    """A few argument lists built from the signature of ``name`` in ``source``: each
    parameter's annotation (``int``, ``str``, ``List[int]``, ...) or, without one, its
    conventional name (``n``, ``s``, ``lst``, ``grid``); [] when any parameter's type is
    unknown. Seeds for mutation when the task has no call anywhere."""
    try:
        tree = ast.parse(source.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        try:
            tree = ast.parse(source.strip().split("\n", 1)[0].rstrip().rstrip(":") + ": ...")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            args = [*node.args.posonlyargs, *node.args.args]
            keys = [_type_key(a.annotation, a.arg) for a in args]
            if not args or any(k is None for k in keys):
                return []
            return [tuple(_TYPED[k][i] for k in keys if k) for i in range(5)]
    return []
