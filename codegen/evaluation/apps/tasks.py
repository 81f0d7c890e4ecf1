"""APPS (Hendrycks et al.): programs that read standard input and write standard output.

The task file is JSONL, one task a line, in the shape MapCoder's selection has (``id`` and/or
``name``, ``description``, ``difficulty``, ``sample_io`` and ``test_list``: lists of
``{input, output}``, ``input`` the text on stdin, ``output`` the expected stdout lines,
``starter_code``) and optionally ``solutions`` (APPS's own: a list of programs, or that list as
JSON text), whose first is the task's canonical program. A task becomes a :class:`Problem` of
shape ``apps``: its public ``prompt`` is the description, its hidden ``test`` the hidden cases
as JSON (``[{input, expected}]``, the expected lines joined by newlines, each value as
Python's ``print`` writes it), read by the scorer alone. The whole file is validated first.

A samples file may be MapCoder's rows (``task_id``, ``source_codes``, ``is_solved``): each
row's final extracted program, ``source_codes[-1]``, is the task's one sample; a task asked
twice keeps its first row, as the task file does. The rows' own verdicts (``is_solved``) are
read with them (``rows_verdicts``) and handed to the shape's figures with the samples, so the
report can list where they disagree with ours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from codegen.evaluation.humaneval import PROGRAM, Problem, task_key
from codegen.json_types import JSONObject, JSONValue
from codegen.untrusted import BadInput, json_lines, loads_json

NAME = "APPS"
ENTRY_POINT = "main"  # a program has none; the name reports and the crew's request use


class TaskFileError(BadInput):
    """An APPS task file that cannot be run; the message names the file and line."""


def _first_object(text: str) -> JSONValue:
    for line in text.splitlines():
        if line.strip():
            try:
                return loads_json(line)
            except ValueError:
                return None
    return None


def is_task_file(text: str) -> bool:
    """An APPS task file: its first line an object whose ``test_list`` holds ``{input,
    output}`` cases (MBPP's ``test_list`` holds assertion strings)."""
    first = _first_object(text)
    if not isinstance(first, dict) or "source_codes" in first:
        return False
    cases = first.get("test_list")
    return isinstance(cases, list) and bool(cases) and isinstance(cases[0], dict)


def expected_text(output: JSONValue) -> str:
    """The expected stdout: each value of ``output`` as ``print`` writes it, a line each."""
    values = output if isinstance(output, list) else [output]
    return "\n".join(v if isinstance(v, str) else str(v) for v in values)


def _cases(record: JSONObject, field: str, where: str) -> list[JSONObject]:
    value = record.get(field)
    if not isinstance(value, list) or not value:
        raise TaskFileError(f"{where}: field {field!r} must be a non-empty list of cases")
    cases: list[JSONObject] = []
    for case in value:
        if not isinstance(case, dict) or not isinstance(case.get("input"), str):
            raise TaskFileError(f"{where}: {field}: each case needs a string 'input'")
        if "output" not in case:
            raise TaskFileError(f"{where}: {field}: a case has no 'output'")
        cases.append({"input": case["input"], "expected": expected_text(case["output"])})
    return cases


def _solution(record: JSONObject, where: str) -> str:
    found = record.get("solutions")
    if isinstance(found, str):
        try:
            found = loads_json(found) if found.strip() else []
        except ValueError:
            raise TaskFileError(f"{where}: field 'solutions' is not JSON") from None
    if found is None or found == []:
        return ""
    if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
        raise TaskFileError(f"{where}: field 'solutions' must be a list of programs")
    return found[0]


def request(problem: Problem) -> str:
    """The crew's request: the description and the visible examples, nothing hidden."""
    examples = "\n".join(problem.visible_tests)
    return (
        "Write a Python 3 program that reads standard input and writes standard output.\n\n"
        f"{problem.prompt.rstrip()}\n" + (f"\nExamples:\n{examples}\n" if examples else "")
    )


def _visible(cases: list[JSONObject]) -> tuple[str, ...]:
    return tuple(f"input:\n{c['input']}\noutput:\n{c['expected']}" for c in cases)


def parse_task(record: JSONValue, where: str) -> Problem:
    if not isinstance(record, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    raw_id = record.get("name", record.get("id"))
    if not isinstance(raw_id, str | int) or isinstance(raw_id, bool) or not str(raw_id).strip():
        raise TaskFileError(f"{where}: field 'name' (or 'id') is missing")
    description = record.get("description")
    if not isinstance(description, str) or not description.strip():
        raise TaskFileError(f"{where}: field 'description' is missing")
    hidden = _cases(record, "test_list", where)
    visible = _cases(record, "sample_io", where) if record.get("sample_io") else []
    return Problem(
        task_id=str(raw_id).strip(),
        prompt=description,
        entry_point=ENTRY_POINT,
        canonical_solution=_solution(record, where),
        test=json.dumps(hidden),
        visible_tests=_visible(visible),
        shape=PROGRAM,
    )


def parse_task_file(text: str, path: Path) -> dict[str, Problem]:
    problems: dict[str, Problem] = {}
    for where, record in json_lines(text, path, TaskFileError):
        problem = parse_task(record, where)
        if problem.key in problems:
            raise TaskFileError(f"{where}: duplicate task id {problem.task_id!r}")
        problems[problem.key] = problem
    if not problems:
        raise TaskFileError(f"{path}: empty: no tasks")
    return problems


def hidden_cases(problem: Problem) -> list[JSONObject]:
    """The hidden cases as the scorer runs them: ``[{input, expected}]``."""
    cases = json.loads(problem.test)
    assert isinstance(cases, list)
    return cases


def is_rows_file(text: str) -> bool:
    """MapCoder's rows: JSONL objects with ``source_codes``."""
    first = _first_object(text)
    return isinstance(first, dict) and "source_codes" in first


def _first_rows(
    text: str, path: Path, problems: Mapping[str, Problem]
) -> Iterator[tuple[str, JSONObject]]:
    """Each task's first row, by task key (a task asked twice: its first row, as the task
    file keeps it). Raises ValueError naming the line."""
    seen: set[str] = set()
    for where, row in json_lines(text, path, ValueError):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object")
        raw_id = next((row[f] for f in ("task_id", "id", "name") if f in row), None)
        key = task_key(str(raw_id).strip()) if raw_id is not None else ""
        if key not in problems:
            raise ValueError(f"{where}: unknown task {str(raw_id)[:80]!r} (not in the task file)")
        codes = row.get("source_codes")
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise ValueError(f"{where}: 'source_codes' must be a list of strings")
        if key not in seen:
            seen.add(key)
            yield key, row


def rows_modules(
    text: str, path: Path, problems: Mapping[str, Problem]
) -> tuple[dict[str, list[str]], str]:
    """MapCoder's rows as samples: each task's final program, by task key in task order, and
    the file's digest. Raises ValueError naming the line."""
    modules: dict[str, list[str]] = {}
    for key, row in _first_rows(text, path, problems):
        codes = row["source_codes"]
        assert isinstance(codes, list)  # checked by _first_rows
        modules[key] = [str(codes[-1]) if codes else ""]
    if not modules:
        raise ValueError(f"{path}: empty: no rows")
    order = {k: i for i, k in enumerate(problems)}
    ordered = dict(sorted(modules.items(), key=lambda kv: order[kv[0]]))
    return ordered, hashlib.sha256(text.encode()).hexdigest()


def rows_verdicts(text: str, path: Path, problems: Mapping[str, Problem]) -> dict[str, bool]:
    """The rows' own verdicts (``is_solved``) by task key, first row per task: reported beside
    ours (the shape's ``read_verdicts``). Raises ValueError naming the line."""
    rows = _first_rows(text, path, problems)
    return {k: r["is_solved"] for k, r in rows if isinstance(r.get("is_solved"), bool)}
