"""MapCoder's APPS rows imported (``codegen replay import --format mapcoder``), and the replies
derived for the roles their runs never had.

An APPS row (``final-results/*/APPS/``) carries its task's fields again: ``name``/``id``,
``description``, ``sample_io`` (the visible examples: ``input`` on stdin, ``output`` the
expected lines), ``starter_code``, and the hidden ``test_list``, which is never read here. The
last response, as the model sent it, becomes the programmer's reply (file j's: candidate j's);
with ``--tasks FILE`` (an APPS task file) each task's public half comes from that file, else from
the row. Derived from the public half alone (marked ``source: derived``): the analyzer's spec
with the problem's statement as its purpose and a ``program`` (reads stdin, writes stdout, the
description's input and output sections,
the visible examples as worked runs, stdout compared with trailing whitespace ignored), a test
module with one ``program.check(stdin=..., stdout=...)`` per visible example, a reviewer
``APPROVED`` and a README from the description.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from codegen.evaluation.apps import expected_text
from codegen.json_types import JSONObject, JSONValue
from codegen.replay.derived import DERIVED_REVIEW, entries_of
from codegen.replay.recording import Entry, RecordingError, read_text_capped
from codegen.untrusted import json_lines

# APPS's own section rulers: ``-----Input-----`` ... ``-----Output-----`` ... ``-----Examples``.
_SECTION = re.compile(r"^-{3,}\s*([A-Za-z ]+?)\s*-{3,}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class AppsPublic:
    """What an agent may see of an APPS task: its description, its visible examples as
    (stdin, expected stdout) and the stub a call-based task came with."""

    task_id: str
    description: str
    examples: tuple[tuple[str, str], ...]
    starter_code: str = ""


def is_apps_row(row: JSONValue) -> bool:
    """An APPS row: a description and ``{input, output}`` cases (MBPP's ``sample_io`` holds
    assertion strings; HumanEval's rows have a prompt)."""
    if not isinstance(row, dict) or not isinstance(row.get("description"), str):
        return False
    cases = row.get("sample_io") or row.get("test_list")
    return isinstance(cases, list) and bool(cases) and isinstance(cases[0], dict)


def row_task_id(row: JSONObject, where: str) -> str:
    """The task's id as ``codegen eval apps`` names it (``name``, else ``id``, else
    ``task_id``)."""
    raw = next((row[f] for f in ("name", "id", "task_id") if row.get(f) is not None), None)
    if not isinstance(raw, str | int) or isinstance(raw, bool) or not str(raw).strip():
        raise RecordingError(f"{where}: name, id or task_id must be a string or an integer")
    return str(raw).strip()


def public_task(row: JSONObject, where: str) -> AppsPublic:
    """The public half of a row or task-file record: ``test_list`` is never read."""
    description = row.get("description")
    if not isinstance(description, str) or not description.strip():
        raise RecordingError(f"{where}: description must be a non-empty string")
    examples = []
    for case in row.get("sample_io") or []:
        if not isinstance(case, dict) or not isinstance(case.get("input"), str):
            raise RecordingError(f"{where}: sample_io: each case needs a string 'input'")
        examples.append((case["input"], expected_text(case.get("output"))))
    stub = row.get("starter_code")
    return AppsPublic(
        row_task_id(row, where), description, tuple(examples), stub if isinstance(stub, str) else ""
    )


def _records(path: Path) -> list[tuple[str, JSONObject]]:
    text = read_text_capped(path, "file")
    found = []
    for where, row in json_lines(text, path, RecordingError):
        if not isinstance(row, dict):
            raise RecordingError(f"{where}: expected a JSON object")
        found.append((where, row))
    if not found:
        raise RecordingError(f"{path}: empty: nothing to import")
    return found


def task_file_publics(path: Path) -> dict[str, AppsPublic]:
    """Each task's public half from an APPS task file, by id."""
    return {t.task_id: t for t in (public_task(r, w) for w, r in _records(path))}


def import_apps(
    paths: tuple[Path, ...], tasks_file: Path | None, recorded_only: bool
) -> list[Entry]:
    """The programmer's replies of every file (file j's: candidate j's; a task asked twice
    keeps its first row), then the derived replies per task (from ``tasks_file`` when given,
    else from the first file's rows)."""
    given = task_file_publics(tasks_file) if tasks_file is not None else None
    publics: dict[str, AppsPublic] = {}
    entries: list[Entry] = []
    for candidate, path in enumerate(paths):
        seen: set[str] = set()
        for where, row in _records(path):
            if not is_apps_row(row):
                raise RecordingError(f"{where}: not an APPS row (description, sample_io)")
            task = public_task(row, where)
            if given is not None and task.task_id not in given:
                raise RecordingError(f"{where}: task {task.task_id!r} is not in {tasks_file}")
            responses = row.get("responses")
            if (
                not isinstance(responses, list)
                or not responses
                or not isinstance(responses[-1], str)
            ):
                raise RecordingError(f"{where}: responses must end with the model's reply text")
            if task.task_id in seen:
                continue
            seen.add(task.task_id)
            publics.setdefault(task.task_id, given[task.task_id] if given else task)
            entries.append(
                Entry(
                    "programmer", task.task_id, candidate=candidate, round=1, content=responses[-1]
                )
            )
    if not recorded_only:
        for task in publics.values():
            entries += apps_derived_entries(task, {"programmer"})
    return entries


# -- derived replies ---------------------------------------------------------------------------
def sections(description: str) -> dict[str, str]:
    """The description's ruled sections (``Input``, ``Output``, ...) by lower-cased title."""
    found: dict[str, str] = {}
    marks = list(_SECTION.finditer(description))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(description)
        found.setdefault(mark.group(1).strip().lower(), description[mark.end() : end].strip())
    return found


def _stub_signature(starter_code: str) -> str:
    found = re.search(r"def\s+\w+\s*\([^)]*\)", starter_code)
    return found.group(0).removeprefix("def").strip() if found else ""


def formats(task: AppsPublic) -> tuple[str, str]:
    """(input format, output format): the description's Input and Output sections; for a task
    that came with a function stub and has none, its arguments one a line as the examples
    write them and the return value as ``print`` writes it."""
    parts = sections(task.description)
    wanted, given = parts.get("input", ""), parts.get("output", "")
    stub = _stub_signature(task.starter_code)
    if stub:
        wanted = wanted or f"the arguments of {stub}, one a line, as the examples write them"
        given = given or f"the value {stub} returns, as print writes it"
    return wanted or "as the examples show", given or "as the examples show"


def purpose(task: AppsPublic) -> str:
    """The problem as the description states it: its text before the first ruled section
    (the input and output formats have their own fields)."""
    head = _SECTION.split(task.description, maxsplit=1)[0].strip()
    return head or f"Solve APPS task {task.task_id}."


def derived_apps_spec(task: AppsPublic) -> JSONObject:
    wanted, given = formats(task)
    return {
        "purpose": purpose(task),
        "functions": [],
        "program": {
            "name": "solution",
            "usage": "python3 solution.py < input.txt",
            "reads": ["stdin"],
            "writes": ["stdout"],
            "input_format": wanted,
            "output_format": given,
            "comparison": "trailing_whitespace",
            "examples": [{"stdin": i, "stdout": o} for i, o in task.examples],
        },
        "behaviours": [],
        "edge_cases": [],
        "examples": [],
        "constraints": ["a whole program: read standard input, write standard output"],
    }


def derived_apps_tests(task: AppsPublic) -> str:
    """One test per visible example, each a ``program.check``; a task with none gets a test
    that the program compiles (nothing else is known without reading hidden cases)."""
    lines: list[str] = []
    for i, (stdin, stdout) in enumerate(task.examples):
        lines += [
            f"def test_visible_example_{i}(program):",
            f"    program.check(stdin={stdin!r}, stdout={stdout!r})",
            "",
            "",
        ]
    if not lines:
        lines = [
            "import py_compile",
            "",
            "",
            "def test_the_program_compiles():",
            '    py_compile.compile("solution.py", doraise=True)',
        ]
    return "```python\n" + "\n".join(lines).rstrip() + "\n```"


def apps_derived_entries(task: AppsPublic, skip_roles: set[str]) -> list[Entry]:
    spec = derived_apps_spec(task)
    replies = {
        "analyzer": json.dumps(spec),
        "test_designer": derived_apps_tests(task),
        "reviewer": DERIVED_REVIEW,
        "documenter": f"# APPS {task.task_id}\n\n{spec['purpose']}\n",
    }
    return entries_of(task.task_id, replies, skip_roles)
