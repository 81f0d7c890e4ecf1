"""ClassEval (FudanSELab, MIT): class-level tasks, read from the published task file.

The task file is the authors' ``ClassEval_data.json``: one JSON list (gzip-compressed too) of
tasks, each with ``task_id``, ``class_name``, ``skeleton`` (the prompt: imports, the class with
its docstring and every method's signature and docstring, bodies left out),
``import_statement`` (the imports the skeleton starts with), ``test`` (a unittest module: one
``TestCase`` class per method, and usually one more for the whole class), ``test_classes``
(their names, in order), ``methods_info`` (per method its own ``test_class``) and
``solution_code`` (the reference class). A task becomes a :class:`Problem` whose public
``prompt`` is the skeleton, whose entry point is the class and whose ``classeval`` field
(:class:`ClassTask`) tells the scorer (``classeval_scoring``) how to run it. The whole file is
validated first; a bad one fails with one line naming the file and the task.

A reply becomes a candidate module by the authors' rules (``extract_code``), with the task's
``import_statement`` lines put in front (``candidate_module``). A replies file (their
``model_output`` shape, ``[{task_id, predict: [reply, ...]}]``) is a samples file of n samples
per task (``read_replies``; ``codegen eval classeval --samples-file``).

Test class names are taken stripped of surrounding blanks: the published file names one with
a leading space (ClassEval_97), which the authors' own pipeline then cannot find, failing that
class for every model and for the reference solution alike.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from codegen.agents.replies import RESPONSE_MARKERS
from codegen.evaluation.humaneval import ClassTask, Problem, task_key
from codegen.json_types import JSONObject, JSONValue
from codegen.untrusted import BadInput, loads_json

NAME = "ClassEval"
SHAPE = "classeval"  # its problems' task shape (``classeval_report.CLASSEVAL_SHAPE``)


class TaskFileError(BadInput):
    """A ClassEval task file that cannot be run (``tasks.read_task_file`` re-raises it as its
    own TaskFileError); the message names the file and the task."""


# The authors' extraction (classeval_evaluation/test_pipeline.py at eaeac44d, the commit the
# task file comes from: ``AutoTest.extract_code`` and ``add_static_statement``), kept as
# written since the published figures come from it, quirks included. A reply that echoes
# its prompt is cut at the first of the response markers (``agents.replies``, whose reader
# cuts at the same ones) that it holds, in their order (the text up to the next one is kept).
# Then the first pattern that matches anywhere wins and its first match is the code (a
# ```python fence left open yields "": the fourth pattern matches the empty string).
_PATTERNS = (
    r"```python(.*?)```",
    r"```ruby(.*?)```",
    r"```scss(.*?)```",
    r"```python(.*?)",
    r"```(.*?)```",
    r"\[PYTHON\](.*?)\[/PYTHON\]",
)


def _leading(line: str) -> int:
    return len(line) - len(line.lstrip())


def _unfenced(text: str) -> str:
    """No fence: the text without the lines before its first ``class`` line except
    ``import``/``from`` lines there (a dropped line's text is dropped wherever it recurs, as
    in their code), the class moved to column 0 with its body when it was indented."""
    lines = text.split("\n")
    removed: set[str] = set()
    for line in lines:
        if line.strip().startswith("class"):
            break
        if not line.strip().startswith("import") and not line.strip().startswith("from"):
            removed.add(line)
    text = "\n".join(line for line in lines if line not in removed)
    first = next((ln for ln in text.split("\n") if ln.strip().startswith("class")), None)
    shift = _leading(first) if first is not None else 0
    if not shift:
        return text
    return "\n".join(" " * (_leading(ln) - shift) + ln.lstrip() for ln in text.split("\n"))


def _static_methods(code: str) -> str:
    """Their ``add_static_statement``: every ``@staticmethod`` line dropped, then one put
    before each method (a ``def`` indented 4) whose line names neither self nor cls."""
    kept = [line for line in code.split("\n") if "@staticmethod" not in line]
    out: list[str] = []
    for line in kept:
        bare = line.strip().startswith("def ") and "self" not in line and "cls" not in line
        if bare and _leading(line) == 4:
            out.append("    @staticmethod")
        out.append(line)
    return "\n".join(out)


def extract_code(reply: str) -> str:
    """The code of one model reply, as ClassEval's authors read it: the part after an echoed
    prompt's response marker, its first fenced block, else the text from its first ``class``
    line (with the imports before it), and ``@staticmethod`` where a method lacks self."""
    text = reply.rstrip()
    for marker in RESPONSE_MARKERS:
        if marker in text:
            text = text.split(marker)[1]
            break
    for pattern in _PATTERNS:
        found = re.findall(pattern, text, re.S)
        if found:
            return _static_methods(str(found[0]))
    return _static_methods(_unfenced(text))


def candidate_module(problem: Problem, reply: str) -> str:
    """The module scored for ``reply``: the task's import lines, then the extracted code."""
    imports = problem.classeval.imports if problem.classeval else ()
    return "\n".join(imports) + "\n" + extract_code(reply)


def is_task_list(text: str) -> bool:
    """The text is one JSON list of task objects (ClassEval's file), not JSONL (whose line may
    itself be a list: an error there); ``read_task_file`` sends such a file here."""
    head = text.lstrip()
    if not head.startswith("["):
        return False
    first_line, _, rest = head.partition("\n")
    try:
        first = loads_json(first_line)
    except ValueError:
        # A list that goes on past its first line is ClassEval's; one line that does not parse
        # is a JSONL line's error, reported with its line number.
        return bool(rest.strip())
    return isinstance(first, list) and bool(first) and isinstance(first[0], dict)


