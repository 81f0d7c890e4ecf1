"""Shared inputs for classes: call sequences on a fresh instance, every draft run on the same
ones, in one sandbox execution, and compared on every call of every sequence.

Sources, in this order (``class_sequences``; the seeds are read by ``inputs.sequence_seeds``):

* the spec's worked examples (``c = LRUCache(2)``, ``c.put(1, 1)``, then ``c.get(1)``);
* the sequences the generated tests drive (each instance a test constructs, with the method
  calls and attribute reads it makes on it, in order);
* with none for a class, one from the spec's signatures: the constructor, then each method
  once, with arguments built from their types (``inputs.seeds.signature_seeds``);
* mutations of those: an argument mutated as function inputs are (``inputs.functions``), or a
  step dropped, repeated or swapped with its neighbour, so state is reached in other orders;
* each sequence ends by reading the public attributes the spec lists for its class.

Bounded (``SequenceBudget``: sequences, steps per sequence, JSON size) and deterministic for
one ``seed`` (a ``random.Random`` seeded by the seed and the seeds' JSON).

Running: each sequence is one input of ``sandbox.calls.call_functions`` (one forked child per
draft, isolated from the others, under the same limits as function inputs) calling a small
replayer appended to the draft's module; it returns, per step, the value (copied at once, so
later calls cannot change it; the instance itself and the module's own objects as their type
and repr without addresses) or the exception. A step's outcome is one column of the
``BehaviourTable``: two drafts that agree on every call made on a fresh instance but not on
the same calls made in a row fall into different groups. A sequence that timed out or never
ran gives that outcome on each of its steps.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from codegen.agents.pick.behaviour import BehaviourTable
from codegen.agents.pick.inputs.functions import CallInput, _Pool, mutate_value
from codegen.agents.pick.inputs.seeds import signature_seeds
from codegen.agents.pick.inputs.sequence_seeds import (
    CallSequence,
    SequenceOrigin,
    Step,
    example_sequences,
    suite_sequences,
)
from codegen.agents.replies import parse_python
from codegen.agents.spec import ClassSpec, Spec
from codegen.json_types import JSONValue
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import CallOutcome, Digest, call_functions
from codegen.sandbox.types import Limits

REPLAYER = "__codegen_sequence__"

# Appended to each draft's module: runs one sequence's steps on a fresh instance. It runs in
# the draft's own process, so it can only ever report on that draft.
_REPLAYER_SOURCE = f"""

def {REPLAYER}(steps):
    import copy, re

    def snap(value, instance, depth=0):
        if value is instance:
            return "<the instance>"
        kind = type(value)
        if kind in (list, tuple, set, frozenset) and depth < 8:
            items = [snap(v, instance, depth + 1) for v in value]
            try:
                return kind(items)
            except TypeError:
                return sorted(map(repr, items))
        if kind is dict and depth < 8:
            return {{snap(k, instance, depth + 1): snap(v, instance, depth + 1)
                    for k, v in value.items()}}
        if kind.__module__ == __name__ or kind.__repr__ is object.__repr__:
            try:
                text = repr(value)
            except Exception:
                text = ""
            text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)[:200]
            return "<" + kind.__name__ + " " + text + ">"
        try:
            return copy.deepcopy(value)
        except Exception:
            return "<" + kind.__name__ + " not copied>"

    out = []
    missing = object()
    instance = missing
    for kind, name, args in steps:
        try:
            if kind == "new":
                instance = globals()[name](*args)
                value = None
            elif instance is missing and steps[0][0] == "new":
                raise RuntimeError("no instance: the constructor failed")
            elif kind == "attr":
                value = getattr(instance, name)
            elif instance is missing:
                value = globals()[name](*args)
            else:
                value = getattr(instance, name)(*args)
            out.append(["ok", snap(value, instance)])
        except Exception as exc:
            try:
                text = type(exc).__name__ + ": " + str(exc)[:200]
            except Exception:
                text = type(exc).__name__
            out.append(["error", text])
    return out
