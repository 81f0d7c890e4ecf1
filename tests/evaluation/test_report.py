"""Summaries from the store: pass@k, categories, unknown cost stays unknown, history plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.evaluation.report.summary import (
    history_entry,
    plot_history,
    summarize,
    summary_markdown,
)
from codegen.evaluation.scoring import SampleScore
from codegen.evaluation.store.files import EvalStore
from codegen.evaluation.store.records import Candidate


def put(store: EvalStore, key: str, cands: list[Candidate], scores: list[SampleScore]) -> None:
    store.save_samples("crew-x", key, {"candidates": [c.to_dict() for c in cands]})
    store.save_scores("crew-x", key, {"scores": [s.to_dict() for s in scores]})


def test_summary_counts_categories_and_keeps_unknown_cost(tmp_path: Path) -> None:
    store = EvalStore(tmp_path)
    ok = SampleScore(True, "passed")
    wrong = SampleScore(False, "wrong_answer", "AssertionError: |x|")
    slow = SampleScore(False, "timeout")
    priced = Candidate("code", "passed", prompt_tokens=100, completion_tokens=10, cost_usd=0.5)
    unpriced = Candidate("code", "passed", prompt_tokens=50, completion_tokens=5, cost_usd=None)
    put(store, "HumanEval-0", [priced] * 10, [ok] * 3 + [wrong] * 7)
    put(store, "HumanEval-1", [priced] * 10, [slow] * 10)
    summary = summarize(store, "crew-x", "crew", ["HumanEval-0", "HumanEval-1", "HumanEval-2"])
    assert summary.missing == ["HumanEval-2"] and summary.tasks_scored == 2
    assert summary.pass_at_k["pass@1"] == pytest.approx((3 / 10 + 0) / 2)
    assert summary.pass_at_k["pass@10"] == 0.5  # one task has a correct sample among its 10
    assert summary.failures_by_category["wrong_answer"] == 7
    assert summary.failures_by_category["timeout"] == 10
    assert summary.cost_usd == 10.0 and summary.cost_per_solved_usd == 10.0
    assert "| HumanEval-1 | 0/10 |" in summary_markdown(summary)
    assert "\\|x\\|" in summary_markdown(summary)  # a pipe in a message cannot break the table

    put(store, "HumanEval-2", [unpriced], [ok])
    later = summarize(store, "crew-x", "crew", ["HumanEval-0", "HumanEval-1", "HumanEval-2"])
    assert later.cost_usd is None and later.cost_per_solved_usd is None  # unknown, never zero
    assert "pass@10" not in later.pass_at_k  # one task has n = 1


def test_history_survives_a_torn_line_and_plots(tmp_path: Path) -> None:
    store = EvalStore(tmp_path)
    put(store, "HumanEval-0", [Candidate("c", "passed")], [SampleScore(True, "passed")])
    summary = summarize(store, "crew-x", "crew", ["HumanEval-0"])
    store.append_history(history_entry(summary, "model-a", wall_s=1.0))
    with store.history_path.open("a") as fh:
        fh.write('{"torn": ')  # a crash mid-write
    store.append_history(history_entry(summary, "model-b"))
    entries = store.history()
    assert [e["label"] for e in entries] == ["model-a", "model-b"]
    png = plot_history(entries, store.plot_path)
    assert png.read_bytes().startswith(b"\x89PNG")
