"""Shared inputs for output agreement: every candidate of a task is called on the same list.

Three sources, in this order (``inputs_for``):

* the spec's worked examples (``Example.call``, e.g. ``f([1, 2], 3)``);
* the calls its description writes out in any other style (``f(15)  # returns "db1111db"``,
  ``For N = 150, ...``, ``Input: grid = [[1, 2]], k = 3``): inputs only, never tests;
* with no call anywhere, a few argument lists from the signature's types (annotations, else
  conventional names: ``n`` an int, ``s`` a string, ``lst`` a list of ints);
* the call sites in the generated tests (``f(...)`` calls whose arguments are literals);
* type-aware mutation of those seeds, as EvalPlus does (Liu et al. 2023, ``TypedMutGen``):
  an int moves by a little or flips sign, a string loses, gains or swaps characters drawn from
  its own alphabet, a list loses, duplicates, reorders or mutates an element, a dict a value;
  the type structure of every argument is kept.

Bounded per task: at most ``InputBudget.max_inputs`` inputs, each at most ``max_chars`` of
JSON, integers within the seeds' own magnitude (so a mutation cannot turn ``fib(10)`` into
``fib(10**9)``), a fixed number of attempts; deterministic for one ``seed`` (a
``random.Random`` seeded by the seed and the seeds' JSON, no clock). The time bound is the
sandbox's: each call runs under its own limit (``codegen.sandbox.calls.call_functions``).

Arguments are literals only (``ast.literal_eval``) and JSON-shaped (the runner's wire format):
calls with keywords, starred arguments, names or non-JSON values (tuples, sets, bytes) are
not inputs. Nothing here executes model-written code.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from codegen.json_types import JSONValue

Origin = Literal["example", "docstring", "test", "signature", "mutation"]


@dataclass(frozen=True)
class InputBudget:
    max_inputs: int = 64  # all sources together
    max_mutations: int = 40  # of which generated
    max_chars: int = 1000  # JSON size of one input's arguments
    max_len: int = 40  # elements of a generated list or characters of a generated string
    attempts_per_input: int = 8  # mutation tries per wanted input before giving up
    seed: int = 0


@dataclass(frozen=True)
class CallInput:
    """One call's positional arguments and where they came from."""

    args: tuple[JSONValue, ...]
    origin: Origin

    def key(self) -> str:
        return json.dumps(list(self.args), sort_keys=True)


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
        depth, end = 0, -1
        for i in range(at + len(entry_point), min(len(text), at + 2000)):
            if text[i] in "([{":
                depth += 1
            elif text[i] in ")]}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
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
        depth, quote = 0, ""
        for i, ch in enumerate(text[:2000]):
            if quote:
                if ch == quote and text[i - 1] != "\\":
                    quote = ""
                if depth == 0 and not quote:
                    end = i + 1
                    break
                continue
            if ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        else:
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


def assigned_calls(
    text: str, params: Sequence[str], limit: int = 16
) -> list[tuple[JSONValue, ...]]:
    """Calls written as parameter values in prose: ``For N = 150, ...``, ``Input: grid =
    [[1,2],[3,4]], k = 3``, and for one parameter ``Input: 3``. One call per line (or
    ``Input:`` block) that gives every parameter a literal value, in the signature's order."""
    if not params:
        return []
    found: dict[str, tuple[JSONValue, ...]] = {}
    blocks = text.replace("Input:", "\nInput:").split("\n")
    for block in blocks:
        values: dict[str, JSONValue] = {}
        for name in params:
            at = -1
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
        if len(values) == len(params):
            args = tuple(values[n] for n in params)
            found.setdefault(json.dumps(list(args), sort_keys=True), args)
        if len(found) >= limit:
            break
    return list(found.values())


