"""benchmarks.pick.move_unchanged_verdicts: what counts as the same verdict and the same
ClassEval pick in two trees, and each tree's side running its own code from a fresh home."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.pick.move_unchanged_verdicts import (
    SIDE,
    classeval_compared,
    compare,
    fidelity_compared,
    fidelity_files,
    modules_of,
    run_side,
)


def scores(*verdicts: tuple[bool, str, str]) -> list[list[Any]]:
    return [list(v) for v in verdicts]


def test_the_same_records_are_identical_and_one_flipped_verdict_is_named() -> None:
    old = {"a": 1, "b": 2}
    assert compare(old, dict(old)) | {"examples": []} == {
        "identical": True,
        "compared": 2,
        "differing": 0,
        "only_in_one": 0,
        "examples": [],
    }
    got = compare(old, {"a": 1, "b": 3})
    assert (got["identical"], got["differing"]) == (False, 1)
    assert got["examples"] == [{"key": "b", "old": 2, "new": 3}]


def test_a_task_in_one_tree_only_or_nothing_compared_is_not_identical() -> None:
    got = compare({"a": 1, "b": 2}, {"a": 1})
    assert (got["identical"], got["only_in_one"]) == (False, 1)
    assert compare({}, {})["identical"] is False


def test_fidelity_compares_verdicts_per_set_and_counts_messages_apart() -> None:
    old = {
        "humaneval/x.jsonl|HumanEval/0": scores((True, "passed", "")),
        "humaneval/x.jsonl|HumanEval/1": scores((False, "failed", "AssertionError at 0x7f1")),
        "mbpp/y.jsonl|mbpp_2": scores((False, "timeout", "")),
    }
    new = {**old, "humaneval/x.jsonl|HumanEval/1": scores((False, "failed", "at 0x7f2"))}
    got = fidelity_compared(old, new)
    assert got["humaneval_fidelity"]["identical"] is True
    assert got["humaneval_fidelity"]["messages_differing"] == 1
    assert got["humaneval_fidelity"]["passed"] == {"old": 1, "new": 1}
    assert got["mbpp_fidelity"]["compared"] == 1
    new["mbpp/y.jsonl|mbpp_2"] = scores((False, "failed", ""))  # another category
    assert fidelity_compared(old, new)["mbpp_fidelity"]["differing"] == 1


def test_a_classeval_task_with_another_final_code_is_not_identical() -> None:
    old = {"ClassEval_1": {"status": "passed", "code": "class A: pass"}}
    new = {"ClassEval_1": {"status": "passed", "code": "class A:\n    x = 1"}}
    got = classeval_compared(old, new)
    assert (got["identical"], got["differing"]) == (False, 1)
    assert got["statuses"] == {"old": {"passed": 1}, "new": {"passed": 1}}
    assert classeval_compared(old, old)["identical"] is True
    other_status = {"ClassEval_1": {"status": "unrecorded", "code": "class A: pass"}}
    got = classeval_compared(old, other_status)
    assert (got["identical"], got["differing"], got["picks_differing"]) == (False, 1, 0)
    assert classeval_compared(old, new)["picks_differing"] == 1


def test_the_recorded_files_become_samples_and_mbpp_rows_their_own_tests(tmp_path: Path) -> None:
    he, mbpp = tmp_path / "replays" / "mapcoder", tmp_path / "replays" / "mapcoder-mbpp"
    he.mkdir(parents=True)
    mbpp.mkdir()
    rows = [{"task_id": f"HumanEval/{i}", "source_codes": ["draft", f"code{i}"]} for i in (0, 1)]
    (he / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    row = {"name": "mbpp_2_f", "prompt": "p", "entry_point": "f", "test": "their test"}
    (mbpp / "m.jsonl").write_text(json.dumps({**row, "source_codes": ["c"]}) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    first, second = fidelity_files(tmp_path, 1, work)
    assert first == {
        "label": "humaneval/run.jsonl",
        "lines": [{"task_id": "HumanEval/0", "solution": "code0"}],
        "tasks": None,
    }
    assert second["lines"] == [{"task_id": "mbpp_2_f", "solution": "c"}]
    task = json.loads(Path(second["tasks"]).read_text())
    assert task == {"task_id": "mbpp_2_f", "prompt": "p", "entry_point": "f", "test": "their test"}


def test_a_flat_tree_runs_its_scripts_and_a_package_tree_its_modules(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    assert modules_of(tmp_path)[0]["published_tables"] == "benchmarks.scoring.published_tables"
    (tmp_path / "benchmarks" / "published_tables.py").write_text("")
    modules, path = modules_of(tmp_path)
    assert modules["classeval_replay_crew"] == "classeval_replay_crew"
    assert str(tmp_path / "benchmarks") in path.split(":")


def test_the_side_imports_only_the_standard_library_at_the_top() -> None:
    # It runs as text against the older tree, where benchmarks.* is not a package.
    tree = ast.parse(SIDE.read_text())
    tops = [
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else n.names[:1])
    ]
    assert {t.partition(".")[0] for t in tops} <= set(sys.stdlib_module_names) | {"__future__"}


# A stand-in tree: its score_file reports, as each sample's message, the CODEGEN_HOME it saw,
# what that home held when scoring began, and the task file it was given.
FAKE = {
    "codegen/__init__.py": "",
    "codegen/evaluation/__init__.py": "",
    "codegen/evaluation/tasks.py": "def read_task_file(path):\n    return path\n",
    "codegen/sandbox/__init__.py": (
        "class Box:\n    def close(self):\n        pass\n\n"
        "def open_sandbox(backend, pool_size):\n    return Box()\n"
    ),
    "codegen/settings/__init__.py": (
        "class Settings:\n    eval = None\n\n"
        "    def model_copy(self, update):\n        return self\n\n"
        "def get_settings():\n    s = Settings()\n    s.eval = Settings()\n    return s\n"
    ),
    "SCORER": (
        "import os\nfrom types import SimpleNamespace as NS\n\n"
        "def read_samples(path, tasks=None):\n    return tasks\n\n"
        "def score_file(settings, box, home, name, lines):\n"
        "    seen = [os.environ['CODEGEN_HOME'], sorted(os.listdir(home)), read_samples(name)]\n"
        "    (home / 'scored').write_text('')\n"
        "    score = NS(passed=True, category='passed', message=seen)\n"
        "    return None, [NS(key=x['task_id'], scores=[score]) for x in lines], 0.0\n"
    ),
}


def fake_tree(root: Path, scorer: str) -> Path:
    for name, text in FAKE.items():
        path = root / (scorer if name == "SCORER" else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_each_side_runs_its_own_tree_from_a_fresh_home(tmp_path: Path) -> None:
    old = fake_tree(tmp_path / "old", "benchmarks/published_tables.py")
    new = fake_tree(tmp_path / "new", "benchmarks/scoring/published_tables.py")
    spec = {
        "part": "fidelity",
        "workers": 1,
        "backend": "docker",
        "files": [
            {"label": "humaneval/a.jsonl", "lines": [{"task_id": "T/0"}], "tasks": None},
            {"label": "mbpp/b.jsonl", "lines": [{"task_id": "m_1"}], "tasks": "/t.jsonl"},
        ],
    }
    sides = [run_side(tree, spec) for tree in (old, new)]
    homes = []
    for records in sides:
        home, held, _ = records["humaneval/a.jsonl|T/0"][0][2]
        assert held == ["dagster"]  # nothing scored there before
        assert records["mbpp/b.jsonl|m_1"][0][2][2] == "/t.jsonl"  # MBPP: the rows' tests
        homes.append(home)
    assert homes[0] != homes[1]
