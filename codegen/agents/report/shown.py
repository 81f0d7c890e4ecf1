"""Plain-text lines of a request's module, package set and grade, as the CLI prints them and
the UI shows them: from report.json's own JSON (``RequestReport.to_dict``), so the CLI's
``--json`` object, report.json and the lines never disagree."""

from __future__ import annotations

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

    lines = [
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