"""


@dataclass(frozen=True)
class SequenceBudget:
    max_sequences: int = 40  # all sources together
    max_mutations: int = 24  # of which generated
    max_steps: int = 24  # per sequence, attribute reads included
    max_chars: int = 2000  # JSON size of one sequence
    attempts_per_input: int = 8  # mutation tries per wanted sequence before giving up
    seed: int = 0


# -- sources ----------------------------------------------------------------------------------
# A docstring's ``:param name: type`` (reST): the type's first words, as an annotation.
_PARAM_TYPE = re.compile(
    r":param\s+(\w+)\s*:\s*(?:(?:a|an|the)\s+)?([A-Za-z]+(?:\s+of\s+[A-Za-z]+)?)", re.I
)
_DOC_TYPES = {"int": "int", "integer": "int", "float": "float", "str": "str", "string": "str"}
_DOC_TYPES |= {"bool": "bool", "boolean": "bool", "list": "list[int]"}
_DOC_TYPES |= {f"list of {t}": f"list[{a}]" for t, a in _DOC_TYPES.items() if a in ("int", "str")}
_DOC_TYPES |= {"list of strings": "list[str]", "list of integers": "list[int]"}


def _documented_types(node: ast.FunctionDef | ast.AsyncFunctionDef, description: str) -> None:
    """Annotate ``node``'s unannotated parameters with the types ``description`` gives them
    (``:param string_list: list of str``)."""
    found = {n: _DOC_TYPES.get(t.lower()) for n, t in _PARAM_TYPE.findall(description)}
    for arg in [*node.args.posonlyargs, *node.args.args]:
        if arg.annotation is None and found.get(arg.arg):
            arg.annotation = ast.Name(str(found[arg.arg]))


def _signature_sequence(cls: ClassSpec) -> list[Step] | None:
    """The constructor, then each method once, arguments from the signatures' types (or, for
    a parameter without one, the type its description's ``:param`` line gives; or none when
    every parameter has a default); a method whose types are unknown is left out, and None
    when the constructor's are."""

    def args_of(signature: str, description: str) -> tuple[JSONValue, ...] | None:
        text = signature.strip().split("\n", 1)[0].rstrip().rstrip(":")
        if not text.startswith(("def ", "async def ")):
            text = "def " + text
        try:
            tree = parse_python(text + ": ...")
        except SyntaxError:
            return None
        node = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        args = node.args
        first = [*args.posonlyargs, *args.args][:1]
        if first and first[0].arg in ("self", "cls"):  # its type is no argument
            if args.posonlyargs:
                args.posonlyargs = args.posonlyargs[1:]
            else:
                args.args = args.args[1:]
        params = [*args.posonlyargs, *args.args]
        if not params:
            return ()
        _documented_types(node, description)
        seeds = signature_seeds(ast.unparse(node), node.name)
        if len(seeds) > 1:
            return seeds[1]
        # Types unknown: the call with the defaults, when every parameter has one.
        return () if len(args.defaults) == len(params) else None

    init = args_of(cls.constructor, cls.description)
    if init is None:
        return None
    steps = [Step("new", cls.name, init)]
    for method in cls.methods:
        args = args_of(method.signature, method.description)
        if args is not None:
            steps.append(Step("call", method.name, args))
    return steps


def _with_reads(steps: Sequence[Step], spec: Spec, budget: SequenceBudget) -> tuple[Step, ...]:
    """``steps`` cut to the budget, then the reads of the spec's attributes of its class."""
    cls = next((c for c in spec.classes if steps and c.name == steps[0].name), None)
    reads = [Step("attr", a.name) for a in cls.attributes] if cls else []
    body = [s for s in steps if s.kind != "attr" or s.name not in {r.name for r in reads}]
    body = body[: max(1, budget.max_steps - len(reads))]
    return tuple(body + reads)[: budget.max_steps]


def _mutated(
    base: Sequence[Step], rng: random.Random, pool: _Pool, max_steps: int
) -> list[Step] | None:
    steps = list(base)
    calls = [i for i, s in enumerate(steps) if s.kind == "call"]
    with_args = [i for i, s in enumerate(steps) if s.args]
    choice = rng.random()
    if choice < 0.6 and with_args:  # an argument mutated
        i = rng.choice(with_args)
        args = list(steps[i].args)
        j = rng.randrange(len(args))
        args[j] = mutate_value(args[j], rng, pool)
        steps[i] = Step(steps[i].kind, steps[i].name, tuple(args))
    elif choice < 0.73 and len(calls) > 1:  # a step dropped
        del steps[rng.choice(calls)]
    elif choice < 0.86 and calls and len(steps) < max_steps:  # a step repeated
        i = rng.choice(calls)
        steps.insert(i + 1, steps[i])
    elif len(calls) > 1:  # two neighbouring calls swapped
        k = rng.randrange(len(calls) - 1)
        i, j = calls[k], calls[k + 1]
        steps[i], steps[j] = steps[j], steps[i]
    else:
        return None
    return steps


