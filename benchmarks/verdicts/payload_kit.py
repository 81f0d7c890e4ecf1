"""What issue 46's payloads share (``payload_side`` runs them): the three outcomes of an attack,
the sandbox and task a payload opens, and one line of a verdict. Imports nothing from the
project at the top: a payload imports the ``codegen`` of the tree it attacks when it runs."""

from __future__ import annotations

from typing import Any

SUCCEEDED, BLOCKED, ERROR = "succeeded", "blocked", "error"
Result = dict[str, str]


def result(payload_id: str, attack: str, detail: str) -> Result:
    return {"id": payload_id, "attack": attack, "detail": " ".join(detail.split())[:400]}


def sandbox(backend: str) -> Any:
    from codegen.sandbox import open_sandbox

    return open_sandbox(backend, pool_size=1)


def limits(**changes: Any) -> Any:
    from codegen.sandbox.types import Limits

    return Limits(**{"timeout_s": 30.0, **changes})


def problem(task_id: str, prompt: str, entry_point: str, test: str, **extra: Any) -> Any:
    from codegen.evaluation.humaneval import Problem

    extra.setdefault("canonical_solution", "")
    return Problem(task_id=task_id, prompt=prompt, entry_point=entry_point, test=test, **extra)


def verdict_of(score: Any) -> str:
    """One line of a scorer's verdict: category, whether isolated, the note or message."""
    note = getattr(score, "isolation_note", "") or getattr(score, "message", "")
    return (
        f"passed={score.passed} category={score.category} "
        f"isolated={getattr(score, 'isolated', None)} {note}"
    )


def report_line(report: Any) -> str:
    outcomes = [(t.name.rsplit("::", 1)[-1], t.outcome) for t in report.tests]
    errors = "; ".join(report.collection_errors)[:150]
    return (
        f"ok={report.ok} tests={outcomes} isolated={getattr(report, 'isolated', None)} "
        f"{getattr(report, 'isolation_note', '')} {errors}"
    )


def passed_if_wrong(payload_id: str, passed: bool, line: str) -> Result:
    """A wrong candidate's verdict: the attack succeeded when it came out passed."""
    return result(payload_id, SUCCEEDED if passed else BLOCKED, line)
