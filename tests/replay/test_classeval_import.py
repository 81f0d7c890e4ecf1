"""ClassEval reply files imported as recordings (``codegen replay import --format classeval``):
the programmer's replies as sent, candidates numbered across files, and the analyzer's and
test designer's replies derived from each task's skeleton.

The three tasks are written here in ClassEval's shape (``task_id``, ``class_name``,
``skeleton``, ``import_statement``, the hidden ``test`` and ``solution_code``...); none of the
files in ../shared is used.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegen.agents.spec import Spec
from codegen.orchestration.cli import main
from codegen.replay.classeval import classeval_request, read_classeval_tasks
from codegen.replay.classeval_derived import (
    class_examples,
    class_runs,
    classeval_tests,
    doc_examples,
)
from codegen.replay.importers import import_file
from codegen.replay.recording import DERIVED, RECORDED, read_recording

COUNTER_SKELETON = '''import math

class Counter:
    """
    A counter that steps up and can be reset.
    """

    def __init__(self, start=0):
        """
        :param start: int, the first value
        """
        self.count = start
        self._log = []

    def increment(self, step=1):
        """
        Add step to the count.
        :return: int, the new count
        >>> c = Counter()
        >>> c.increment()
        1
        >>> c.increment(2)
        3
        >>> c.increment(-5)
        Traceback (most recent call last):
        ValueError: negative step
        >>> c
        <Counter 3>
        >>> c.increment()
        4
        """

    def reset(self):
        """
        Set the count back to zero.
        >>> c.reset()
        >>> c.count
        0
        """

    def ratio(self, total):
        """
        >>> Counter(1).ratio(4)
        0.25
        >>> undefined_thing.ratio(3)
        1.0
        >>> c.ratio(2)
        9.0
        """

    def __clamp(self, value):
        """
        Keep value within bounds.
        """

    @staticmethod
    def describe(n):
        """
        >>> Counter.describe(math.floor(3.7))
        'count=3'
        """
'''
COUNTER_SOLUTION = """import math

class Counter:
    def __init__(self, start=0):
        self.count = start
        self._log = []

    def increment(self, step=1):
        if step < 0:
            raise ValueError("negative step")
        self.count += step
        return self.count

    def reset(self):
        self.count = 0

    def ratio(self, total):
        return self.count / total

    def __clamp(self, value):
        return max(0, value)

    def __repr__(self):
        return f"<Counter {self.count}>"

    @staticmethod
    def describe(n):
        return f"count={n}"
"""
# One docstring left open before the next method (ClassEval has such skeletons), third-party
# imports named by their import names.
TABLE_SKELETON = '''import numpy as np
from docx import Document

class Table:
    """
    Rows of numbers.
    """

    def __init__(self):
        self.rows = []

    def add(self, row):
        """
        >>> t = Table()
        >>> t.add([1, 2])
        1

    def total(self):
        """
        >>> t = Table()
        >>> t.add([1, 2])
        1
        >>> t.total()
        3
        """
'''
# A skeleton inside one string literal, a prompt without its blank, a statement over lines
# without ``...``.
QUEUE_SKELETON = """'''
# A queue.

class Queue:
    def __init__(self):
        self.items = []

    def push_all(self, values):
        \"\"\"
        >>>q = Queue()
        >>> q.push_all([
            1,
            2])
        >>> q.items
        [1, 2]
        \"\"\"