def class_sequences(
    spec: Spec, tests: str, budget: SequenceBudget | None = None
) -> list[CallSequence]:
    """The shared sequences of a spec's classes (see the module's doc), deterministic."""
    budget = budget or SequenceBudget()
    names = [c.name for c in spec.classes]
    chosen: dict[str, CallSequence] = {}

    def add(steps: Sequence[Step], origin: SequenceOrigin) -> bool:
        if not steps or len(chosen) >= budget.max_sequences:
            return False
        item = CallSequence(_with_reads(steps, spec, budget), origin)
        key = item.key()
        if key in chosen or len(key) > budget.max_chars:
            return False
        chosen[key] = item
        return True

    # The one class made without arguments: an example may use an instance of it unmade.
    made = {c.name: _signature_sequence(c) for c in spec.classes}
    bare = [c for c in spec.classes if (m := made[c.name]) is not None and m[0].args == ()]
    implied = (
        (bare[0].name, frozenset(m.name for m in [*bare[0].methods, *bare[0].attributes]))
        if len(bare) == 1
        else None
    )
    for example in spec.examples:
        for steps in example_sequences(example.setup, example.call, names, implied):
            add(steps, "example")
    for steps in suite_sequences(tests, names):
        add(steps, "test")
    for cls in spec.classes:
        if not any(s.steps[0].name == cls.name for s in chosen.values()):
            found = _signature_sequence(cls)
            if found is not None:
                add(found, "signature")
    seeds = [[s for s in c.steps if s.kind != "attr"] for c in chosen.values()]
    if not seeds:
        return list(chosen.values())
    blob = json.dumps([budget.seed, [[s.wire() for s in q] for q in seeds]], sort_keys=True)
    rng = random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))
    pool = _Pool.of([s.args for q in seeds for s in q], 40)
    corpus = list(seeds)
    wanted = min(budget.max_mutations, budget.max_sequences - len(chosen))
    made = 0
    for _ in range(wanted * budget.attempts_per_input):
        if made >= wanted:
            break
        steps = _mutated(rng.choice(corpus), rng, pool, budget.max_steps)
        if steps is not None and add(steps, "mutation"):
            corpus.append(steps)
            made += 1
    return list(chosen.values())


# -- running ----------------------------------------------------------------------------------
def with_replayer(code: str) -> str:
    """A draft's module with the sequence replayer appended ("" stays "": nothing to load)."""
    return code.rstrip() + "\n" + _REPLAYER_SOURCE if code.strip() else code


def step_outcomes(outcome: CallOutcome, steps: int) -> list[CallOutcome]:
    """One outcome per step from a sequence's outcome: the replayer's list, or (a timeout,
    a load error, a run that never reached it, anything not in its shape) the sequence's
    outcome on every step."""
    value = outcome.value
    if isinstance(value, Digest):
        return [outcome] * steps
    if not (outcome.ok and isinstance(value, list) and len(value) == steps):
        if outcome.ok:  # the draft's process answered in another shape
            outcome = CallOutcome("error", error="the sequence's result is not readable")
        return [outcome] * steps
    out = []
    for item in value:
        if isinstance(item, list | tuple) and len(item) == 2 and item[0] == "ok":
            out.append(CallOutcome("ok", item[1], duration_s=outcome.duration_s))
        elif isinstance(item, list | tuple) and len(item) == 2 and item[0] == "error":
            out.append(CallOutcome("error", error=str(item[1])))
        else:
            out.append(CallOutcome("error", error="the step's result is not readable"))
    return out


def columns(sequences: Sequence[CallSequence]) -> list[CallInput]:
    """One shared input per step of every sequence (its arguments, the sequence's origin,
    and the sequence as Python up to that step)."""
    out = []
    for seq in sequences:
        for k, step in enumerate(seq.steps):
            text = seq.source(k)
            text = text if len(text) <= 300 else "..." + text[-297:]
            out.append(CallInput(step.args, seq.origin, text))
    return out


def run_sequences(
    box: Sandbox,
    codes: Sequence[str],
    sequences: Sequence[CallSequence],
    limits: Limits | None,
    step_limit_s: float,
    deadline_s: float,
    max_timeouts: int,
) -> BehaviourTable:
    """Every draft on every sequence, in one sandbox execution; one column per step."""
    limits_per = [step_limit_s * (1 + 0.2 * len(s.steps)) for s in sequences]
    outcomes = call_functions(
        box,
        [with_replayer(c) for c in codes],
        REPLAYER,
        [[[s.wire() for s in seq.steps]] for seq in sequences],
        limits_per,
        limits,
        module_deadline_s=deadline_s,
        max_timeouts=max_timeouts,
        max_value_chars=20_000,
    )
    rows = [
        [
            o
            for seq, one in zip(sequences, row, strict=True)
            for o in step_outcomes(one, len(seq.steps))
        ]
        for row in outcomes
    ]
    return BehaviourTable.of(rows)
