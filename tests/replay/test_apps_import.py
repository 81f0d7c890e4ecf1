"""MapCoder's APPS rows imported as recordings: the programmer's raw reply as recorded, the
analyzer's program spec and the test designer's ``program.check`` tests derived from the task's
description and visible ``sample_io`` only.

The fixture is written here in the shape of MapCoder's ``final-results/*/APPS/`` rows (``name``,
``id``, ``task_id`` as an integer, the task's fields again, ``test_list`` hidden); none of the
files in ../shared is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codegen.agents.replies import extract_tests
from codegen.agents.spec import Spec
from codegen.orchestration.cli import main
from codegen.replay.apps_derived import sections
from codegen.replay.importers import import_file
from codegen.replay.recording import DERIVED, RECORDED, Entry, read_recording
from tests.replay.test_mbpp_import import eval_by_replay, write_jsonl

SUM_DESCRIPTION = (
    "Add two numbers.\n\nThe judge gives you two numbers; print their sum.\n\n"
    "-----Input-----\n\nOne line with two integers $a$ and $b$.\n\n"
    "-----Output-----\n\nPrint $a + b$.\n\n-----Examples-----\nInput\n1 2\n\nOutput\n3\n"
)
CAP_DESCRIPTION = "Capitalise every word longer than two letters.\n\ndrop_cap('apple of x')"
# The hidden cases: distinctive values that must reach no derived reply.
HIDDEN = ("40000 2", "40002", "zebra crossing", "Zebra Crossing")
# Raw replies as chat models send them: prose and an untagged fence; a bare script.
SUM_REPLY = "Here is the program.\n\n```\na, b = map(int, input().split())\nprint(a + b)\n```\n"
CAP_REPLY = "def drop_cap(s):\n    return s.title()\n\nprint(drop_cap(input()))\n"


def apps_row(
    task: int, description: str, sample: Any, hidden: Any, reply: str, **extra: Any
) -> Any:
    return {
        "name": str(task),
        "description": description,
        "difficulty": "introductory",
        "id": task,
        "sample_io": sample,
        "test_list": hidden,
        "starter_code": "",
        **extra,
        "source_codes": [reply.strip("`")],
        "responses": ["an earlier reply", reply],
        "prompt_tokens": [90, 120],
        "completion_tokens": [40, 60],
        "no_of_try": 2,
        "is_solved": False,
        "language": "Python3",
        "task_id": task,
    }


@pytest.fixture
def rows() -> list[Any]:
    sum_row = apps_row(
        4001,
        SUM_DESCRIPTION,
        [{"input": "1 2\n", "output": ["3\n"]}],
        [{"input": "40000 2\n", "output": ["40002\n"]}],
        SUM_REPLY,
    )
    cap_row = apps_row(
        4002,
        CAP_DESCRIPTION,
        [{"input": "apple of x", "output": ["Apple of x"]}, {"input": "ab", "output": [True]}],
        [{"input": "zebra crossing", "output": ["Zebra Crossing"]}],
        CAP_REPLY,
        starter_code="\ndef drop_cap(str_):\n\t",
    )
    # The same task asked again, answered otherwise (MapCoder's files repeat some): the first
    # row is the task's, as the task file keeps it.
    again = {**sum_row, "responses": ["print(0)"]}
    return [sum_row, cap_row, again]


def of(entries: list[Entry], role: str, task: str) -> str:
    return next(e.content for e in entries if e.role == role and e.task == task)


def test_apps_rows_import_from_their_description_and_sample_io_only(
    rows: list[Any], tmp_path: Path
) -> None:
    source = write_jsonl(tmp_path / "ChatGPT-Direct-APPS-fixture.jsonl", rows)
    out = tmp_path / "replay.jsonl"
    assert main(["replay", "import", "--format", "mapcoder", str(source), str(out)]) == 0
    entries = read_recording(out).entries
    code = {e.task: e for e in entries if e.role == "programmer"}
    # The final raw reply, as sent (extraction still to do), once per task.
    assert {t: e.content for t, e in code.items()} == {"4001": SUM_REPLY, "4002": CAP_REPLY}
    assert all(e.source == RECORDED and (e.candidate, e.round) == (0, 1) for e in code.values())
    others = [e for e in entries if e.role != "programmer"]
    assert sorted((e.role, e.task) for e in others) == sorted(
        (role, task)
        for role in ("analyzer", "test_designer", "reviewer", "documenter")
        for task in ("4001", "4002")
    )
    assert all(e.source == DERIVED for e in others)
    for e in others:
        assert not [h for h in HIDDEN if h in e.content], (e.role, e.task)

    spec = Spec.model_validate_json(of(others, "analyzer", "4001"))
    assert spec.functions == [] and spec.classes == []
    program = spec.program
    assert program is not None
    assert (program.reads, program.writes) == (["stdin"], ["stdout"])
    assert program.comparison == "trailing_whitespace"
    assert program.input_format == "One line with two integers $a$ and $b$."
    assert program.output_format == "Print $a + b$."
    assert [(x.stdin, x.stdout, x.exit_code) for x in program.examples] == [("1 2\n", "3\n", 0)]
    assert spec.purpose == "Add two numbers.\n\nThe judge gives you two numbers; print their sum."
    tests = extract_tests(of(others, "test_designer", "4001")).code
    assert "def test_visible_example_0(program):" in tests
    assert "program.check(stdin='1 2\\n', stdout='3\\n')" in tests

    # A call-based task: no Input section, so the formats come from its stub; each expected
    # value as print writes it (True -> "True").
    stub = Spec.model_validate_json(of(others, "analyzer", "4002")).program
    assert stub is not None
    assert stub.input_format.startswith("the arguments of drop_cap(str_), one a line")
    assert [(x.stdin, x.stdout) for x in stub.examples] == [
        ("apple of x", "Apple of x"),
        ("ab", "True"),
    ]
    tests = extract_tests(of(others, "test_designer", "4002")).code
    assert tests.count("program.check(") == 2 and "stdout='True'" in tests


def test_apps_import_takes_the_public_half_from_a_task_file(
    rows: list[Any], tmp_path: Path
) -> None:
    source = write_jsonl(tmp_path / "run.jsonl", rows)
    fields = ("name", "id", "description", "difficulty", "sample_io", "test_list", "starter_code")
    task_lines = [{k: r[k] for k in fields} for r in rows[:2]]
    task_lines[0]["sample_io"] = [{"input": "5 6\n", "output": [11]}]
    tasks = write_jsonl(tmp_path / "apps.jsonl", task_lines)
    entries = import_file("mapcoder", source, tasks_file=tasks)
    spec = Spec.model_validate_json(of(entries, "analyzer", "4001"))
    assert spec.program is not None
    assert [(x.stdin, x.stdout) for x in spec.program.examples] == [("5 6\n", "11")]
    for e in entries:  # the task file holds the hidden cases: none reaches a derived reply
        assert e.role == "programmer" or not [h for h in HIDDEN if h in e.content]

    write_jsonl(tasks, task_lines[:1])
    out = tmp_path / "out.jsonl"
    args = ["replay", "import", "--format", "mapcoder", str(source), str(out), "--tasks"]
    assert main([*args, str(tasks)]) == 2
    assert not out.exists()


def test_several_apps_runs_one_candidate_each_and_a_task_without_examples(
    rows: list[Any], tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "direct.jsonl", rows[:2])
    other = [{**r, "responses": [f"```python\n# cot\n{r['responses'][-1]}```"]} for r in rows[:2]]
    # No visible example at all (twelve of MapCoder's tasks): nothing to check but that it
    # compiles; the hidden cases are not borrowed.
    other[0]["sample_io"] = []
    second = write_jsonl(tmp_path / "cot.jsonl", other)
    entries = import_file("mapcoder", first, more=(second,))
    code = {(e.task, e.candidate): e.content for e in entries if e.role == "programmer"}
    assert code[("4001", 1)] == other[0]["responses"][-1] and code[("4001", 0)] == SUM_REPLY
    assert sorted(e.task for e in entries if e.role == "analyzer") == ["4001", "4002"]
    bare = import_file("mapcoder", second)
    tests = extract_tests(of(bare, "test_designer", "4001")).code
    assert "program.check" not in tests and "py_compile.compile" in tests
    spec = Spec.model_validate_json(of(bare, "analyzer", "4001"))
    assert spec.program is not None and spec.program.examples == []


def test_a_broken_apps_row_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = {"name": "7", "description": "x", "sample_io": [{"input": 3, "output": []}]}
    source = write_jsonl(tmp_path / "in.jsonl", [row])
    out = tmp_path / "out.jsonl"
    assert main(["replay", "import", "--format", "mapcoder", str(source), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "in.jsonl:1: sample_io: each case needs a string 'input'" in err[0]
    assert not out.exists()


def test_sections_are_read_between_apps_rulers() -> None:
    assert sections(SUM_DESCRIPTION) == {
        "input": "One line with two integers $a$ and $b$.",
        "output": "Print $a + b$.",
        "examples": "Input\n1 2\n\nOutput\n3",
    }
    assert sections("no rulers here") == {}


@pytest.mark.docker
def test_crew_replayed_on_apps_rows_runs_the_program_and_is_scored_on_hidden_inputs(
    rows: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fields = ("name", "id", "description", "difficulty", "sample_io", "test_list", "starter_code")
    tasks = write_jsonl(tmp_path / "apps.jsonl", [{k: r[k] for k in fields} for r in rows[:2]])
    source = write_jsonl(tmp_path / "run.jsonl", rows)
    code, result, srv = eval_by_replay(source, tasks, "apps", monkeypatch, capsys)
    assert code == 0, result
    # The fenced reply and the bare script both run as programs and solve the hidden input.
    # The stub's second visible example ("ab" -> True) fails the derived program.check: the
    # crew asks for a round 2 the run never had and its program so far is scored.
    assert result["apps"]["solved_tasks"] == 2, result["apps"]["per_task"]
    assert result["crew_statuses"] == {"passed": 1, "unrecorded": 1}
    missing = [(r["role"], r["task"], r["round"]) for r in srv.served if r["status"] != 200]
    assert missing == [("programmer", "4002", 2)], srv.served
    shown = "\n".join(r.prompt_text for r in srv.requests)
    assert "1 2" in shown  # the visible example reaches the crew
    assert not [h for h in HIDDEN if h in shown]  # the hidden cases never do
