"""MapCoder's MBPP result rows imported as recordings, and the crew replayed on a task file
written from them.

The fixture is written here in the shape of MapCoder's ``final-results/*/MBPP/`` rows (MultiPL-E's
typed, reworded prompt; ``name`` and ``task_id``; the row's own ``test``, which leaves out the
visible ``sample_io`` example); none of the files in ../shared is used.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.agents.replies import extract_module, extract_tests
from codegen.agents.spec import Spec
from codegen.orchestration.cli import main
from codegen.replay.importers import import_file
from codegen.replay.recording import DERIVED, RECORDED, Entry, read_recording
from codegen.replay.server import ReplayServer

PRIME_PROMPT = (
    'def is_not_prime(n: int) -> bool:\n    """\n\tWrite a python function to identify '
    'non-prime numbers.\n\t"""\n'
)
LARGEST_PROMPT = (
    "from typing import List\n\ndef heap_queue_largest(nums: List[int], n: int) -> List[int]:\n"
    '    """\n\tWrite a function to find the n largest integers from a given list of numbers, '
    'returned in descending order.\n\t"""\n'
)
# The rows' own tests: the hidden half. Distinctive values that must reach no agent.
PRIME_TEST = (
    "def check(candidate):\n    assert candidate(91) == True\n    assert candidate(97) == False\n\n"
    "def test_check():\n    check(is_not_prime)\n\ntest_check()\n"
)
LARGEST_TEST = (
    "def check(candidate):\n    assert candidate([71, 13, 42, 8], 2) == [71, 42]\n\n"
    "def test_check():\n    check(heap_queue_largest)\n\ntest_check()\n"
)
PRIME_REPLY = (
    "Here is the function.\n\n```python\ndef is_not_prime(n: int) -> bool:\n"
    "    if n < 2:\n        return True\n    return any(n % d == 0 for d in range(2, n))\n```\n"
)
# Body only and untagged, as raw chat replies are: attached to the spec's typed signature;
# ``List`` and ``heapq`` are used but never imported.
LARGEST_REPLY = "```\nreturn heapq.nlargest(n, nums)\n```"
HIDDEN = ("candidate(91)", "candidate(97)", "[71, 13, 42, 8]", "def check(", "test_check")


