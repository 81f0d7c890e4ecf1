"""Which verdicts stand for later runs (``SampleScore.cacheable``, issue 46): a test whose values
could not cross (``cannot_isolate``, a sample's or one ClassEval test class's) is decided
again next time, and a pass stored by a harness that still decided some verdicts in the
candidate's process (``isolated: false``) is never reused. The scorer is replaced by a
recorder here: this is about the store, not the sandbox."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from codegen.evaluation import harness
from codegen.evaluation.harness import score_samples, verdict_key
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import Category, SampleScore
from codegen.evaluation.store import EvalStore
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

PROBLEM = Problem(
    task_id="Fixture/one",
    prompt='def one():\n    """1."""\n',
    entry_point="one",
    canonical_solution="    return 1\n",
    test="def check(candidate):\n    assert candidate() == 1\n",
)
LIMITS = Limits(timeout_s=5.0)
SANDBOX = cast(Sandbox, SimpleNamespace(environment="fixture"))
CROSSED = SampleScore(
    False, Category.CANNOT_ISOLATE, "a value cannot cross: a function", isolated=True, fence="x"
)
PASSED = SampleScore(True, Category.PASSED, isolated=True, fence="x")


@pytest.fixture
def scored(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[SampleScore]]:
    """The scorer's verdict for each code (set by the test); the codes it was asked to score
    land in "asked", in order (as categories, to keep one type)."""
    verdicts: dict[str, list[SampleScore]] = {"asked": []}

    def score(sandbox: Sandbox, problem: Problem, codes: list[str], *rest: object) -> list:
        found = [verdicts[code][0] for code in codes]
        verdicts["asked"] += [SampleScore(False, code) for code in codes]
        return found

    monkeypatch.setattr(harness, "score_candidates", score)
    return verdicts


def test_cannot_isolate_is_decided_again(tmp_path: Path, scored: dict) -> None:
    store = EvalStore(tmp_path)
    scored.update(crossed=[CROSSED], honest=[PASSED])
    for _ in range(2):
        first = score_samples(store, PROBLEM, ["crossed", "honest"], SANDBOX, LIMITS)
        assert [s.category for s in first] == [Category.CANNOT_ISOLATE, Category.PASSED]
    assert [s.category for s in scored["asked"]] == ["crossed", "honest", "crossed"]
    key = verdict_key(PROBLEM, "crossed", LIMITS, SANDBOX.environment)
    assert store.load_verdict(key) is None


def test_a_stored_pass_decided_outside_isolation_is_never_reused(
    tmp_path: Path, scored: dict
) -> None:
    store = EvalStore(tmp_path)
    old = SampleScore(True, Category.PASSED, isolated=False)
    store.save_verdict(verdict_key(PROBLEM, "old", LIMITS, SANDBOX.environment), old.to_dict())
    scored.update(old=[SampleScore(False, Category.CANNOT_ISOLATE, "a value cannot cross")])
    [again] = score_samples(store, PROBLEM, ["old"], SANDBOX, LIMITS)
    assert again.category == Category.CANNOT_ISOLATE and not again.passed
    assert [s.category for s in scored["asked"]] == ["old"]


def test_a_classeval_test_class_that_could_not_isolate_keeps_its_sample_uncached() -> None:
    classes = [
        {"test_class": "A", "result": "success", "reason": ""},
        {"test_class": "B", "result": "error", "reason": "cannot_isolate: a value cannot..."},
    ]
    sample = SampleScore(False, Category.CANNOT_ISOLATE, isolated=True, test_classes=classes)
    assert not sample.cacheable
    failed = SampleScore(False, Category.WRONG_ANSWER, isolated=True, test_classes=classes[:1])
    assert failed.cacheable
    assert PASSED.cacheable and not CROSSED.cacheable
