"""ClassEval reply files turned into recordings (``codegen replay import --format classeval``).

A reply file (FudanSELab/ClassEval ``output/model_output_*``, cut to what the project uses) is
one JSON list ``[{"task_id": "ClassEval_0", "predict": [reply, ...]}, ...]``: the raw chat
replies as the model sent them (fenced markdown with prose, or bare code); a ``greedy`` file
has one reply a task, a ``t0.2`` file five samples. The task set (``ClassEval_data.json``,
optionally gzip-compressed, a JSON list) is given with ``--tasks`` and read as ``codegen eval
classeval`` reads it; only each task's public half is kept (``task_id``, ``class_name``,
``skeleton``, ``import_statement``), never its ``test`` or ``solution_code``.

Reply i of a task becomes the programmer's round-1 reply for candidate i; with several files
(runs on the same tasks, e.g. one per model) the candidates continue in file order, so five
greedy files are candidates 0..4 and one five-sample file is candidates 0..4 as well. The
crew's request for a task is ``classeval_request``: the whole class skeleton, as the models
got it in the holistic (``class_H``) setting. The other roles' replies are derived from the
skeleton (``replay.classeval_derived``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codegen.evaluation.tasks import TaskFileError, read_task_file
from codegen.replay.recording import MAX_FILE_BYTES, Entry, RecordingError
from codegen.untrusted import TooLarge, gunzip_capped, loads_json, read_capped

# ClassEval's own instruction for the holistic setting, followed by the skeleton.
INSTRUCTION = "Please complete the class {class_name} in the following code."


@dataclass(frozen=True)
class ClassEvalTask:
    """The public half of a ClassEval task: what a model was given, nothing it was scored by."""

    task_id: str
    class_name: str
    skeleton: str  # the module's imports, the class, its methods' signatures and docstrings
    import_statement: tuple[str, ...]  # the import lines the skeleton starts with


def classeval_request(task: ClassEvalTask) -> str:
    """The request the crew gets for ``task``: the instruction and the whole skeleton."""
    instruction = INSTRUCTION.format(class_name=task.class_name)
    return f"{instruction}\n\n```python\n{task.skeleton.rstrip()}\n```\n"


def _json_list(path: Path, what: str) -> list[object]:
    """A JSON list from ``path`` (gzip-compressed or not), capped; RecordingError otherwise."""
    try:
        raw = read_capped(path, MAX_FILE_BYTES, what)
        if raw[:2] == b"\x1f\x8b":
            raw = gunzip_capped(raw, MAX_FILE_BYTES)
    except TooLarge as exc:
        raise RecordingError(f"{path}: {exc}") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (EOFError, zlib.error) as exc:
        raise RecordingError(f"{path}: not a valid gzip file ({exc})") from None
    try:
        data = loads_json(raw)
    except ValueError as exc:
        raise RecordingError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise RecordingError(f"{path}: expected a non-empty JSON list of {what} objects")
    return list(data)


def _text_field(row: dict[str, object], name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise RecordingError(f"{where}: {name} must be a non-empty string")
    return value


def read_classeval_tasks(path: Path) -> dict[str, ClassEvalTask]:
    """The public half of every task in a ClassEval task file (read and validated whole by
    ``codegen.evaluation.tasks.read_task_file``), by task id."""
    try:
        found = read_task_file(path)
    except TaskFileError as exc:
        raise RecordingError(str(exc)) from None
    tasks: dict[str, ClassEvalTask] = {}
    for problem in found.problems.values():
        if problem.classeval is None:
            raise RecordingError(f"{path}: not a ClassEval task file ({problem.task_id[:80]})")
        tasks[problem.task_id] = ClassEvalTask(
            task_id=problem.task_id,
            class_name=problem.entry_point,
            skeleton=problem.prompt,
            import_statement=tuple(i for i in problem.classeval.imports if i.strip()),
        )
    return tasks


def classeval_rows(path: Path) -> Iterator[tuple[str, list[str]]]:
    """(task id, the replies as sent) per entry of a ClassEval reply file."""
    for number, row in enumerate(_json_list(path, "reply"), start=1):
        where = f"{path}: entry {number}"
        if not isinstance(row, dict):
            raise RecordingError(f"{where}: expected a JSON object")
        task_id = _text_field(row, "task_id", where)
        predict = row.get("predict")
        if not isinstance(predict, list) or not all(isinstance(p, str) for p in predict):
            raise RecordingError(f"{where}: predict must be a list of reply strings")
        if not predict:
            raise RecordingError(f"{where}: predict is empty: no reply for {task_id[:80]!r}")
        yield task_id, list(predict)


def import_classeval(
    paths: tuple[Path, ...], tasks: dict[str, ClassEvalTask]
) -> tuple[list[Entry], dict[str, ClassEvalTask]]:
    """The programmer's replies of every file and the tasks they answer (for the derived
    replies). A file's candidates follow the previous files' (as many as its longest
    ``predict``), so file j of several greedy files is candidate j on every task, even one
    that an earlier file left out."""
    entries: list[Entry] = []
    used: dict[str, ClassEvalTask] = {}
    base = 0  # the first candidate number of this file
    for path in paths:
        rows: dict[str, list[str]] = {}
        for task_id, replies in classeval_rows(path):
            if task_id not in tasks:
                raise RecordingError(f"{path}: task {task_id[:80]!r} is not in the task file")
            if task_id in rows:
                raise RecordingError(f"{path}: task {task_id[:80]!r} appears twice")
            rows[task_id] = replies
            used[task_id] = tasks[task_id]
        for task_id, replies in rows.items():
            entries += [
                Entry(role="programmer", task=task_id, candidate=base + i, round=1, content=r)
                for i, r in enumerate(replies)
            ]
        base += max(len(replies) for replies in rows.values())
    return entries, used
