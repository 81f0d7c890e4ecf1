"""Task sets as data: task files in the human-eval and both MBPP shapes, scored in the real
sandbox through the CLI; bad task files refused in one line with nothing stored.

Fixtures are small tasks written here in the published shapes, never the shared datasets.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.evaluation.scoring import prepare_test
from codegen.orchestration.cli import main
from codegen.replay.scripted import ScriptedOpenAIServer

# The 500-task split's shape: asserts on the function by name, then check(<entry_point>).
SQUARE = {
    "task_id": "MBPP/1",
    "prompt": 'def square(n):\n    """\n    Write a function to square a number.\n    """\n',
    "entry_point": "square",
    "test": "\ndef check(candidate):\n    assert square(2) == 4\n    assert square(3) == 9\n"
    "    assert square(-1) == 1\ncheck(square)\n",
    "given_tests": ["assert square(2) == 4"],
    "canonical_solution": "def square(n):\n    return n * n\n",
}
# MBPP/56's trap: the solution defines its own check, which the test calls by name.
OWN_CHECK = {
    "task_id": "MBPP/2",
    "prompt": 'def rev(num):\n    """\n    Reverse the digits of a number.\n    """\n',
    "entry_point": "rev",
    "test": "\ndef check(candidate):\n    assert check(70) == False\n    assert check(73) == True\n"
    "check(rev)\n",
    "given_tests": ["assert check(70) == False"],
    "canonical_solution": "def rev(num):\n    return int(str(num)[::-1])\n"
    "def check(n):\n    return 2 * rev(n) == n + 1\n",
}
# A test that fails if its check runs twice: a harness that also calls check counts it twice.
ONCE = {
    "task_id": "MBPP/3",
    "prompt": 'def double(n):\n    """\n    Double a number.\n    """\n',
    "entry_point": "double",
    "test": "calls = []\n\ndef check(candidate):\n    assert not calls, 'check ran twice'\n"
    "    calls.append(1)\n    assert candidate(2) == 4\n\ncheck(double)\n",
    "given_tests": ["assert double(2) == 4"],
    "canonical_solution": "def double(n):\n    return 2 * n\n",
}
# MultiPL-E's typed shape (the 397-task set): name, sample_io, test_check(), no reference.
TYPED = {
    "name": "mbpp_4_cube",
    "prompt": 'def cube(l: int) -> int:\n    """\n\tThe volume of a cube of side l.\n\t"""\n',
    "entry_point": "cube",
    "test": "def check(candidate):\n    assert candidate(3) == 27\n    assert candidate(2) == 8\n\n"
    "def test_check():\n    check(cube)\n\ntest_check()\n",
    "sample_io": ["assert cube(3) == 27"],
}


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["eval", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_prepared_tests_call_check_once_and_never_shadow_the_solution() -> None:
    human_eval = "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1) == 1\n"
    assert prepare_test(human_eval).call_check  # human-eval only defines check
    for task in (SQUARE, OWN_CHECK, ONCE, TYPED):
        prepared = prepare_test(task["test"])
        assert not prepared.call_check, task  # these call it themselves
        assert "def check(" not in prepared.code
    # Inside the test's check body, `check` is still the solution's name.
    assert "assert check(70) == False" in prepare_test(OWN_CHECK["test"]).code
    plain = "assert square(2) == 4\n"
    assert prepare_test(plain).code == plain and not prepare_test(plain).call_check


@pytest.mark.docker
def test_canonical_task_file_gzip_and_mbpp_shapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    rows = [SQUARE, OWN_CHECK, ONCE]
    plain = write(tmp_path / "mbpp.jsonl", rows)
    code, result, err = run(capsys, "mbpp", "--tasks", str(plain), "--canonical")
    assert code == 0, err
    assert result["pass_at_k"] == {"pass@1": 1.0} and result["tasks_scored"] == 3
    assert result["canonical_failures"] == []
    # Same tasks gzipped through `eval tasks`: a file of its own, same verdicts.
    packed = tmp_path / "tasks.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    code, again, err = run(capsys, "tasks", str(packed), "--canonical", "--limit", "2")
    assert code == 0, err
    assert again["tasks_scored"] == 2 and again["pass_at_k"] == {"pass@1": 1.0}
    assert again["task_set"]["name"] == "tasks.jsonl.gz"
    # A wrong reference is named with why, not taken for a broken harness (exit 0).
    broken = dict(SQUARE, canonical_solution="def square(n):\n    return n + n\n")
    bad = write(tmp_path / "wrong.jsonl", [broken])
    code, failed, err = run(capsys, "tasks", str(bad), "--canonical")
    assert code == 0, err
    assert failed["canonical_failures"] == [
        {"task": "MBPP-1", "why": "wrong_answer: AssertionError: "}
    ]


@pytest.mark.docker
def test_samples_file_on_a_task_set_and_canonical_refused_without_references(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write(tmp_path / "typed.jsonl", [TYPED, dict(TYPED, name="mbpp_5_cube")])
    code, _, err = run(capsys, "mbpp", "--tasks", str(tasks), "--canonical")
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("codegen: error: --canonical: MBPP (typed.jsonl) has no reference solution")
    )
    samples = write(
        tmp_path / "samples.jsonl",
        [
            {"task_id": "mbpp_4_cube", "solution": "def cube(l):\n    return l ** 3\n"},
            {"task_id": "mbpp_5_cube", "completion": "    return l * 3\n"},
        ],
    )
    code, result, err = run(capsys, "mbpp", "--tasks", str(tasks), "--samples-file", str(samples))
    assert code == 0, err
    assert result["passed_samples"] == 1 and result["samples"] == 2
    unknown = write(tmp_path / "other.jsonl", [{"task_id": "HumanEval/0", "completion": "x"}])
    code, _, err = run(capsys, "tasks", str(tasks), "--samples-file", str(unknown))
    assert code == 2 and "other.jsonl:1: unknown task_id 'HumanEval/0'" in err


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([json.dumps(SQUARE), "{not json"], "bad.jsonl:2: not valid JSON"),
        ([{k: v for k, v in SQUARE.items() if k != "entry_point"}], "bad.jsonl:1: field "),
        ([SQUARE, "", SQUARE], "bad.jsonl:3: duplicate task id 'MBPP/1' (first on line 1)"),
        ([], "bad.jsonl: empty: no tasks"),
        ([dict(SQUARE, test="def check(:\n")], "bad.jsonl:1: the test of MBPP/1 does not parse"),
        ([[1, 2]], "bad.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_task_files_are_one_line_and_store_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
    rows: list[Any],
    message: str,
) -> None:
    path = write(tmp_path / "bad.jsonl", rows)
    code, _, err = run(capsys, "tasks", str(path), "--canonical")
    assert code == 2  # refused: exits.py
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert not (isolated_home / "eval").exists() or not any((isolated_home / "eval").iterdir())


def test_gzip_that_is_not_gzip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    fake = write(tmp_path / "tasks.jsonl.gz", [SQUARE])
    code, _, err = run(capsys, "tasks", str(fake))
    assert code == 2 and "tasks.jsonl.gz: named .gz but is not gzip-compressed" in err
    torn = tmp_path / "torn.jsonl.gz"
    torn.write_bytes(gzip.compress(fake.read_bytes())[:20])
    code, _, err = run(capsys, "tasks", str(torn))
    assert code == 2 and "torn.jsonl.gz: not a valid gzip file" in err
    assert not (isolated_home / "eval").exists()


def visible_only_handler(role: str, body: dict[str, Any]) -> Any:
    """A scripted model for the SQUARE task: it solves it from the request alone."""
    if role == "analyzer":
        return {
            "purpose": "square a number",
            "functions": [{"name": "square", "signature": "square(n)", "description": "n*n"}],
            "behaviours": ["squares"],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    if role == "test_designer":
        suite = "from solution import square\n\n\ndef test_two():\n    assert square(2) == 4\n"
        return f"```python\n{suite}```"
    if role == "programmer":
        return "```python\ndef square(n):\n    return n * n\n```"
    if role == "reviewer":
        return "APPROVED"
    return "# square\n"


@pytest.mark.docker
def test_the_crew_sees_the_visible_examples_and_never_the_hidden_test(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codegen.replay.recording import read_recording

    tasks = write(tmp_path / "mbpp.jsonl", [SQUARE])
    record = tmp_path / "rec.jsonl"
    with ScriptedOpenAIServer(handler=visible_only_handler) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-task-sets-test-0123456789")
        # --candidates writes CODEGEN_LLM__CANDIDATES for backfill runs: undone after the test.
        monkeypatch.setenv("CODEGEN_LLM__CANDIDATES", "1")
        code, result, err = run(
            capsys, "mbpp", "--tasks", str(tasks), "--candidates", "2", "--record", str(record)
        )
        posts = [r for r in server.requests if r.method == "POST"]
    assert code == 0, err
    # --candidates and --record work on a task set: two drafts, recorded under the set's id.
    assert len([r for r in posts if r.role == "programmer"]) == 2
    recorded = read_recording(record)
    assert {(e.role, e.task) for e in recorded.entries} >= {("programmer", "MBPP/1")}
    assert result["pass_at_k"] == {"pass@1": 1.0} and result["crew_statuses"] == {"passed": 1}
    # Every draft's code and the selection are stored with the sample (benchmarks score them).
    [stored] = (Path(result["results_dir"]) / "samples").glob("*.json")
    [sample] = json.loads(stored.read_text())["candidates"]
    assert len(sample["drafts"]) == 2 and all("def square" in d for d in sample["drafts"])
    assert sample["selection"]["chosen"] in (0, 1) and len(sample["selection"]["candidates"]) == 2
    analyzer = "\n".join(r.prompt_text for r in posts if r.role == "analyzer")
    assert "assert square(2) == 4" in analyzer  # the visible example
    for r in posts:
        assert "square(-1) == 1" not in r.prompt_text and "def check(" not in r.prompt_text
    assert {r.headers.get("x-codegen-task") for r in posts if r.role == "programmer"} == {"MBPP/1"}


@pytest.mark.docker
def test_eval_list_and_the_runs_asset_show_every_stored_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    from dagster import instance_for_test, materialize

    from codegen.assets.evaluation import evaluation_runs
    from codegen.assets.resources import SettingsResource

    capsys.readouterr()
    assert main(["eval", "list"]) == 0
    assert "no stored evaluation runs yet" in capsys.readouterr().out
    tasks = write(tmp_path / "mine.jsonl", [SQUARE, ONCE])
    code, _, err = run(capsys, "tasks", str(tasks), "--canonical")
    assert code == 0, err
    code, listed, err = run(capsys, "list")
    assert code == 0, err
    [row] = listed["runs"]
    assert row["task_set"] == "mine.jsonl" and row["mode"] == "canonical"
    assert row["pass@1"] == 1.0 and row["tasks"] == 2 and row["wall_s"] is not None
    assert Path(listed["plot"]).read_bytes().startswith(b"\x89PNG")
    with instance_for_test() as instance:
        result = materialize(
            [evaluation_runs], resources={"settings": SettingsResource()}, instance=instance
        )
        [event] = result.asset_materializations_for_node("evaluation_runs")
    meta = {k: v.value for k, v in event.metadata.items()}
    assert meta["runs"] == 1 and "| mine.jsonl | canonical |" in meta["table"]
