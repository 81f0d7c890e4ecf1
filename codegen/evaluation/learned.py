"""An evaluation with drafts from several models re-decides its picks at its end.

After the last task, the run estimates each model's reliability from the selection records
of all its tasks, with an interval per model (``agents.pick.method_evidence.with_interval``): from
whole drafts (``agents.pick.reliability.estimate``: each draft's eligibility on the worked
examples and its behaviour group) where they tell the models apart, else, where no draft is
right on half the tasks or more (``reliability.whole_drafts_tell``: ClassEval's classes), from
the records' method-level questions (``agents.pick.method_evidence``: each call of the shared
call sequences and each check the drafts answer differently, a worked example's answer known
to be likely right, "no draft is right" a hypothesis of its own). No hidden test. Then it picks
every task again from the behaviour table its record holds (``agents.pick.decision``; the
``dominance`` rule: a model whose interval lies above every other's keeps its draft unless
execution shows it wrong where another draft is right): no model call and no sandbox run for
the pick. A model's figure in the config wins over the
estimate. Where the pick moves, the new draft as written is the task's answer (the
refinement rounds it would have had need model calls); where it stays, the refined code
stays. Only a moved pick's draft is scored on the hidden tests (through the per-sample
verdict cache); the others' verdicts are reused.

Stored next to the run's samples and scores (``EvalStore``):

    eval/<config_id>/learned.json          the estimates, per model, and what moved
    eval/<config_id>/learned/<task>.json   per sample: both picks, the learned one's record,
                                           code and hidden-test verdict

``report.summarize`` reports the learned pick as the run's figures, and the first pick (as
the crew made it during the run) beside it. The estimates go to the home's history too
(``agents.pick.reliability_history``), for later requests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from codegen.agents.pick import (
    CONFIG,
    EVALUATION,
    METHOD_LEVEL,
    NONE,
    PRIOR,
    Estimate,
    Learned,
    ReliabilityHistory,
    Selection,
    TaskQuestions,
    UsedReliability,
    estimate,
    estimate_from_questions,
    observations,
    questions_of,
    repick,
    tasks_per_source,
    votes_of,
    whole_drafts_tell,
    with_interval,
)
from codegen.evaluation.harness import EvalConfig, score_samples, verdict_key
from codegen.evaluation.store import Candidate, EvalStore, read_object, write_json_atomic
from codegen.evaluation.tasks import TaskSet
from codegen.json_types import JSONObject, JSONValue
from codegen.sandbox.api import Sandbox

VERSION = 1


@dataclass
class LearnedRun:
    """What the re-pick did: the estimates, how many picks moved, its seconds."""

    applied: bool
    reason: str = ""
    estimates: dict[str, Learned] = field(default_factory=dict)
    tasks: int = 0
    evidence: str = ""  # what the estimates rest on: whole drafts, or method-level questions
    questions: int = 0  # the method-level questions the estimates rest on
    none_right: float | None = None  # their learned share where no draft is right
    moved: list[str] = field(default_factory=list)  # task keys whose pick moved
    scored: int = 0  # drafts scored on the hidden tests for it (verdict cache misses)
    seconds: float = 0.0
    pick_seconds: float = 0.0  # the estimate and the re-picks alone, before any scoring
    started_at: float = 0.0
    ended_at: float = 0.0

    def to_dict(self) -> JSONObject:
        return {
            "applied": self.applied,
            "reason": self.reason,
            "estimates": {
                k: {"p": v.value, "tasks": v.tasks}
                | ({"low": v.low, "high": v.high} if v.low is not None else {})
                for k, v in sorted(self.estimates.items())
            },
            "tasks": self.tasks,
            "evidence": self.evidence,
            "questions": self.questions,
            "none_right": self.none_right,
            "moved": list[JSONValue](self.moved),
            "scored": self.scored,
            "seconds": round(self.seconds, 3),
            "pick_seconds": round(self.pick_seconds, 3),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


def learned_path(store: EvalStore, config_id: str) -> Path:
    return store.config_dir(config_id) / "learned.json"


def learned_task_path(store: EvalStore, config_id: str, key: str) -> Path:
    return store.config_dir(config_id) / "learned" / f"{key}.json"


def _records(candidate: Candidate) -> tuple[Selection, list[str]] | None:
    """A sample's selection record and its drafts' models, when it has several drafts."""
    if not candidate.selection or not candidate.drafts:
        return None
    selection = Selection.from_dict(candidate.selection)
    models = [u.model for u in sorted(selection.reliabilities, key=lambda u: u.candidate)]
    if len(models) != len(candidate.drafts) or len(selection.candidates) != len(models):
        return None
    return selection, models


# A task's re-decided picks: key, samples fingerprint, per sample its picks and its code.
Decided = tuple[str, str, list[JSONObject], list[str | None]]
Records = dict[tuple[str, int], tuple[Selection, list[str]]]  # (task, sample) -> its record


def _stored_samples(
    store: EvalStore, config_id: str, keys: Sequence[str]
) -> dict[str, tuple[str, list[Candidate]]]:
    """Each stored task's samples fingerprint and candidates (tasks not generated: left out)."""
    samples: dict[str, tuple[str, list[Candidate]]] = {}
    for key in keys:
        doc = store.load_samples(config_id, key)
        if doc is not None:
            cands = [Candidate.from_dict(c) for c in doc["candidates"]]
            samples[key] = (str(doc.get("fingerprint", "")), cands)
    return samples


