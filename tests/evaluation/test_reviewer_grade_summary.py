"""An evaluation's summary averages the reviewer's grades over the samples it graded, labelled
as the reviewer model's opinion; samples without a grade are left out, never counted as 0."""

from __future__ import annotations

from pathlib import Path

from codegen.evaluation.report.summary import summarize, summary_markdown
from codegen.evaluation.scoring import SampleScore
from codegen.evaluation.store.files import EvalStore
from codegen.evaluation.store.records import Candidate


def test_the_mean_grade_is_over_the_graded_samples_and_labelled(tmp_path: Path) -> None:
    store = EvalStore(tmp_path)
    graded = [Candidate("code", "passed", reviewer_grade=g) for g in (8.0, None, 6.0)]
    store.save_samples("crew-x", "T-0", {"candidates": [c.to_dict() for c in graded]})
    store.save_scores("crew-x", "T-0", {"scores": [SampleScore(True, "passed").to_dict()] * 3})
    summary = summarize(store, "crew-x", "crew", ["T-0"])
    assert summary.reviewer_grade is not None
    assert (summary.reviewer_grade.mean, summary.reviewer_grade.graded) == (7.0, 2)
    assert summary.to_dict()["reviewer_grade"]["samples"] == 3  # type: ignore[index]
    line = "reviewer grade (the reviewer model's opinion): mean 7/10 over 2 of 3 samples graded"
    assert f"- {line}" in summary_markdown(summary)
    # Scoring samples made elsewhere: no reviewer, no grade figure.
    assert summarize(store, "crew-x", "samples", ["T-0"]).reviewer_grade is None


def test_a_candidate_without_a_grade_is_stored_as_before() -> None:
    assert "reviewer_grade" not in Candidate("code", "passed").to_dict()
    stored = Candidate("code", "passed", reviewer_grade=9.0).to_dict()
    assert Candidate.from_dict(stored).reviewer_grade == 9.0
