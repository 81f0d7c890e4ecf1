"""A review awaiting a verdict resumes with typed records, also when it was stored before
its verdicts, rounds and selection were records (JSON dicts then)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.agents.pick import Selection
from codegen.agents.records import Round
from codegen.agents.state import HumanVerdict, ReviewResult, SolutionResult
from codegen.requests.review import ReviewError, ReviewStore
from codegen.requests.store import RequestStore

VERDICT = {
    "verdict": "reject",
    "text": "name it better",
    "reviewer": "alice",
    "decided_at": "2026-01-01T00:00:00+00:00",
    "review_round": 1,
}


def test_a_review_stored_with_dicts_resumes_with_records(tmp_path: Path) -> None:
    request_id = RequestStore(tmp_path).add("primes up to n", {"review": "human"}).id
    reviews = ReviewStore(tmp_path)
    old = ReviewResult(
        mode="human",
        verdicts=[VERDICT],  # type: ignore[list-item]  # as an older version stored it
        revised=SolutionResult(
            code="def f(): ...",
            history=[{"round": 2, "passed": 1, "total": 1}],  # type: ignore[list-item]
            selection={"chosen": 1, "why": "agreement", "groups": []},  # type: ignore[arg-type]
        ),
    )
    reviews.open_round(request_id, old)
    claim = reviews.claim(request_id, "approve", "", "bob")
    verdict, review = reviews.claimed(request_id, claim.token)
    assert verdict.kind == "approve"
    assert review.verdicts == [
        HumanVerdict("reject", "name it better", "alice", VERDICT["decided_at"], 1)
    ]
    assert review.revised is not None
    assert review.revised.history == [Round(2, passed=1, total=1)]
    assert review.revised.selection == Selection(chosen=1, why="agreement")


def test_either_store_opened_first_makes_the_whole_file(tmp_path: Path) -> None:
    # One schema for requests.sqlite: a review store opened on a fresh home answers for an
    # unknown request by name, and a request store opened after it finds its table there.
    reviews = ReviewStore(tmp_path)
    with pytest.raises(ReviewError, match="unknown request 'req-0000000000000000'"):
        reviews.claim("req-0000000000000000", "approve", "", "bob")
    request_id = RequestStore(tmp_path).add("primes up to n").id
    assert RequestStore(tmp_path).path == reviews.path
    assert reviews.get(request_id) is None


def test_a_review_stored_before_agents_had_rooms_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pickled as the version before issue 47 wrote it: Usage in codegen.agents.usage, the
    # pick's records in codegen.agents.records.
    import sys
    import types

    import codegen.agents.records
    from codegen.agents.llm import Usage

    request_id = RequestStore(tmp_path).add("primes up to n", {"review": "human"}).id
    reviews = ReviewStore(tmp_path)
    stored = ReviewResult(
        mode="human",
        usage=Usage(calls=2),
        revised=SolutionResult(code="def f(): ...", selection=Selection(chosen=1, why="agreement")),
    )
    with monkeypatch.context() as old:
        old.setitem(sys.modules, "codegen.agents.usage", types.ModuleType("codegen.agents.usage"))
        old.setattr(sys.modules["codegen.agents.usage"], "Usage", Usage, raising=False)
        old.setattr(Usage, "__module__", "codegen.agents.usage")
        old.setattr(codegen.agents.records, "Selection", Selection, raising=False)
        old.setattr(Selection, "__module__", "codegen.agents.records")
        reviews.open_round(request_id, stored)
    claim = reviews.claim(request_id, "approve", "", "bob")
    _, review = reviews.claimed(request_id, claim.token)
    assert review == stored
