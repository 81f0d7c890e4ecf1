"""The evaluation's record types: one generated candidate, and the documents the store keeps.

A leaf of ``codegen/evaluation``: the store, the harness, the report and the rest all take
their record types from here, so none of them has to import another for a type (which is
how the old import circle between the store, the harness and the report came about).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TypedDict, cast

from codegen.evaluation.scoring import ScoreDict
from codegen.json_types import JSONObject


class CandidateDict(TypedDict, total=False):
    """A :class:`Candidate` as stored in ``samples/<task>.json`` (older files may lack the
    newer fields: their defaults apply)."""

    code: str | None
    status: str
    reason: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    latency_s: float
    llm_calls: int
    cache_hits: int
    rounds: int
    own_tests_passed: int | None
    own_tests_total: int | None
    drafts: list[str]
    selection: JSONObject
    reviewer_grade: float
    models: list[str]


@dataclass
class Candidate:
    """One generated sample with what it cost to produce."""

    code: str | None
    status: str  # the crew's final status, "canonical", or "sample" (from a samples file)
    reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: some call used a model without a price
    latency_s: float = 0.0
    llm_calls: int = 0
    cache_hits: int = 0
    rounds: int = 0
    own_tests_passed: int | None = None  # the crew's own generated suite, for contrast
    own_tests_total: int | None = None
    # With several drafts: each draft's code (candidate order; ``code`` is the one picked,
    # after refinement) and the selection record, so a benchmark can score every draft and
    # compare the pick with other rules on the same run. None with one draft.
    drafts: list[str] | None = None
    selection: JSONObject | None = None
    # The reviewer's grade of the code, 1-10 (the reviewer model's opinion); None: no grade.
    reviewer_grade: float | None = None
    # The models whose replies wrote it, as its usage names them (``replay:<model>`` for a
    # replayed reply); None: no call was made, or it was stored before this was kept.
    models: list[str] | None = None

    def to_dict(self) -> CandidateDict:
        out = asdict(self)
        # One draft, no grade, no model: stored as before.
        for key in ("drafts", "selection", "reviewer_grade", "models"):
            if out[key] is None:
                del out[key]
        return cast(CandidateDict, out)

    @classmethod
    def from_dict(cls, data: CandidateDict) -> Candidate:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class ConfigDoc(TypedDict):
    """``<config_id>/config.json``: what the configuration is (``EvalConfig.describe``)."""

    mode: str
    samples: int
    identity: JSONObject  # the generator's identity: nested, free-form, never a secret
    harness_version: str
    limits: JSONObject


class SamplesDoc(TypedDict):
    """``samples/<task>.json``: a task's generated candidates (``Candidate.to_dict`` each)."""

    task_id: str
    fingerprint: str
    candidates: list[CandidateDict]
    generated_at: float


class ScoresDoc(TypedDict):
    """``scores/<task>.json``: the hidden-test verdicts of a task's candidates."""

    task_id: str
    fingerprint: str
    n: int
    c: int
    scores: list[ScoreDict]
    scored_at: float


# One line of ``history.jsonl``. Besides these it holds every reported ``pass@k`` of the run
# (and ``plus pass@k``); ``task_set`` is added by the CLI. Old lines may lack newer keys.
HistoryEntry = TypedDict(
    "HistoryEntry",
    {
        "at": str,
        "label": str,
        "config_id": str,
        "mode": str,
        "task_set": str,
        "tasks": int,
        "samples": int,
        "solved": int,
        "pass@1": float,
        "plus pass@1": float,
        "precision": float | None,
        "tokens": int,
        "cost_usd": float | None,
        "cost_per_solved_usd": float | None,
        "wall_s": float | None,
        "first pass@1": float | None,
        "reliability": JSONObject | None,
        # The models whose replies the run's candidates were written from (``Summary.models``).
        "models": list[str],
    },
    total=False,
)
