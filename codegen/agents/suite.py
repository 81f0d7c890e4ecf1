"""The crew's test suite around the pick: the spec's worked examples as trusted pytest
functions, test names, each draft's report as a pass/fail row for ``agents.pick``, and the
suite without the tests the pick found suspect."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from codegen.agents.pick import Row
from codegen.agents.replies import parse_python
from codegen.agents.spec import Spec
from codegen.sandbox.types import TestReport

EXAMPLE_PREFIX = "test_spec_example_"


def spec_example_tests(spec: Spec) -> str:
    """pytest functions for the spec's worked examples (the trusted tests), or "".

    The setup statements run, then the call and the expected value are evaluated, inside the
    test, in the sandbox, in the namespace of ``solution``; an example that is not Python
    (statements, then an expression) is skipped. Each worked run of the spec's program
    becomes a ``program.check`` (the in-box fixture: a fresh ``python3 solution.py ARGS`` on
    its stdin) with the spec's comparison; stdout is compared when the program writes it.
    """
    functions: list[str] = []
    for index, example in enumerate(spec.examples):
        call, expected = example.call, example.expected
        setup = "\n".join(example.setup)
        try:
            parse_python(setup)
            parse_python(call, mode="eval")
            parse_python(expected, mode="eval")
        except SyntaxError:
            continue
        run_setup = f"    exec({setup!r}, namespace)\n" if setup else ""
        functions.append(
            f"def {EXAMPLE_PREFIX}{index}():\n"
            "    import solution\n\n"
            "    namespace = dict(vars(solution))\n"
            f"{run_setup}"
            f"    assert eval({call!r}, namespace) == eval({expected!r}, namespace)\n"
        )
    return "\n\n".join(functions + _program_example_tests(spec))


def _program_example_tests(spec: Spec) -> list[str]:
    program = spec.program
    if program is None:
        return []
    functions = []
    for index, example in enumerate(program.examples):
        stdout = example.stdout if "stdout" in program.writes else None
        functions.append(
            f"def {EXAMPLE_PREFIX}program_{index}(program):\n"
            "    program.check(\n"
            f"        stdin={example.stdin!r},\n"
            f"        arguments={list(example.arguments)!r},\n"
            f"        stdout={stdout!r},\n"
            f"        exit_code={example.exit_code!r},\n"
            f"        comparison={program.comparison!r},\n"
            "    )\n"
        )
    return functions


def with_examples(tests: str, examples: str) -> str:
    return tests if not examples else tests.rstrip() + "\n\n\n" + examples


def test_function(name: str) -> str:
    """``test_solution.py::test_x[2]`` -> ``test_x``."""
    return name.rsplit("::", 1)[-1].split("[", 1)[0]


def rows_of(reports: Sequence[TestReport]) -> tuple[list[str], list[Row]]:
    """Every test name seen, and each candidate's pass/fail row over them (a draft whose
    module did not import fails them all)."""
    names = sorted({t.name for r in reports for t in r.tests})
    rows = []
    for report in reports:
        outcome = {t.name: t.outcome == "passed" for t in report.tests}
        rows.append(tuple(outcome.get(n, False) for n in names))
    return names, rows


def without_tests(tests: str, names: Sequence[str], every_name: Sequence[str]) -> str:
    """The test module minus the test functions named (pytest node names); a parametrized
    function goes only when all its cases (among ``every_name``) are named."""
    named = set(names)
    doomed = {
        f
        for f in {test_function(n) for n in named}
        if all(n in named for n in every_name if test_function(n) == f)
    }
    try:
        tree = parse_python(tests)
    except SyntaxError:
        return tests
    assert isinstance(tree, ast.Module)
    lines = tests.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in doomed:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            drop.update(range(start, node.end_lineno or node.lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)
