"""Replies derived from a task's public prompt, for the roles a published run never had
(``codegen replay import``, ``replay.importers``): the analyzer's spec (the entry point's real
signature and docstring, its ``>>>`` examples, else the ones it writes in prose styles such as
``f(x) ➞ y``, and the task's visible example assertions), a test module asserting those
examples, a reviewer ``APPROVED`` and a README from the docstring. Built from the public half
only (``importers.public_half`` blanks the hidden test and canonical solution first); marked
``source: derived``."""

from __future__ import annotations

import ast
import doctest
import inspect
import json

from codegen.evaluation.humaneval import Problem
from codegen.replay.examples import written_examples
from codegen.replay.recording import DERIVED, Entry
from codegen.replay.spec_json import SpecJSON


def _entry_function(problem: Problem) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(problem.prompt)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == problem.entry_point:
            return node
    return None


def doctest_examples(docstring: str) -> list[tuple[str, str]]:
    """``>>>`` examples whose expected output is a Python literal: (call, expected)."""
    found = []
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:
        return []
    for example in examples:
        call, want = example.source.strip(), example.want.strip()
        if not want or "\n" in call:
            continue
        try:
            ast.literal_eval(want)
            # Unparsed, so a trailing comment cannot swallow the assertion built from it.
            call = ast.unparse(ast.parse(call, mode="eval"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        found.append((call, want))
    return found


def _visible_assertions(problem: Problem) -> list[ast.Assert]:
    """The task's visible example assertions (MBPP's ``sample_io``) that parse, one each."""
    found = []
    for text in problem.visible_tests:
        try:
            tree = ast.parse(text.strip())
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
            found.append(tree.body[0])
    return found


def _visible_examples(problem: Problem) -> list[tuple[str, str]]:
    """Visible assertions of the shape ``assert CALL == EXPECTED``: (call, expected)."""
    found = []
    for node in _visible_assertions(problem):
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and node.msg is None
        ):
            found.append((ast.unparse(test.left), ast.unparse(test.comparators[0])))
    return found


def docstring_as_written(source: str, node: ast.FunctionDef | ast.ClassDef) -> str | None:
    """``node``'s docstring as ``source`` writes it, escapes not expanded (an example such as
    ``>>> f('a\\nb')`` stays one line; ``ast.get_docstring`` would split it), cleaned of its
    indentation; None when it has none."""
    if not node.body:
        return None
    first = node.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        return None
    if not isinstance(first.value.value, str):
        return None
    written = (ast.get_source_segment(source, first.value) or "").lstrip("rRuU")
    quotes = written[:3]
    if quotes not in ('"""', "'''") or written.count(quotes) != 2:
        # Not one triple-quoted literal (concatenated, single-quoted): as Python reads it.
        return inspect.cleandoc(first.value.value)
    return inspect.cleandoc(written[3:-3])


def written_docstring(problem: Problem) -> tuple[str, list[str]]:
    """The entry point's docstring as the prompt writes it (``docstring_as_written``) and its
    positional parameters; ("", []) when the prompt has no such function or docstring."""
    node = _entry_function(problem)
    if node is None:
        return "", []
    docstring = docstring_as_written(problem.prompt, node)
    if docstring is None:
        return "", []
    return docstring, [a.arg for a in [*node.args.posonlyargs, *node.args.args]]


def prompt_examples(problem: Problem) -> list[tuple[str, str]]:
    """The worked examples the prompt's docstring writes, as (call, expected): its ``>>>``
    examples; with none, the ones it writes in prose styles (``f(x) ➞ y``, ``f(x) == y``,
    ``f(x) should return y.``, ``For x = 1 the output should be y``, ``Input:`` /
    ``Output:``: ``replay.examples``)."""
    docstring, params = written_docstring(problem)
    return doctest_examples(docstring) or written_examples(docstring, problem.entry_point, params)


def _examples(problem: Problem) -> list[tuple[str, str]]:
    """The docstring's examples, then the visible example assertions."""
    found = prompt_examples(problem)
    return found + [e for e in _visible_examples(problem) if e not in found]


def derived_spec(problem: Problem) -> SpecJSON:
    node = _entry_function(problem)
    docstring = (ast.get_docstring(node) or "") if node else ""
    signature = f"def {problem.entry_point}(...)"
    if node is not None:
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        signature = f"def {node.name}({ast.unparse(node.args)}){returns}"
    purpose = " ".join(docstring.split("\n\n")[0].split()) or f"Implement {problem.entry_point}."
    return {
        "purpose": purpose,
        "functions": [
            {"name": problem.entry_point, "signature": signature, "description": docstring}
        ],
        "behaviours": [],
        "edge_cases": [],
        "examples": [{"call": c, "expected": w} for c, w in _examples(problem)],
        "constraints": ["keep the signature exactly", "standard library only"],
    }


def derived_tests(problem: Problem) -> str:
    """A pytest module asserting the docstring's examples (``>>>``, else prose styles) and
    the visible assertions (those not of the ``CALL == EXPECTED`` shape verbatim), or that
    the function exists."""
    examples = prompt_examples(problem)
    name = problem.entry_point
    asserts = [
        (f"docstring_example_{i}", f"assert {c} == {w}") for i, (c, w) in enumerate(examples)
    ]
    for i, visible in enumerate(_visible_assertions(problem)):
        asserts.append((f"visible_example_{i}", ast.unparse(visible)))
    used = {n.id for _, a in asserts for n in ast.walk(ast.parse(a)) if isinstance(n, ast.Name)}
    modules = sorted(m for m in used if m in _TEST_MODULES)
    lines = [*(f"import {m}" for m in modules), f"from solution import {name}", "", ""]
    if asserts:
        for test, line in asserts:
            lines += [f"def test_{test}():", f"    {line}", "", ""]
    else:
        lines += [f"def test_{name}_is_defined():", f"    assert callable({name})", "", ""]
    return "```python\n" + "\n".join(lines).rstrip() + "\n```"


# Modules a visible assertion may use without importing them (``math.isclose`` in MBPP).
_TEST_MODULES = frozenset({"math", "re", "collections", "itertools"})


def derived_entries(problem: Problem, skip_roles: set[str]) -> list[Entry]:
    spec = derived_spec(problem)
    replies = {
        "analyzer": json.dumps(spec),
        "test_designer": derived_tests(problem),
        "reviewer": DERIVED_REVIEW,
        "documenter": f"# {problem.entry_point}\n\n{spec['functions'][0]['description']}\n",
    }
    return entries_of(problem.task_id, replies, skip_roles)


# The reviewer's reply a derived recording gives: the source runs had no reviewer.
DERIVED_REVIEW = (
    "APPROVED\n(replay: derived by codegen replay import; the source run had no reviewer)"
)


def entries_of(task_id: str, replies: dict[str, str], skip_roles: set[str]) -> list[Entry]:
    """The recording's entries for one task's derived replies (by role), less ``skip_roles``
    (roles the source run recorded itself)."""
    return [
        Entry(role=role, task=task_id, candidate=None, round=None, content=text, source=DERIVED)
        for role, text in replies.items()
        if role not in skip_roles
    ]
