"""`codegen generate`'s exit status per final status: the model's endings are 3 (a spec that
answers another request 7), an outage 5, `missing_dependency` 6 (an outcome: the analyzer
ran; 2 is for refusals before any work)."""

from __future__ import annotations

from typing import Any

import click
import pytest

from codegen.agents.types import MODEL_ENDED, SETTINGS_ENDED, Status
from codegen.orchestration.cli.outcome import show_outcome


def summary(status: str) -> dict[str, Any]:
    return {"request_id": "r1", "status": status, "reason": "why", "artifact_dir": "/x"}


@pytest.mark.parametrize(
    ("status", "code"),
    [(s.value, 3) for s in sorted(MODEL_ENDED - {Status.OFF_TARGET})]
    # A model's ending a script must tell from a weak answer: its own code.
    + [(Status.OFF_TARGET.value, 7)]
    + [(Status.ERROR.value, 5), (Status.AWAITING_REVIEW.value, 4)]
    # The settings leave out what the request needs, found by the analyzer: its own code.
    + [(Status.MISSING_DEPENDENCY.value, 6)],
)
def test_exit_status_says_who_ended_the_request(status: str, code: int) -> None:
    with pytest.raises(click.exceptions.Exit) as ended:
        show_outcome(summary(status), as_json=True)
    assert ended.value.exit_code == code


def test_passed_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    show_outcome(summary(Status.PASSED.value), as_json=True)
    assert '"status": "passed"' in capsys.readouterr().out


def test_every_status_is_passed_model_ended_awaiting_or_an_outage() -> None:
    assert set(SETTINGS_ENDED) == {Status.MISSING_DEPENDENCY}  # each with its own code above
    others = {Status.PASSED, Status.AWAITING_REVIEW, Status.ERROR, *SETTINGS_ENDED}
    assert set(Status) == set(MODEL_ENDED) | others and not MODEL_ENDED & others
    assert {s.value for s in MODEL_ENDED} == {
        "failed_tests",
        "rejected",
        "no_code",
        "budget_exceeded",
        "unrecorded",
        "off_target",
    }