def _used(
    selection: Selection, estimates: dict[str, Learned], origin: str = EVALUATION
) -> list[UsedReliability]:
    """The reliabilities to re-pick with: a figure in the config wins; else this
    evaluation's estimate, from ``origin`` (``EVALUATION``: whole drafts; ``METHOD_LEVEL``:
    method-level questions, which tell a dominant model but do not weigh votes)."""
    return [
        u
        if u.source == CONFIG
        else UsedReliability(
            u.candidate,
            u.model,
            estimates[u.model].value if u.model in estimates else None,
            origin if u.model in estimates else NONE,
            estimates[u.model].tasks if u.model in estimates else None,
            estimates[u.model].low if u.model in estimates else None,
            estimates[u.model].high if u.model in estimates else None,
        )
        for u in sorted(selection.reliabilities, key=lambda u: u.candidate)
    ]


def _repick_sample(
    cand: Candidate,
    rec: tuple[Selection, list[str]] | None,
    estimates: dict[str, Learned],
    origin: str,
) -> tuple[JSONObject, str | None]:
    """One sample's picks record and the code it answers with after the re-pick."""
    again = repick(rec[0], _used(rec[0], estimates, origin)) if rec is not None else None
    if rec is None or again is None:
        return {"first": None, "learned": None, "moved": False}, cand.code
    first = rec[0].chosen
    moved = again.chosen != first
    assert cand.drafts is not None
    # Moved: the new draft as written; else the crew's own (refined) code.
    code = cand.drafts[again.chosen] if moved else cand.code
    picks: JSONObject = {
        "first": first,
        "first_rule": rec[0].rule,
        "learned": again.chosen,
        "moved": moved,
        "selection": again.to_dict(),
    }
    return picks, code


def _score_learned(
    item: Decided, store: EvalStore, cfg: EvalConfig, tasks: TaskSet, sandbox: Sandbox
) -> int:
    """One task's learned picks on the hidden tests: unmoved ones hit the verdict cache, so
    only a moved pick's draft runs. The number of drafts that ran."""
    key, fingerprint, picks, codes = item
    problem = tasks.get(key)
    misses = {
        k
        for code in codes
        if store.load_verdict(k := verdict_key(problem, code, cfg.limits, sandbox.environment))
        is None
    }
    scores = score_samples(store, problem, codes, sandbox, cfg.limits)
    write_json_atomic(
        learned_task_path(store, cfg.config_id, key),
        {
            "version": VERSION,
            "samples_fingerprint": fingerprint,
            "picks": cast(JSONValue, picks),
            "codes": cast(JSONValue, codes),
            "scores": cast(JSONValue, [s.to_dict() for s in scores]),
            "n": len(scores),
            "c": sum(s.passed for s in scores),
        },
    )
    return len(misses)