def mbpp_row(name: str, prompt: str, entry: str, test: str, reply: str, **extra: Any) -> Any:
    return {
        "name": name,
        "language": "Python3",
        "prompt": prompt,
        "doctests": "transform",
        "prompt_terminology": "reworded",
        "stop_tokens": ["\ndef", "\n#", "\nif", "\nclass"],
        "entry_point": entry,
        "test": test,
        **extra,
        "source_codes": [reply],
        "responses": [reply],
        "prompt_tokens": [70],
        "completion_tokens": [60],
        "no_of_try": 1,
        "is_solved": True,
        "task_id": name,
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def eval_by_replay(
    source: Path,
    tasks: Path,
    benchmark: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, dict[str, Any], ReplayServer]:
    """``codegen replay import --format mapcoder SOURCE --tasks TASKS``, then ``codegen eval
    BENCHMARK --tasks TASKS --json`` against a replay server of that recording: the exit code,
    the printed JSON, and the server (what it served, the requests it saw)."""
    recording = source.with_name("replay.jsonl")
    args = ["replay", "import", "--format", "mapcoder", str(source), str(recording)]
    assert main([*args, "--tasks", str(tasks)]) == 0
    with ReplayServer(read_recording(recording), log=io.StringIO()) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-replay-test-not-a-real-key")
        capsys.readouterr()
        code = main(["eval", benchmark, "--tasks", str(tasks), "--json"])
        return code, json.loads(capsys.readouterr().out), srv


@pytest.fixture
def rows() -> list[Any]:
    return [
        mbpp_row(
            "mbpp_3_is_not_prime",
            PRIME_PROMPT,
            "is_not_prime",
            PRIME_TEST,
            PRIME_REPLY,
            sample_io=["assert is_not_prime(2) == False"],
        ),
        # No sample_io (as in MapCoder's GPT-4 CoT file): only the prompt is public.
        mbpp_row(
            "mbpp_4_heap_queue_largest",
            LARGEST_PROMPT,
            "heap_queue_largest",
            LARGEST_TEST,
            LARGEST_REPLY,
        ),
    ]


def derived(entries: list[Entry], role: str, task: str) -> str:
    return next(e.content for e in entries if e.role == role and e.task == task)


def test_mbpp_rows_import_from_their_public_half_only(rows: list[Any], tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "GPT4-MBPP-fixture.jsonl", rows)
    out = tmp_path / "replay.jsonl"
    assert main(["replay", "import", "--format", "mapcoder", str(source), str(out)]) == 0
    loaded = read_recording(out)
    code = {e.task: e for e in loaded.entries if e.role == "programmer"}
    assert {t: e.content for t, e in code.items()} == {r["name"]: r["responses"][-1] for r in rows}
    assert all(e.source == RECORDED and (e.candidate, e.round) == (0, 1) for e in code.values())
    others = [e for e in loaded.entries if e.role != "programmer"]
    assert {(e.role, e.task) for e in others} == {
        (role, r["name"])
        for role in ("analyzer", "test_designer", "reviewer", "documenter")
        for r in rows
    }
    assert all(e.source == DERIVED for e in others)
    for e in others:
        assert not [h for h in HIDDEN if h in e.content], (e.role, e.task)

    prime = Spec.model_validate_json(derived(others, "analyzer", "mbpp_3_is_not_prime"))
    assert [(f.name, f.signature) for f in prime.functions] == [
        ("is_not_prime", "def is_not_prime(n: int) -> bool")
    ]
    assert prime.purpose == "Write a python function to identify non-prime numbers."
    assert [(x.call, x.expected) for x in prime.examples] == [("is_not_prime(2)", "False")]
    tests = extract_tests(derived(others, "test_designer", "mbpp_3_is_not_prime")).code
    assert "from solution import is_not_prime" in tests
    assert "assert is_not_prime(2) == False" in tests

    largest = Spec.model_validate_json(derived(others, "analyzer", "mbpp_4_heap_queue_largest"))
    signature = largest.functions[0].signature
    assert signature == "def heap_queue_largest(nums: List[int], n: int) -> List[int]"
    assert largest.examples == []
    tests = extract_tests(derived(others, "test_designer", "mbpp_4_heap_queue_largest")).code
    assert "assert callable(heap_queue_largest)" in tests
    # The raw body-only reply becomes a module under the real signature, imports repaired.
    module = extract_module(LARGEST_REPLY, [("heap_queue_largest", signature)]).code
    assert module.startswith("import heapq\nfrom typing import List\n")
    assert "def heap_queue_largest(nums: List[int], n: int) -> List[int]:" in module


def test_mbpp_import_takes_its_tasks_from_a_task_file(rows: list[Any], tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "cot.jsonl", rows)
    task_lines = [
        {
            "task_id": r["name"],
            "prompt": r["prompt"],
            "entry_point": r["entry_point"],
            "test": r["test"],
            "sample_io": ["assert heap_queue_largest([5, 1, 9], 1) == [9]"]
            if "heap" in r["name"]
            else r["sample_io"],
        }
        for r in rows
    ]
    tasks = write_jsonl(tmp_path / "tasks.jsonl", task_lines)
    entries = import_file("mapcoder", source, tasks_file=tasks)
    spec = Spec.model_validate_json(derived(entries, "analyzer", "mbpp_4_heap_queue_largest"))
    assert [(x.call, x.expected) for x in spec.examples] == [
        ("heap_queue_largest([5, 1, 9], 1)", "[9]")
    ]
    assert "[5, 1, 9]" in derived(entries, "test_designer", "mbpp_4_heap_queue_largest")
    for e in entries:  # the task file holds the hidden tests: none reaches a derived reply
        assert e.role == "programmer" or not [h for h in HIDDEN if h in e.content]

    write_jsonl(tasks, task_lines[:1])
    out = tmp_path / "out.jsonl"
    args = ["replay", "import", "--format", "mapcoder", str(source), str(out), "--tasks"]
    assert main([*args, str(tasks)]) == 2
    assert not out.exists()


def test_mbpp_row_without_its_public_half_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"name": "mbpp_9_x", "responses": ["x"]}])
    out = tmp_path / "out.jsonl"
    assert main(["replay", "import", "--format", "mapcoder", str(source), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ":1: unknown task_id 'mbpp_9_x'" in err[0], err
    assert not out.exists()


@pytest.mark.docker
def test_crew_replayed_on_mbpp_rows_is_scored_against_the_rows_own_tests(
    rows: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = write_jsonl(tmp_path / "m.jsonl", rows)
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {k: r[k] for k in ("task_id", "prompt", "entry_point", "test", "sample_io") if k in r}
            for r in rows
        ],
    )
    code, result, srv = eval_by_replay(source, tasks, "mbpp", monkeypatch, capsys)
    assert code == 0, result
    assert result["solved_tasks"] == 2 and result["crew_statuses"] == {"passed": 2}
    assert all(r["status"] == 200 for r in srv.served), srv.served
    shown = "\n".join(r.prompt_text for r in srv.requests)
    assert "is_not_prime(2) == False" in shown  # the visible example reaches the crew
    assert not [h for h in HIDDEN if h in shown]  # the rows' own tests never do


def test_several_runs_import_as_one_recording_one_candidate_each(
    rows: list[Any], tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "run-a.jsonl", rows)
    other = [{**r, "responses": [f"```python\n# run b\n{r['responses'][-1]}\n```"]} for r in rows]
    second = write_jsonl(tmp_path / "run-b.jsonl", other)
    out = tmp_path / "replay.jsonl"
    command = ["replay", "import", "--format", "mapcoder", str(first), str(second), str(out)]
    assert main(command) == 0
    entries = read_recording(out).entries
    code = {(e.task, e.candidate): e.content for e in entries if e.role == "programmer"}
    assert code == {
        **{(r["name"], 0): r["responses"][-1] for r in rows},
        **{(r["name"], 1): r["responses"][-1] for r in other},
    }
    # The derived roles once per task, not once per run.
    analyzers = [e.task for e in entries if e.role == "analyzer"]
    assert sorted(analyzers) == sorted(r["name"] for r in rows)
    codet = ["replay", "import", "--format", "human-eval", str(first), str(second), str(out)]
    assert main(codet) == 2
