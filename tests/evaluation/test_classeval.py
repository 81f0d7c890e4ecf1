"""ClassEval: the task file, the authors' reply extraction, and per-test-class scoring in the
sandbox, on three small class tasks written for these tests in ClassEval's shape
(data/classeval_tasks.json): Counter (no imports), Circle (uses the task's ``import math``
without importing it; one test class name given with a leading space, as ClassEval_97's) and
Inventory (a test that mutates what a method returned: the dict it holds, in one process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.evaluation.classeval.figures import class_summary
from codegen.evaluation.classeval.scoring import score_classes
from codegen.evaluation.classeval.tasks import candidate_module, extract_code
from codegen.evaluation.samples_file import SamplesFileError, read_samples
from codegen.evaluation.tasks import TaskFileError, TaskSet, read_task_file
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

TASKS = Path(__file__).parent / "data" / "classeval_tasks.json"
WRONG_COUNTER = """class Counter:
    def __init__(self, start=0):
        self.value = start

    def increment(self, step=1):
        self.value += 1
        return self.value

    def reset(self):
        self.value = 0
"""


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    return read_task_file(TASKS)


def test_the_task_file_reads_as_class_tasks(tasks: TaskSet) -> None:
    circle = tasks.get("ClassEval_T1")
    assert circle.entry_point == "Circle" and circle.prompt.startswith("import math")
    assert circle.classeval is not None
    assert circle.classeval.test_classes == ("CircleTestArea", "CircleTestScale")
    assert circle.classeval.method_tests == (
        ("area", "CircleTestArea"),
        ("scale", "CircleTestScale"),
    )
    assert circle.canonical_module().startswith("import math\nclass Circle:")


def test_extraction_follows_the_authors_rules() -> None:
    fenced = "Sure:\n```python\nclass A:\n    x = 1\n```\nDone."
    assert extract_code(fenced) == "\nclass A:\n    x = 1\n"
    several = "```python\nclass A:\n    pass\n```\nUse it:\n```python\nA()\n```"
    assert extract_code(several) == "\nclass A:\n    pass\n"
    other_fence = "```\nclass B:\n    pass\n```"
    assert extract_code(other_fence) == "\nclass B:\n    pass\n"
    unfenced = "Here it is.\nimport os\nclass C:\n    def f(self):\n        return os.sep\n"
    assert extract_code(unfenced) == "import os\nclass C:\n    def f(self):\n        return os.sep"
    assert extract_code("```python\nclass D:\n    pass\n") == ""  # open fence: as theirs
    echoed = "@@ Instruction:\nclass E:\n    pass\n@@ Response:\nclass E:\n    y = 2"
    assert extract_code(echoed) == "class E:\n    y = 2"  # the prompt's echo is cut off
    indented = "It is:\n    class F:\n        def g(x):\n            return x"
    assert extract_code(indented) == "class F:\n    @staticmethod\n    def g(x):\n        return x"


def test_the_imports_go_in_front(tasks: TaskSet) -> None:
    module = candidate_module(tasks.get("ClassEval_T1"), "class Circle:\n    pass\n")
    assert module == "import math\nclass Circle:\n    pass"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t[0].pop("test"), "task 0 (ClassEval_T0): field 'test' is missing"),
        (
            lambda t: t[1].update(test_classes=["Nope"]),
            "task 1 (ClassEval_T1): test class 'Nope' is not defined in its test",
        ),
        (lambda t: t[2].update(class_name="2x"), "class_name '2x' is not a Python name"),
        (lambda t: t.append(dict(t[0])), "task 3: duplicate task id 'ClassEval_T0'"),
    ],
)
def test_a_bad_task_file_is_a_one_line_error(tmp_path: Path, change, message: str) -> None:
    records = json.loads(TASKS.read_text())
    change(records)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records, indent=1))
    with pytest.raises(TaskFileError) as caught:
        read_task_file(bad)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_replies_file_is_read_by_the_authors_rules(tmp_path: Path, tasks: TaskSet) -> None:
    replies = tmp_path / "replies.json"
    predict = ["no code at all", "class A: pass", "```python\nclass B: pass\n```"]
    replies.write_text(json.dumps([{"task_id": "ClassEval_T0", "predict": predict}]))
    found = read_samples(replies, tasks)
    assert found.modules == {"ClassEval_T0": ["\n", "\nclass A: pass", "\n\nclass B: pass\n"]}
    assert found.fields == {"predict": 3}
    replies.write_text(json.dumps([{"task_id": "ClassEval_9", "predict": ["x"]}]))
    with pytest.raises(SamplesFileError, match="entry 0: unknown task_id 'ClassEval_9'"):
        read_samples(replies, tasks)


@pytest.mark.docker
def test_references_pass_and_a_wrong_reply_fails_per_test_class(
    box: Sandbox, tasks: TaskSet
) -> None:
    limits = Limits(memory_mb=512)
    counter = tasks.get("ClassEval_T0")
    right, wrong, empty = score_classes(
        box, counter, [counter.canonical_module(), WRONG_COUNTER, None], limits
    )
    assert right.passed and right.isolated
    assert [r["result"] for r in right.test_classes or []] == ["success"] * 3
    assert not wrong.passed and wrong.category == "wrong_answer"
    outcomes = {r["test_class"]: r for r in wrong.test_classes or []}
    assert outcomes["CounterTestIncrement"]["result"] == "partial_success"
    assert "test_increment_step" in str(outcomes["CounterTestIncrement"]["reason"])
    assert outcomes["CounterTestReset"]["result"] == "success"
    assert outcomes["CounterTestMain"]["result"] == "fail"
    assert empty.category == "crew_status"
    circle = tasks.get("ClassEval_T1")
    unfenced = "Here you go.\n" + circle.canonical_solution.split("\n", 1)[1]  # no import math
    [circle_score] = score_classes(box, circle, [candidate_module(circle, unfenced)], limits)
    assert circle_score.passed and circle_score.isolated
    inventory = tasks.get("ClassEval_T2")
    [live] = score_classes(box, inventory, [inventory.canonical_module()], limits)
    results = {r["test_class"]: r for r in live.test_classes or []}
    # Every verdict isolated, no test class in the candidate's process; the live dict a method
    # returned is mirrored across the boundary, so its test passes as in one process.
    assert live.passed and live.isolated is True, live
    assert all(r["isolated"] is True for r in results.values())
    assert all(r["fence"] == live.fence and r["fence"] for r in results.values())
    assert results["InventoryTestGetItems"]["result"] == "success"
    figures = class_summary(
        [(counter, [right]), (counter, [wrong]), (circle, [circle_score]), (inventory, [live])]
    )
    assert figures["verdicts_isolated"] == figures["verdicts"] == 10
    assert figures["verdicts_by_fence"] == {live.fence: 10}
    assert figures["classes_solved"] == 3
    assert figures["method_success"] == {"pass@1": 7 / 8}  # Counter.increment, once
    assert [(f["task"], f["test_class"]) for f in figures["failures"]][:2] == [
        ("ClassEval_T0", "CounterTestIncrement"),
        ("ClassEval_T0", "CounterTestMain"),
    ]