def _field(record: JSONObject, name: str, where: str, kind: type) -> JSONValue:
    value = record.get(name)
    if not isinstance(value, kind) or (kind is str and not str(value).strip()):
        what = "missing" if value is None else f"not a {'non-empty ' if kind is str else ''}"
        what += "" if value is None else kind.__name__
        raise TaskFileError(f"{where}: field {name!r} is {what}")
    return value


def _strings(record: JSONObject, name: str, where: str) -> list[str]:
    value = _field(record, name, where, list)
    assert isinstance(value, list)
    if not all(isinstance(v, str) for v in value):
        raise TaskFileError(f"{where}: field {name!r} must be a list of strings")
    return [str(v) for v in value]


def _test_classes(record: JSONObject, test: str, where: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise TaskFileError(f"{where}: its test does not parse ({exc})") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    names = tuple(n.strip() for n in _strings(record, "test_classes", where))
    if not names:
        raise TaskFileError(f"{where}: field 'test_classes' is empty")
    for name in names:
        if name not in defined:
            raise TaskFileError(f"{where}: test class {name[:80]!r} is not defined in its test")
    return names


def _method_tests(
    record: JSONObject, names: tuple[str, ...], where: str
) -> tuple[tuple[str, str], ...]:
    methods = record.get("methods_info", [])
    if not isinstance(methods, list):
        raise TaskFileError(f"{where}: field 'methods_info' must be a list")
    pairs: list[tuple[str, str]] = []
    for method in methods:
        if not isinstance(method, dict):
            raise TaskFileError(f"{where}: a methods_info entry is not an object")
        name = _field(method, "method_name", where, str)
        test_class = str(_field(method, "test_class", where, str)).strip()
        if test_class not in names:
            raise TaskFileError(
                f"{where}: method {name!s:.60}'s test class {test_class[:80]!r} is not in "
                "test_classes"
            )
        pairs.append((str(name), test_class))
    return tuple(pairs)


def parse_task(record: JSONValue, where: str) -> Problem:
    """One task of the list as a Problem; raises TaskFileError."""
    if not isinstance(record, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    task_id = str(_field(record, "task_id", where, str)).strip()
    where = f"{where} ({task_id[:60]})"
    class_name = str(_field(record, "class_name", where, str)).strip()
    if not class_name.isidentifier():
        raise TaskFileError(f"{where}: class_name {class_name[:60]!r} is not a Python name")
    test = str(_field(record, "test", where, str))
    names = _test_classes(record, test, where)
    imports = tuple(_strings(record, "import_statement", where))
    solution = record.get("solution_code", "")
    if not isinstance(solution, str):
        raise TaskFileError(f"{where}: field 'solution_code' is not a string")
    return Problem(
        task_id=task_id,
        prompt=str(_field(record, "skeleton", where, str)),
        entry_point=class_name,
        canonical_solution="\n".join(imports) + "\n" + solution if solution.strip() else "",
        test=test,
        classeval=ClassTask(imports, names, _method_tests(record, names, where)),
        shape=SHAPE,
    )


def parse_task_list(text: str, path: Path) -> dict[str, Problem]:
    """A ClassEval task file's decoded text (a JSON list) as problems by key, in file order;
    raises TaskFileError."""
    try:
        records = loads_json(text)
    except ValueError as exc:
        raise TaskFileError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise TaskFileError(f"{path}: expected a JSON list of ClassEval tasks")
    problems: dict[str, Problem] = {}
    for index, record in enumerate(records):
        problem = parse_task(record, f"{path}: task {index}")
        key = task_key(problem.task_id)
        if key in problems:
            raise TaskFileError(f"{path}: task {index}: duplicate task id {problem.task_id!r}")
        problems[key] = problem
    if not problems:
        raise TaskFileError(f"{path}: empty: no tasks")
    return problems


def replies_modules(
    text: str, path: Path, problems: Mapping[str, Problem]
) -> tuple[dict[str, list[str]], str]:
    """A replies file's text (``[{task_id, predict: [reply, ...]}]``) as candidate modules by
    task key, in task order, and the digest of the text; raises ValueError (one line)."""
    try:
        records = loads_json(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of {{task_id, predict}} objects")
    modules: dict[str, list[str]] = {}
    for index, record in enumerate(records):
        where = f"{path}: entry {index}"
        if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
            raise ValueError(f"{where}: expected an object with a task_id")
        problem = problems.get(task_key(str(record["task_id"]).strip()))
        if problem is None:
            raise ValueError(f"{where}: unknown task_id {str(record['task_id'])[:80]!r}")
        predict = record.get("predict")
        if not isinstance(predict, list) or not all(isinstance(p, str) for p in predict):
            raise ValueError(f"{where}: 'predict' must be a list of strings")
        modules.setdefault(problem.key, []).extend(candidate_module(problem, p) for p in predict)
    modules = {k: v for k, v in modules.items() if v}
    if not modules:
        raise ValueError(f"{path}: empty: no replies")
    order = {k: i for i, k in enumerate(problems)}
    ordered = dict(sorted(modules.items(), key=lambda kv: order[kv[0]]))
    return ordered, hashlib.sha256(text.encode()).hexdigest()