'''
"""
HIDDEN = ("HIDDEN_TEST_MARKER", "HIDDEN_SOLUTION_MARKER")


def task(task_id: str, name: str, skeleton: str, imports: list[str]) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "skeleton": skeleton,
        "test": f"import unittest\n\nclass {name}TestX(unittest.TestCase):\n"
        "    def test_x(self):\n        self.assertEqual('HIDDEN_TEST_MARKER', 1)\n",
        "solution_code": f"class {name}:\n    pass  # HIDDEN_SOLUTION_MARKER\n",
        "import_statement": imports,
        "class_description": "...",
        "class_name": name,
        "test_classes": [f"{name}TestX"],
        "class_constructor": f"class {name}:\n    def __init__(self):\n        pass\n",
        "fields": [],
        "methods_info": [],
    }


TASKS = [
    task("ClassEval_900", "Counter", COUNTER_SKELETON, ["import math"]),
    task(
        "ClassEval_901",
        "Table",
        TABLE_SKELETON,
        ["import numpy as np", "from docx import Document"],
    ),
    task("ClassEval_902", "Queue", QUEUE_SKELETON, []),
]
RIGHT = f"Here is the class.\n\n```python\n{COUNTER_SOLUTION}```\n"
WRONG = RIGHT.replace("self.count += step", "self.count += 2 * step")


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    path = tmp_path / "ClassEval_data.json.gz"
    path.write_bytes(gzip.compress(json.dumps(TASKS).encode()))
    return path


def replies(path: Path, rows: dict[str, list[str]]) -> Path:
    path.write_text(json.dumps([{"task_id": k, "predict": v} for k, v in rows.items()]))
    return path


def test_replies_kept_as_sent_candidates_numbered_across_files(
    tmp_path: Path, tasks_file: Path
) -> None:
    first = replies(
        tmp_path / "a.json", {"ClassEval_900": [RIGHT], "ClassEval_902": ["class Queue: ..."]}
    )
    second = replies(tmp_path / "b.json", {"ClassEval_900": [WRONG], "ClassEval_901": ["x"]})
    entries = import_file("classeval", first, tasks_file=tasks_file, more=(second,))
    programmer = {(e.task, e.candidate): e for e in entries if e.role == "programmer"}
    assert programmer[("ClassEval_900", 0)].content == RIGHT
    assert programmer[("ClassEval_900", 1)].content == WRONG
    # The second file's reply is candidate 1 even where the first file has none.
    assert set(programmer) == {
        ("ClassEval_900", 0),
        ("ClassEval_900", 1),
        ("ClassEval_901", 1),
        ("ClassEval_902", 0),
    }
    assert all(e.source == RECORDED and e.round == 1 for e in programmer.values())
    derived = [e for e in entries if e.role != "programmer"]
    assert {e.role for e in derived} == {"analyzer", "test_designer", "reviewer", "documenter"}
    assert all(e.source == DERIVED for e in derived)
    assert not [e for e in entries if any(h in e.content for h in HIDDEN)]

    samples = replies(tmp_path / "t0.2.json", {"ClassEval_900": [RIGHT, WRONG, "a", "b", "c"]})
    five = import_file("classeval", samples, tasks_file=tasks_file, recorded_only=True)
    assert [e.candidate for e in five] == [0, 1, 2, 3, 4]
    assert {e.role for e in five} == {"programmer"}


def test_the_spec_holds_the_skeletons_class(tasks_file: Path) -> None:
    found = read_classeval_tasks(tasks_file)
    counter = found["ClassEval_900"]
    assert "HIDDEN" not in repr(counter)
    entries = import_file(
        "classeval",
        replies(tasks_file.with_name("r.json"), {"ClassEval_900": [RIGHT]}),
        tasks_file=tasks_file,
    )
    analyzer = next(e for e in entries if e.role == "analyzer")
    spec = Spec.model_validate_json(analyzer.content)
    (cls,) = spec.classes
    assert cls.name == "Counter" and cls.constructor == "def __init__(self, start=0)"
    assert [a.name for a in cls.attributes] == ["count"]  # _log is not public
    assert [m.name for m in cls.methods] == ["increment", "reset", "ratio", "__clamp", "describe"]
    assert cls.methods[-1].signature == "@staticmethod def describe(n)"
    assert spec.functions == [] and spec.dependencies == []
    shown = [(e.setup, e.call, e.expected) for e in spec.examples]
    assert shown == [
        (["c = Counter()"], "c.increment()", "1"),
        (["c = Counter()", "c.increment()"], "c.increment(2)", "3"),
        # The raising call is left out of the setup; a non-literal output is a statement.
        (["c = Counter()", "c.increment()", "c.increment(2)", "c"], "c.increment()", "4"),
        # ``c`` comes from increment's docstring.
        (["c = Counter()", "c.reset()"], "c.count", "0"),
        ([], "Counter(1).ratio(4)", "0.25"),
        # An undefined name ends the docstring's examples: no ``c.ratio(2)``.
        ([], "Counter.describe(math.floor(3.7))", "'count=3'"),
    ]
    assert "Counter" in classeval_request(counter) and "def increment" in classeval_request(counter)


def test_repaired_skeletons_and_dependencies(tasks_file: Path) -> None:
    found = read_classeval_tasks(tasks_file)
    table = json.loads(
        next(
            e.content
            for e in import_file(
                "classeval",
                replies(tasks_file.with_name("r.json"), {"ClassEval_901": ["x"]}),
                tasks_file=tasks_file,
            )
            if e.role == "analyzer"
        )
    )
    assert table["dependencies"] == ["numpy", "python-docx"]
    assert [m["name"] for m in table["classes"][0]["methods"]] == ["add", "total"]
    assert [(e.call, e.expected) for e in class_examples(found["ClassEval_901"])] == [
        ("t.add([1, 2])", "1"),
        ("t.add([1, 2])", "1"),
        ("t.total()", "3"),
    ]
    queue = class_examples(found["ClassEval_902"])
    assert [(e.setup, e.call, e.expected) for e in queue] == [
        (["q = Queue()", "q.push_all([\n1,\n2])"], "q.items", "[1, 2]")
    ]
    assert doc_examples(">>> a = 1\n>>> a\n1\n\n>>> a +\\\n... 1\n2") == [
        ("a = 1", ""),
        ("a", "1"),
        ("a +\\\n1", "2"),
    ]


def run_tests(folder: Path, solution: str, tests: str) -> subprocess.CompletedProcess[str]:
    """Our own fixture class and the derived tests, in a child pytest (no model code)."""
    (folder / "solution.py").write_text(solution)
    (folder / "test_solution.py").write_text(tests.removeprefix("```python\n").removesuffix("```"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_derived_tests_pass_a_right_class_and_fail_a_wrong_one(
    tmp_path: Path, tasks_file: Path
) -> None:
    counter = read_classeval_tasks(tasks_file)["ClassEval_900"]
    tests = classeval_tests(counter)
    ast.parse(tests.removeprefix("```python\n").removesuffix("```"))
    assert "pytest.approx(0.25)" in tests and "_Counter__clamp" in tests
    (tmp_path / "right").mkdir()
    (tmp_path / "wrong").mkdir()
    right = run_tests(tmp_path / "right", COUNTER_SOLUTION, tests)
    assert right.returncode == 0 and "7 passed" in right.stdout, right.stdout
    broken = COUNTER_SOLUTION.replace("self.count += step", "self.count += 2 * step")
    wrong = run_tests(tmp_path / "wrong", broken, tests)
    assert wrong.returncode == 1 and "3 failed" in wrong.stdout, wrong.stdout


STORE_SKELETON = '''class Store:
    def __init__(self, path):
        self.path = path

    def add(self, item):
        """
        >>> s = Store("items.txt")
        >>> s.add({'name': 'pen'})
        >>> s.add({'name': 'ink'})
        """

    def count(self):
        """
        >>> s = Store("items.txt")
        >>> s.add({'name': 'pen'})
        >>> s.count()
        1
        """
