"""Verdicts do not depend on the hash seed: the scoring driver, and so the candidate and the
test side forked from it, run under the sandbox's fixed PYTHONHASHSEED. A class returning
``list(set(...))`` compared with a list (ClassEval_22's shape) gets one verdict on every
scoring, where a random seed per run made it pass or fail by chance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.evaluation.classeval.scoring import score_classes
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import score_candidates
from codegen.evaluation.tasks import read_task_file
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

pytestmark = pytest.mark.docker
LIMITS = Limits(memory_mb=512)

BAG = """import sys

class Bag:
    def __init__(self, words=()):
        self.words = list(words)

    def unique(self):
        return list(set(self.words))

    def seed_random(self):
        return sys.flags.hash_randomization
"""

TEST = """import sys
import unittest


class BagTestUnique(unittest.TestCase):
    def test_unique(self):
        self.assertEqual(Bag(["ab", "cd", "ab"]).unique(), ["ab", "cd"])


class BagTestSeed(unittest.TestCase):
    def test_seed(self):
        self.assertEqual(Bag().seed_random(), 0)
        self.assertEqual(sys.flags.hash_randomization, 0)
"""


def _task_file(tmp_path: Path) -> Path:
    task = {
        "task_id": "ClassEval_S0",
        "class_name": "Bag",
        "import_statement": ["import sys"],
        "skeleton": "import sys\n\nclass Bag:\n    def unique(self):\n        pass\n",
        "class_description": "A bag of words.",
        "class_constructor": "",
        "fields": ["self.words"],
        "methods_info": [
            {"method_name": "unique", "test_class": "BagTestUnique"},
            {"method_name": "seed_random", "test_class": "BagTestSeed"},
        ],
        "test": TEST,
        "test_classes": ["BagTestUnique", "BagTestSeed"],
        "solution_code": BAG,
    }
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([task]))
    return path


def test_a_set_order_verdict_is_the_same_on_every_scoring(box: Sandbox, tmp_path: Path) -> None:
    problem = read_task_file(_task_file(tmp_path)).get("ClassEval_S0")
    verdicts = []
    for _ in range(4):  # each scoring is its own sandbox run, so its own interpreter start
        [score] = score_classes(box, problem, [BAG], LIMITS)
        results = {r["test_class"]: r["result"] for r in score.test_classes or []}
        assert results["BagTestSeed"] == "success", score  # both sides: no random seed
        verdicts.append(results["BagTestUnique"])
    assert len(set(verdicts)) == 1, verdicts


def test_humaneval_scoring_runs_under_the_fixed_seed_too(box: Sandbox) -> None:
    problem = Problem(
        task_id="Seed/0",
        prompt="import sys\n\ndef seed_random():\n",
        entry_point="seed_random",
        canonical_solution="    return sys.flags.hash_randomization\n",
        test="import sys\n\ndef check(candidate):\n"
        "    assert candidate() == 0\n    assert sys.flags.hash_randomization == 0\n",
    )
    [score] = score_candidates(box, problem, [problem.canonical_module()], LIMITS)
    assert score.passed, score


def test_the_crews_test_runs_and_shared_calls_run_under_the_fixed_seed_too(box: Sandbox) -> None:
    """The crew's pytest run (the draft in its own process) and its calls on shared inputs
    see the same seed, so a draft's verdicts and behaviour are the same on every run."""
    from codegen.sandbox.calls import call_functions

    code = "import sys\n\ndef seed_random():\n    return sys.flags.hash_randomization\n"
    tests = (
        "import sys\nfrom solution import seed_random\n\n\ndef test_seed():\n"
        "    assert seed_random() == 0 and sys.flags.hash_randomization == 0\n"
    )
    report = box.run_pytest(code, tests, LIMITS)
    assert (report.passed, report.total) == (1, 1), report
    [[outcome]] = call_functions(box, [code], "seed_random", [[]], 5.0, LIMITS)
    assert outcome.ok and outcome.value == 0, outcome