def _questions(found: Records) -> list[TaskQuestions]:
    """Each record's method-level questions (``agents.pick.method_evidence``)."""
    asked = []
    for selection, models in found.values():
        seen = observations(selection)
        if seen is not None:
            table, _, rows, trusted = seen
            asked.append(TaskQuestions(tuple(models), questions_of(table.classes, rows, trusted)))
    return asked


def _learned(found: Estimate) -> Learned:
    return Learned(found.value, found.tasks, found.low, found.high)


def learn_picks(
    store: EvalStore,
    cfg: EvalConfig,
    keys: Sequence[str],
    tasks: TaskSet,
    sandbox: Sandbox,
    workers: int = 1,
    history: ReliabilityHistory | None = None,
) -> LearnedRun:
    """Estimate each model's reliability over ``keys``' stored selection records, re-pick
    every sample from its record, store both picks and score the moved ones."""
    started, wall = time.time(), time.perf_counter()
    samples = _stored_samples(store, cfg.config_id, keys)
    found: Records = {
        (key, i): rec
        for key, (_, cands) in samples.items()
        for i, c in enumerate(cands)
        if (rec := _records(c)) is not None
    }
    votes = [
        v for selection, models in found.values() if (v := votes_of(selection.to_dict(), models))
    ]
    sources = sorted({s for v in votes for s in v.sources})

    def done(run: LearnedRun) -> LearnedRun:
        run.seconds, run.started_at, run.ended_at = time.perf_counter() - wall, started, time.time()
        learned_path(store, cfg.config_id).unlink(missing_ok=True)
        if run.applied:
            write_json_atomic(learned_path(store, cfg.config_id), run.to_dict())
        return run

    if len(sources) < 2:
        why = "one model wrote every draft" if sources else "no stored selection record"
        return done(LearnedRun(False, why))
    run = LearnedRun(True, "", {}, len(votes))
    whole = estimate(votes)
    origin = EVALUATION if whole_drafts_tell(whole) else METHOD_LEVEL
    if origin == EVALUATION:
        counts = tasks_per_source(votes)
        run.evidence = "whole drafts"
        run.estimates = {
            s: _learned(with_interval(whole.accuracy[s], counts.get(s, 0), PRIOR)) for s in sources
        }
    else:  # no right draft on most tasks: method-level questions, for the dominance rule
        fitted = estimate_from_questions(_questions(found))
        run.evidence = "method-level questions"
        run.estimates = {s: _learned(e) for s, e in fitted.estimates.items()}
        run.questions, run.none_right = fitted.questions, fitted.none_right
    estimates = run.estimates
    decided: list[Decided] = []
    for key, (fingerprint, cands) in samples.items():
        repicked = [
            _repick_sample(cand, found.get((key, i)), estimates, origin)
            for i, cand in enumerate(cands)
        ]
        picks = [p for p, _ in repicked]
        if any(p["moved"] for p in picks):
            run.moved.append(key)
        decided.append((key, fingerprint, picks, [code for _, code in repicked]))
    run.pick_seconds = time.perf_counter() - wall
    # Tasks side by side, as the evaluation scores them.
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        run.scored = sum(
            pool.map(lambda item: _score_learned(item, store, cfg, tasks, sandbox), decided)
        )
    # A method-level estimate weighs no vote, so later requests do not weigh by it either.
    if history is not None and origin == EVALUATION:
        history.record_evaluation(cfg.config_id, tasks.name, run.tasks, estimates)
    return done(run)


def load_learned(store: EvalStore, config_id: str) -> JSONObject | None:
    return read_object(learned_path(store, config_id))


def load_learned_task(
    store: EvalStore, config_id: str, key: str, samples_fingerprint: str
) -> JSONObject | None:
    """A task's learned picks, when they were made from the samples stored now."""
    found = read_object(learned_task_path(store, config_id, key))
    if not found or found.get("samples_fingerprint") != samples_fingerprint:
        return None
    if not isinstance(found.get("scores"), list):
        return None
    return found