'''
STORE_SOLUTION = """class Store:
    def __init__(self, path):
        self.path = path
        self.items = []

    def add(self, item):
        self.items.append((item.get("id"), item["name"]))

    def count(self):
        return len(self.items)
"""


def test_statements_that_show_no_value_run_without_raising(
    tmp_path: Path,
) -> None:
    """A docstring that goes on past its last literal example is a run: a draft that raises
    in it fails it, while the examples it passes still pass."""
    path = tmp_path / "ClassEval_data.json.gz"
    path.write_bytes(
        gzip.compress(json.dumps([task("ClassEval_903", "Store", STORE_SKELETON, [])]).encode())
    )
    store = read_classeval_tasks(path)["ClassEval_903"]
    # count's statements end in its example: nothing more to run.
    assert [(r.method, r.statements) for r in class_runs(store)] == [
        ("add", ['s = Store("items.txt")', "s.add({'name': 'pen'})", "s.add({'name': 'ink'})"])
    ]
    tests = classeval_tests(store)
    (tmp_path / "right").mkdir()
    (tmp_path / "wrong").mkdir()
    right = run_tests(tmp_path / "right", STORE_SOLUTION, tests)
    assert right.returncode == 0 and "3 passed" in right.stdout, right.stdout
    # Creates its file exclusively on each add: any add after the first raises.
    once = STORE_SOLUTION.replace(
        '        self.items.append((item.get("id"), item["name"]))',
        '        self.items.append((item.get("id"), item["name"]))\n'
        '        open(self.path, "x").close()',
    )
    wrong = run_tests(tmp_path / "wrong", once, tests)
    assert "FileExistsError" in wrong.stdout and "1 failed, 2 passed" in wrong.stdout, wrong.stdout
    assert "test_add_runs_as_documented" in wrong.stdout


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"ClassEval_999": ["x"]}, "task 'ClassEval_999' is not in the task file"),
        ({"ClassEval_900": []}, "predict is empty"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path,
    tasks_file: Path,
    capsys: pytest.CaptureFixture[str],
    rows: dict[str, list[str]],
    message: str,
) -> None:
    source = replies(tmp_path / "bad.json", rows)
    out = tmp_path / "out.jsonl"
    args = ["replay", "import", "--format", "classeval", str(source), str(out)]
    assert main([*args, "--tasks", str(tasks_file)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert main(args) == 2
    assert "--tasks" in capsys.readouterr().err
    source.write_text('{"task_id": "ClassEval_900"}')
    assert main([*args, "--tasks", str(tasks_file)]) == 2
    assert "expected a non-empty JSON list" in capsys.readouterr().err


@pytest.mark.docker
def test_the_crew_replayed_on_a_class_picks_the_right_draft(
    tmp_path: Path, tasks_file: Path
) -> None:
    from codegen.agents.crew import run_crew
    from codegen.agents.llm import LLMClient
    from codegen.agents.options import CrewOptions
    from codegen.agents.types import Status
    from codegen.replay.server import ReplayServer
    from codegen.sandbox import open_sandbox

    first = replies(tmp_path / "a.json", {"ClassEval_900": [WRONG]})
    second = replies(tmp_path / "b.json", {"ClassEval_900": [RIGHT]})
    recording = tmp_path / "rec.jsonl"
    args = ["replay", "import", "--format", "classeval", str(first), str(second)]
    assert main([*args, str(recording), "--tasks", str(tasks_file)]) == 0
    request = classeval_request(read_classeval_tasks(tasks_file)["ClassEval_900"])
    box = open_sandbox("docker", pool_size=1)
    try:
        with ReplayServer(read_recording(recording), log=io.StringIO()) as srv:
            llm = LLMClient(base_url=srv.base_url, api_key="none", max_retries=0)
            out = run_crew(
                request,
                llm=llm,
                sandbox=box,
                options=CrewOptions(candidates=2, max_rounds=1),
                task_id="ClassEval_900",
            )
    finally:
        box.close()
    assert out.status is Status.PASSED, out.reason
    assert "self.count += step" in out.solution
    assert all(r["status"] == 200 for r in srv.served), srv.served


def test_a_task_file_that_is_not_classeval_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "tasks.jsonl"
    row = {"task_id": "T/0", "prompt": "def f():\n", "entry_point": "f", "test": "pass"}
    other.write_text(json.dumps(row) + "\n")
    source = replies(tmp_path / "r.json", {"T/0": ["x"]})
    args = ["replay", "import", "--format", "classeval", str(source), str(tmp_path / "o.jsonl")]
    assert main([*args, "--tasks", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a ClassEval task file" in err and len(err.splitlines()) == 1
