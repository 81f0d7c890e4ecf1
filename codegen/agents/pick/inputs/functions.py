"""Shared inputs for output agreement: every candidate of a task is called on the same list.

Sources, in this order (``inputs_for``; the seeds are read by ``agents.pick.inputs.seeds``):

* the spec's worked examples (``Example.call``, e.g. ``f([1, 2], 3)``);
* the calls its description writes out in any other style (``f(15)  # returns "db1111db"``,
  ``For N = 150, ...``, ``Input: grid = [[1, 2]], k = 3``): inputs only, never tests;
* the call sites in the generated tests (``f(...)`` calls whose arguments are literals);
* with no call anywhere, a few argument lists from the signature's types (annotations, else
  conventional names: ``n`` an int, ``s`` a string, ``lst`` a list of ints);
* type-aware mutation of those seeds, as EvalPlus does (Liu et al. 2023, ``TypedMutGen``):
  an int moves by a little or flips sign, a string loses, gains or swaps characters drawn from
  its own alphabet, a list loses, duplicates, reorders or mutates an element, a dict a value;
  the type structure of every argument is kept, and so is every range the description states
  for a parameter or its length (``0 <= k <= len(arr)``, EvalPlus's input contracts written
  out by the prompt): a draft that raises outside the domain does not count as crashing.

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

import hashlib
import json
import random
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from codegen.agents.pick.inputs.seeds import (
    Bound,
    assigned_calls,
    call_sites,
    params_of,
    signature_seeds,
    stated_bounds,
    text_calls,
)
from codegen.json_types import JSONValue

__all__ = [
    "CallInput",
    "InputBudget",
    "assigned_calls",
    "call_sites",
    "inputs_for",
    "mutate_value",
    "mutations",
    "params_of",
    "signature_seeds",
    "text_calls",
]

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
    """One call's positional arguments and where they came from; for a step of a class's
    call sequence (``agents.pick.inputs.sequences``), ``text`` is the sequence up to that step."""

    args: tuple[JSONValue, ...]
    origin: Origin
    text: str = ""

    def key(self) -> str:
        return json.dumps(list(self.args), sort_keys=True)


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
    seeds: Sequence[tuple[JSONValue, ...]],
    budget: InputBudget,
    avoid: Iterable[str] = (),
    bounds: Sequence[Bound] = (),
) -> list[tuple[JSONValue, ...]]:
    """Up to ``budget.max_mutations`` new argument lists, each one or two type-preserving
    mutations away from a seed or an earlier mutation, inside every one of ``bounds`` (the
    ranges the prompt states); deterministic for the seed."""
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
        if not all(bound.holds(base) for bound in bounds):
            continue
        seen.add(key)
        corpus.append(tuple(base))
        out.append(tuple(base))
    return out


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
    most common one are not mutated), kept inside the ranges ``prose`` states for the
    parameters (``0 <= k <= len(arr)``: ``seeds.stated_bounds``; given calls are kept
    as they are). With no call anywhere, the seeds come from the
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
    bounds = [b for text in prose for b in stated_bounds(text, params)]
    for args in mutations(seeds, room, avoid=chosen, bounds=bounds):
        add(args, "mutation")
    return list(chosen.values())