# -- type-aware mutation ------------------------------------------------------------------
@dataclass
class _Pool:
    """Values seen in the seeds, by type: ingredients for insertions, and the bounds."""

    ints: list[int]
    floats: list[float]
    strs: list[str]
    int_bound: int
    max_len: int

    @classmethod
    def of(cls, seeds: Sequence[tuple[JSONValue, ...]], max_len: int) -> _Pool:
        ints: list[int] = []
        floats: list[float] = []
        strs: list[str] = []

        def visit(value: JSONValue) -> None:
            if isinstance(value, bool):
                return
            if isinstance(value, int):
                ints.append(value)
            elif isinstance(value, float):
                floats.append(value)
            elif isinstance(value, str):
                strs.append(value)
            elif isinstance(value, list):
                for v in value:
                    visit(v)
            elif isinstance(value, dict):
                for v in value.values():
                    visit(v)

        for args in seeds:
            for a in args:
                visit(a)
        bound = max([abs(i) for i in ints] + [5])
        return cls(ints, floats, strs, 2 * bound + 10, max_len)


def _clamp(n: int, pool: _Pool) -> int:
    return max(-pool.int_bound, min(pool.int_bound, n))


def _mutate_int(x: int, rng: random.Random, pool: _Pool) -> int:
    options = [x + 1, x - 1, -x, x * 2, x // 2, 0, rng.randint(-pool.int_bound, pool.int_bound)]
    if pool.ints:
        options.append(rng.choice(pool.ints))
    return _clamp(rng.choice(options), pool)


def _mutate_float(x: float, rng: random.Random, pool: _Pool) -> float:
    bound = float(pool.int_bound)
    options = [x + 1.0, x - 1.0, -x, x * 2.0, x / 2.0, 0.0, round(rng.uniform(-bound, bound), 2)]
    if pool.floats:
        options.append(rng.choice(pool.floats))
    value = rng.choice(options)
    return max(-bound * 4, min(bound * 4, value))


def _alphabet(s: str, pool: _Pool) -> str:
    chars = set(s)
    for other in pool.strs:
        chars.update(other)
    return "".join(sorted(chars)) or string.ascii_lowercase


def _mutate_str(s: str, rng: random.Random, pool: _Pool) -> str:
    alphabet = _alphabet(s, pool)
    choice = rng.randrange(7)
    if choice == 0 and s:  # delete a character
        i = rng.randrange(len(s))
        return s[:i] + s[i + 1 :]
    if choice == 1:  # insert one from the alphabet
        i = rng.randrange(len(s) + 1)
        return (s[:i] + rng.choice(alphabet) + s[i:])[: pool.max_len]
    if choice == 2 and len(s) > 1:  # swap two
        i, j = sorted(rng.sample(range(len(s)), 2))
        return s[:i] + s[j] + s[i + 1 : j] + s[i] + s[j + 1 :]
    if choice == 3 and s:  # replace one
        i = rng.randrange(len(s))
        return s[:i] + rng.choice(alphabet) + s[i + 1 :]
    if choice == 4 and s:  # repeat a slice
        i = rng.randrange(len(s))
        j = rng.randrange(i, len(s)) + 1
        return (s[:j] + s[i:j] + s[j:])[: pool.max_len]
    if choice == 5:
        return s[::-1]
    return rng.choice(pool.strs) if pool.strs else ""


def _mutate_list(xs: list[JSONValue], rng: random.Random, pool: _Pool) -> list[JSONValue]:
    out = list(xs)
    if not out:
        return out
    choice = rng.randrange(7)
    i = rng.randrange(len(out))
    if choice == 0:
        del out[i]
    elif choice == 1 and len(out) < pool.max_len:
        out.insert(rng.randrange(len(out) + 1), out[i])
    elif choice == 2 and len(out) < pool.max_len:
        out.insert(rng.randrange(len(out) + 1), mutate_value(out[i], rng, pool))
    elif choice == 3:
        rng.shuffle(out)
    elif choice == 4:
        out.reverse()
    elif choice == 5 and len(out) > 1:
        j = rng.randrange(len(out))
        out[i], out[j] = out[j], out[i]
    else:
        out[i] = mutate_value(out[i], rng, pool)
    return out


def _mutate_dict(d: dict[str, JSONValue], rng: random.Random, pool: _Pool) -> dict[str, JSONValue]:
    out = dict(d)
    if not out:
        return out
    key = rng.choice(sorted(out))
    choice = rng.randrange(3)
    if choice == 0 and len(out) > 1:
        del out[key]
    elif choice == 1 and len(out) < pool.max_len:
        new_key = _mutate_str(key, rng, pool)
        out.setdefault(new_key, out[key])
    else:
        out[key] = mutate_value(out[key], rng, pool)
    return out


def mutate_value(value: JSONValue, rng: random.Random, pool: _Pool) -> JSONValue:
    """One type-preserving mutation of ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return _mutate_int(value, rng, pool)
    if isinstance(value, float):
        return _mutate_float(value, rng, pool)
    if isinstance(value, str):
        return _mutate_str(value, rng, pool)
    if isinstance(value, list):
        return _mutate_list(value, rng, pool)
    if isinstance(value, dict):
        return _mutate_dict(value, rng, pool)
    return value


def mutations(
    seeds: Sequence[tuple[JSONValue, ...]], budget: InputBudget, avoid: Iterable[str] = ()
) -> list[tuple[JSONValue, ...]]:
    """Up to ``budget.max_mutations`` new argument lists, each one or two type-preserving
    mutations away from a seed or an earlier mutation; deterministic for the seed."""
    if not seeds:
        return []
    blob = json.dumps([budget.seed, [list(s) for s in seeds]], sort_keys=True)
    rng = random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))
    pool = _Pool.of(seeds, budget.max_len)
    seen = set(avoid) | {json.dumps(list(s), sort_keys=True) for s in seeds}
    corpus = [tuple(s) for s in seeds]
    out: list[tuple[JSONValue, ...]] = []
    for _ in range(budget.max_mutations * budget.attempts_per_input):
        if len(out) >= budget.max_mutations:
            break
        base = list(rng.choice(corpus))
        if not base:
            continue
        for _ in range(1 + (rng.random() < 0.3)):
            position = rng.randrange(len(base))
            base[position] = mutate_value(base[position], rng, pool)
        key = json.dumps(base, sort_keys=True)
        if key in seen or len(key) > budget.max_chars:
            continue
        seen.add(key)
        corpus.append(tuple(base))
        out.append(tuple(base))
    return out


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


def inputs_for(
    entry_point: str,
    example_calls: Sequence[str] = (),
    test_sources: Sequence[str] = (),
    budget: InputBudget | None = None,
    prose: Sequence[str] = (),
    signature: str = "",
) -> list[CallInput]:
    """The task's shared inputs: the examples' calls, the calls written in ``prose`` (the
    spec's description: examples its parser could not read as call and expected value, and
    the values it gives the parameters of the entry point's ``signature``, ``For N = 150``),
    the tests' call sites, then mutations of all of them (seeds whose arity differs from the
    most common one are not mutated). With no call anywhere, the seeds come from the
    signature's types (``signature_seeds``)."""
    params = params_of(signature, entry_point) if signature else []
    budget = budget or InputBudget()
    chosen: dict[str, CallInput] = {}

    def add(args: tuple[JSONValue, ...], origin: Origin) -> None:
        item = CallInput(args, origin)
        key = item.key()
        if key not in chosen and len(key) <= budget.max_chars and len(chosen) < budget.max_inputs:
            chosen[key] = item

    for call in example_calls:
        for args in call_sites(call, entry_point)[:1]:
            add(args, "example")
    for text in prose:
        for args in [*text_calls(text, entry_point), *assigned_calls(text, params)]:
            add(args, "docstring")
    for source in test_sources:
        for args in call_sites(source, entry_point):
            add(args, "test")
    if not chosen and signature:
        for args in signature_seeds(signature, entry_point):
            add(args, "signature")
    seeds = [c.args for c in chosen.values()]
    if seeds:
        arities = [len(s) for s in seeds]
        arity = max(set(arities), key=lambda n: (arities.count(n), -n))
        seeds = [s for s in seeds if len(s) == arity]
    room = InputBudget(
        max_inputs=budget.max_inputs,
        max_mutations=min(budget.max_mutations, budget.max_inputs - len(chosen)),
        max_chars=budget.max_chars,
        max_len=budget.max_len,
        attempts_per_input=budget.attempts_per_input,
        seed=budget.seed,
    )
    for args in mutations(seeds, room, avoid=chosen):
        add(args, "mutation")
    return list(chosen.values())
