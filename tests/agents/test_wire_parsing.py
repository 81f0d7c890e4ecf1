"""Wire conventions on the reply side, the request store and usage arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.agents.artifacts import is_request_id, write_artifact
from codegen.agents.llm import Usage
from codegen.agents.roles import parse_verdict
from codegen.requests.store import RequestStore, artifact_dir


@pytest.mark.parametrize(
    ("reply", "approved"),
    [
        ("APPROVED", True),
        ("APPROVED\nClean and correct.", True),
        ("  **APPROVED** - nice", True),
        ("REJECTED\n- off by one", False),
        ("Looks good, approved.", False),  # merely contains it
        ("I have APPROVED this", False),
        ("Approved", False),  # the contract word is upper case
        ("APPROVEDISH", False),
        ("NOT APPROVED", False),
        ("", False),
    ],
)
def test_reviewer_verdict(reply: str, approved: bool) -> None:
    assert parse_verdict(reply).approved is approved


def test_rejection_reasons_are_the_lines_after_the_verdict() -> None:
    verdict = parse_verdict("REJECTED\n- handle n < 2\n- add type hints")
    assert verdict.reasons == "- handle n < 2\n- add type hints"


def test_request_store_round_trip_and_opaque_ids(tmp_path: Path) -> None:
    store = RequestStore(tmp_path / "requests")
    text = "Write f(x) ' ; DROP TABLE requests; --"
    req = store.add(text, {"max_rounds": 2}, source="cli")
    assert is_request_id(req.id) and "f(x)" not in req.id
    assert store.get(req.id).text == text and store.get(req.id).options == {"max_rounds": 2}
    with pytest.raises(KeyError):
        store.get("req-0000000000000000")
    queued = store.add("other", state="queued")
    assert [r.id for r in store.with_state("queued")] == [queued.id]
    store.set_state(queued.id, "launched")
    assert store.with_state("queued") == []


def test_artifact_paths_cannot_escape(tmp_path: Path) -> None:
    for bad in ["../etc", "req-../../x", "", "req-ABC"]:
        with pytest.raises(ValueError):
            artifact_dir(tmp_path, bad)
    folder = artifact_dir(tmp_path, "req-0123456789abcdef")
    with pytest.raises(ValueError):
        write_artifact(folder, "../../evil.py", "x")
    write_artifact(folder, "spec.json", {"a": 1})
    assert (folder / "spec.json").read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in folder.iterdir()] == ["spec.json"]  # no temp files left


def test_usage_merge_keeps_unknown_cost_unknown() -> None:
    a, b = Usage(), Usage()
    a.record(
        "analyzer", prompt_tokens=10, completion_tokens=5, cost_usd=0.5, latency_s=1, cached=False
    )
    b.record(
        "programmer", prompt_tokens=7, completion_tokens=3, cost_usd=None, latency_s=2, cached=False
    )
    b.record(
        "programmer", prompt_tokens=7, completion_tokens=3, cost_usd=0.0, latency_s=0, cached=True
    )
    total = a.merge(b)
    assert total.total_tokens == 25 and total.cost_usd is None
    assert total.cache_hits == 1 and total.cache_misses == 2
    assert total.per_agent["analyzer"].cost_usd == 0.5
    assert Usage.from_dict(total.to_dict()) == total
