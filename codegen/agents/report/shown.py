"""Plain-text lines of a request's module (a program's interface among them), its program's
runs, package set and grade, as the CLI prints them and the UI shows them: from report.json's
own JSON (``RequestReport.to_dict``), so the CLI's ``--json`` object, report.json and the
lines never disagree."""

from __future__ import annotations

from collections.abc import Callable

from codegen.agents.report.grade import describe_grade
from codegen.agents.spec import CONSTRUCTOR
from codegen.json_types import JSONObject, JSONValue

UNATTRIBUTED = "(tests calling nothing of the spec)"


def counted(count: int, noun: str) -> str:
    """``1 test``, ``2 tests``: a count with its noun in agreement (regular plurals only)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def all_pass(total: int) -> str:
    """``the 1 test passes``, ``all 5 tests pass``."""
    return "the 1 test passes" if total == 1 else f"all {total} tests pass"


def _objects(value: JSONValue) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strings(value: JSONValue) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def result_text(result: JSONObject | None) -> str:
    """``3/3 tests passed``, ``1/2 tests passed; failed: test_x``, or ``no test calls it``."""
    if result is None or not result.get("total"):
        return "no test calls it"
    text = f"{result.get('passed')}/{result.get('total')} tests passed"
    failed = [f.split("::", 1)[-1] for f in _strings(result.get("failed"))]
    if failed:
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        text += f"; failed: {', '.join(failed[:3])}{more}"
    return text


def _signature(part: JSONObject) -> str:
    text = str(part.get("signature") or part.get("name") or "")
    return text.removeprefix("def ").strip()


def module_lines(module: JSONValue, methods: JSONValue = None) -> list[str]:
    """One line per function, class, method and constant of the spec's outline, each
    function and method with its tests' results (``methods``: report.json's list; None:
    no tests ran yet, no results shown)."""
    if not isinstance(module, dict):
        return []
    results = {str(m.get("name")): m for m in _objects(methods)}

    def tested(name: str, prefix: str = "") -> str:
        return f"  [{prefix}{result_text(results.get(name))}]" if methods is not None else ""

    lines = _program_lines(module.get("program"), tested)
    lines += [
        f"function {_signature(f)}{tested(str(f.get('name')))}"
        for f in _objects(module.get("functions"))
    ]
    for cls in _objects(module.get("classes")):
        name = str(cls.get("name"))
        constructor = str(cls.get("constructor") or "").removeprefix("def ").strip()
        alone = tested(f"{name}.{CONSTRUCTOR}", "constructor alone: ")
        lines.append(f"class {name}: {constructor}{alone}")
        attributes = _strings(cls.get("attributes"))
        if attributes:
            lines.append(f"  attributes: {', '.join(attributes)}")
        for method in _objects(cls.get("methods")):
            key = f"{name}.{method.get('name')}"
            lines.append(f"  {_signature(method)}{tested(key)}")
    constants = _strings(module.get("constants"))
    if constants:
        lines.append(f"constants: {', '.join(constants)}")
    if "" in results:
        lines.append(f"{UNATTRIBUTED}  [{result_text(results[''])}]")
    return lines


# A text a person reads in a line (stdin, stdout, a format) is cut past this many characters.
SHOWN_CHARS = 80


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as one line: newlines shown as ``\\n``, cut past ``limit`` characters."""
    flat = text.replace("\\", "\\\\").replace("\n", "\\n")
    return flat if len(flat) <= limit else f"{flat[:limit]}... ({len(text)} chars)"


def _program_lines(program: JSONValue, tested: Callable[[str], str]) -> list[str]:
    """The program's interface: its usage (with its tests' results), what it reads and
    writes, how stdout is compared, its input and output formats."""
    if not isinstance(program, dict):
        return []
    reads = ", ".join(_strings(program.get("reads"))) or "nothing"
    writes = ", ".join(_strings(program.get("writes"))) or "nothing"
    lines = [
        f"program {program.get('usage') or program.get('name')}{tested(str(program.get('name')))}",
        f"  reads {reads}; writes {writes}; stdout compared: {program.get('comparison')}",
    ]
    for label, key in (("input", "input_format"), ("output", "output_format")):
        text = program.get(key)
        if isinstance(text, str) and text.strip():
            lines.append(f"  {label}: {cut(text.strip(), 2 * SHOWN_CHARS)}")
    return lines


def _run_line(run: JSONObject) -> str:
    """``stdin '3\\n1 3 2\\n' -> stdout '2\\n' (expected '2\\n'), exit 0 (expected 0)``."""
    arguments = _strings(run.get("arguments"))
    given = f"args '{cut(' '.join(arguments))}', " if arguments else ""
    stdout = cut(str(run.get("stdout", "")))
    expected = run.get("expected_stdout")
    wanted = f" (expected '{cut(expected)}')" if isinstance(expected, str) else ""
    code = run.get("exit_code")
    ended = "timed out" if run.get("timed_out") else f"exit {code}"
    if run.get("output_capped"):
        ended += ", output capped"
    expected_code = run.get("expected_exit_code")
    ended += f" (expected {expected_code})" if expected_code is not None else ""
    stdin = cut(str(run.get("stdin", "")))
    return f"{given}stdin '{stdin}' -> stdout '{stdout}'{wanted}, {ended}"


def program_runs(test_report: JSONValue) -> list[JSONObject]:
    """Every program run the tests made (report.json's ``test_report``), in order, each with
    its test's name and outcome."""
    if not isinstance(test_report, dict):
        return []
    return [
        {"test": str(case.get("name", "")), "outcome": case.get("outcome"), **run}
        for case in _objects(test_report.get("tests"))
        for run in _objects(case.get("program_runs"))
    ]


def program_run_lines(runs: JSONValue, limit: int = 20) -> list[str]:
    """One line per program run (``program_runs``' list): the test, its outcome, the stdin,
    expected and actual stdout and exit code, texts cut to a line; at most ``limit`` lines,
    then how many more."""
    lines = [
        f"{str(run.get('test')).split('::', 1)[-1]} {run.get('outcome')}: {_run_line(run)}"
        for run in _objects(runs)
    ]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more runs"]
    return lines


def packages_line(module: JSONValue, packages: JSONValue) -> str:
    """The spec's dependencies and the sandbox package set they were checked against."""
    needs = _strings(module.get("dependencies")) if isinstance(module, dict) else []
    if isinstance(packages, dict):
        listed = ", ".join(_strings(packages.get("requirements"))) or "no third-party packages"
        sandbox = f"sandbox package set {packages.get('name')} ({listed})"
    else:
        sandbox = "sandbox package set unknown"
    return f"{', '.join(needs) or 'standard library only'}; {sandbox}"


def grade_line(grade: JSONValue) -> str:
    """report.json's ``reviewer_grade`` as one phrase (null: not reviewed by the agent)."""
    if not isinstance(grade, dict):
        return describe_grade(None, reviewed=False)
    value = grade.get("grade")
    number = (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    )
    return describe_grade(number)
