"""``codegen eval apps``: APPS's task file and MapCoder's rows read by the registered shape, and
the command as users run it (the samples file's own ``is_solved`` beside ours, ``--canonical``
only where the file carries solutions). Fixtures in APPS's row shape, written here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, instance_for_test

from codegen.evaluation.apps import (
    expected_text,
    is_task_file,
    parse_task_file,
    program_summary,
    rows_modules,
)
from codegen.evaluation.humaneval import PROGRAM
from codegen.evaluation.samples_file import read_samples
from codegen.evaluation.scoring import Category, SampleScore
from codegen.evaluation.shapes import file_shape
from codegen.evaluation.tasks import read_task_file
from codegen.orchestration.cli import main


def row(task: int, solution: str | None = None) -> dict[str, object]:
    """A task: read n, print n * task (one hidden case a stub-style list input)."""
    found: dict[str, object] = {
        "id": task,
        "name": str(task),
        "difficulty": "introductory",
        "description": f"Read an integer n; print n times {task}.",
        "sample_io": [{"input": "2\n", "output": [str(2 * task)]}],
        "test_list": [{"input": "3\n", "output": [3 * task]}, {"input": "5", "output": [5 * task]}],
        "starter_code": "",
    }
    if solution is not None:
        found["solutions"] = json.dumps([solution])
    return found


RIGHT = "n = int(input())\nprint(n * {task})\n"


def write_tasks(path: Path, solutions: bool = False) -> Path:
    rows = [row(t, RIGHT.format(task=t) if solutions else None) for t in (11, 12, 13)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_task_file_is_claimed_by_apps_and_read_whole(tmp_path: Path) -> None:
    tasks = read_task_file(write_tasks(tmp_path / "apps.jsonl"))
    assert [p.shape for p in tasks.problems.values()] == [PROGRAM] * 3
    problem = tasks.problems["11"]
    assert json.loads(problem.test) == [
        {"input": "3\n", "expected": "33"},
        {"input": "5", "expected": "55"},
    ]
    assert "3\n" not in "".join(problem.visible_tests)  # hidden inputs stay hidden
    assert not tasks.has_canonical
    mbpp_like = json.dumps({"task_id": "1", "test_list": ["assert f(1) == 2"]})
    assert not is_task_file(mbpp_like) and file_shape(mbpp_like) is None
    assert expected_text([True, None, [1, 2], "a "]) == "True\nNone\n[1, 2]\na "
    with pytest.raises(ValueError, match=r"x.jsonl:1: field 'test_list' must be"):
        parse_task_file(json.dumps({**row(1), "test_list": []}), Path("x.jsonl"))


def test_mapcoder_rows_give_each_task_its_final_program(tmp_path: Path) -> None:
    problems = read_task_file(write_tasks(tmp_path / "apps.jsonl")).problems
    rows = [
        {"task_id": 12, "source_codes": ["draft", "final 12"], "is_solved": False},
        {"task_id": 11, "source_codes": ["final 11"], "is_solved": True},
        {"task_id": 11, "source_codes": ["asked again"], "is_solved": False},
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    modules, digest = rows_modules(text, Path("rows.jsonl"), problems)
    assert modules == {"11": ["final 11"], "12": ["final 12"]} and len(digest) == 64
    with pytest.raises(ValueError, match=r"rows.jsonl:1: unknown task '99'"):
        rows_modules(json.dumps({"task_id": 99, "source_codes": []}), Path("rows.jsonl"), problems)


def test_the_files_own_verdicts_travel_with_the_samples_read_from_it(tmp_path: Path) -> None:
    """``is_solved`` is read with the rows and handed to the figures with them, not left
    behind by whichever rows file this process read last: a crew run reports none."""
    tasks = read_task_file(write_tasks(tmp_path / "apps.jsonl"))
    rows = [
        {"task_id": 11, "source_codes": ["a"], "is_solved": False},
        {"task_id": 12, "source_codes": ["b"], "is_solved": True},
        {"task_id": 12, "source_codes": ["c"], "is_solved": False},  # asked again: ignored
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = read_samples(path, tasks)
    assert samples.recorded == {"11": False, "12": True}
    passed = SampleScore(True, Category.PASSED, "2 inputs passed")
    scored = [(tasks.problems["11"], [passed]), (tasks.problems["12"], [passed])]
    figures = program_summary(scored, samples.recorded)
    assert figures["file_is_solved"] == 1
    assert [(d["task"], d["file_is_solved"]) for d in figures["disagreements"]] == [("11", False)]
    assert "file_is_solved" not in program_summary(scored)  # the crew's run, read after it


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["eval", "apps", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_canonical_is_refused_in_one_line_without_solutions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--tasks", str(write_tasks(tmp_path / "a.jsonl")), "--canonical")
    assert code == 2
    assert "--canonical:" in err and "no reference solution" in err and "Traceback" not in err
    other = tmp_path / "he.jsonl"
    other.write_text(
        json.dumps(
            {
                "task_id": "t",
                "prompt": "def f(): pass\n",
                "entry_point": "f",
                "test": "assert f() is None\n",
            }
        )
        + "\n"
    )
    code, _, err = run(capsys, "--tasks", str(other), "--canonical")
    assert code == 2 and "is not an APPS task file" in err


@pytest.mark.docker
def test_samples_file_and_canonical_through_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "apps.jsonl", solutions=True)
    code, out, err = run(capsys, "--tasks", str(tasks), "--canonical", "--json")
    assert code == 0, err
    assert json.loads(out)["apps"]["solved_tasks"] == 3

    rows = [  # 11 right but its file says not solved; 12 wrong but said solved; 13 crashes
        {"task_id": 11, "source_codes": ["x", RIGHT.format(task=11)], "is_solved": False},
        {"task_id": 12, "source_codes": ["print(36)\n"], "is_solved": True},
        {
            "task_id": 13,
            "source_codes": ["n = int(input())\nprint(n * 13)\nraise SystemExit(1)\n"],
            "is_solved": False,
        },
    ]
    samples = tmp_path / "rows.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(capsys, "--tasks", str(tasks), "--samples-file", str(samples), "--json")
    assert code == 0, err
    figures = json.loads(out)["apps"]
    assert figures["solved_tasks"] == 1 and figures["file_is_solved"] == 1
    assert figures["categories"] == {
        "passed": 1,
        "wrong_answer": 1,
        "runtime_error": 1,
        "timeout": 0,
    }
    assert [(d["task"], d["ours"], d["file_is_solved"]) for d in figures["disagreements"]] == [
        ("11", "passed", False),
        ("12", "wrong_answer", True),
    ]
    assert "input 2 of 2: expected '60', got '36'" in figures["per_task"]["12"]["message"]
    assert figures["time_limit_s"] == 4.0

    code, out, err = run(capsys, "--tasks", str(tasks), "--samples-file", str(samples))
    assert code == 0, err
    assert "APPS: solved 1/3 tasks (passed 1, wrong_answer 1, runtime_error 1, timeout 0)" in out
    assert "the file's own is_solved: 1; 2 tasks disagree" in out


@pytest.fixture
def instance(monkeypatch: pytest.MonkeyPatch) -> Iterator[DagsterInstance]:
    """A fresh test instance, which `codegen eval --backfill` submits to."""
    pools = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}
    with instance_for_test(overrides=pools) as found:
        monkeypatch.setattr(
            "codegen.orchestration.cli.evaluate.configured_instance", lambda settings: found
        )
        yield found


@pytest.mark.docker
def test_rows_as_a_backfill_report_as_a_direct_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], instance: DagsterInstance
) -> None:
    """The registered shape gives the backfill for free: its runs read the staged task file
    and samples, the command reports the same figures and disagreements."""
    tasks = write_tasks(tmp_path / "apps.jsonl")
    rows = [
        {"task_id": 11, "source_codes": [RIGHT.format(task=11)], "is_solved": False},
        {"task_id": 12, "source_codes": ["print(1)\n"], "is_solved": False},
    ]
    samples = tmp_path / "rows.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ("--tasks", str(tasks), "--samples-file", str(samples), "--backfill", "--json")
    code, out, err = run(capsys, *args)
    assert code == 0, err
    result = json.loads(out[out.find("{") :])  # the driven daemon logs to the captured stdout
    assert result["backfill_status"] == "COMPLETED_SUCCESS"
    figures = result["apps"]
    assert (figures["solved_tasks"], figures["file_is_solved"]) == (1, 0)
    assert [d["task"] for d in figures["disagreements"]] == ["11"]
