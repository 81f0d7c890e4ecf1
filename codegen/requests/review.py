"""Human review bookkeeping: which requests await a person's verdict, and the verdicts given.

Lives beside the request store (its SQLite file under ``$CODEGEN_HOME/requests/``, opened
and given its schema by ``requests.store.requests_db``), so it survives restarts of the daemon
and the webserver: a request awaiting review holds no run, only a row here. Each wait is one
*review round*; a verdict claims its round with one compare-and-set ``UPDATE`` inside a write
transaction, so of two verdicts racing for the same round exactly one wins, whichever process
gives them.
"""

from __future__ import annotations

import io
import pickle  # nosec B403 - only our own ReviewResult, written by this module, is read back
import secrets
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from codegen.agents.pick import Selection
from codegen.agents.records import Round
from codegen.agents.state import VERDICT_KINDS, HumanVerdict, ReviewResult
from codegen.requests.store import database_path, requests_db

AWAITING, DECIDING, CLOSED = "awaiting", "deciding", "closed"


class ReviewError(ValueError):
    """A verdict that cannot be taken (unknown request, not awaiting review, already given)."""


@dataclass(frozen=True)
class PendingReview:
    request_id: str
    review_round: int
    status: str  # AWAITING | DECIDING | CLOSED
    since: datetime  # when this round started waiting

    def waited_hours(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.since).total_seconds() / 3600


@dataclass(frozen=True)
class Claim:
    """A verdict that won its round; ``token`` lets the run that applies it prove that."""

    verdict: HumanVerdict
    token: str


def _now() -> datetime:
    return datetime.now(UTC)


class ReviewStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = database_path(self.root)

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return requests_db(self.root)

    def open_round(self, request_id: str, review: ReviewResult) -> int:
        """Start waiting for a verdict on ``review``; returns the new round's number."""
        with self._db() as conn:
            row = conn.execute(
                "SELECT review_round FROM reviews WHERE request_id = ?", (request_id,)
            ).fetchone()
            review_round = (row[0] if row else 0) + 1
            conn.execute(
                "INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, NULL, ?)",
                (
                    request_id,
                    review_round,
                    AWAITING,
                    _now().isoformat(timespec="seconds"),
                    pickle.dumps(review),
                ),
            )
        return review_round

    def close(self, request_id: str) -> None:
        """The request no longer waits (approved, or ended otherwise)."""
        with self._db() as conn:
            conn.execute(
                "UPDATE reviews SET status = ?, state = NULL WHERE request_id = ?",
                (CLOSED, request_id),
            )

    def get(self, request_id: str) -> PendingReview | None:
        with self._db() as conn:
            row = conn.execute(
                "SELECT request_id, review_round, status, since FROM reviews WHERE request_id = ?",
                (request_id,),
            ).fetchone()
        return _pending(row) if row else None

    def awaiting(self) -> list[PendingReview]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT request_id, review_round, status, since FROM reviews WHERE status = ?"
                " ORDER BY since, request_id",
                (AWAITING,),
            ).fetchall()
        return [_pending(r) for r in rows]

    def claim(
        self, request_id: str, kind: str, text: str, reviewer: str, review_round: int = 0
    ) -> Claim:
        """Take the verdict for the request's open round, or raise ReviewError saying why not.

        ``review_round`` (0: whichever is open) guards a verdict meant for an earlier round
        from landing on a later one."""
        if kind not in VERDICT_KINDS:
            raise ReviewError(f"unknown verdict {kind!r} (one of {', '.join(VERDICT_KINDS)})")
        if kind == "reject" and not text.strip():
            raise ReviewError("a rejection needs the points to fix")
        token = secrets.token_hex(8)
        decided_at = _now().isoformat(timespec="seconds")
        with self._db() as conn:
            # Compare-and-set: only one UPDATE finds the round still awaiting.
            won = conn.execute(
                "UPDATE reviews SET status = ?, claim = ? WHERE request_id = ? AND status = ?"
                " AND (? = 0 OR review_round = ?)",
                (DECIDING, token, request_id, AWAITING, review_round, review_round),
            ).rowcount
            row = conn.execute(
                "SELECT review_round, status FROM reviews WHERE request_id = ?", (request_id,)
            ).fetchone()
            if not won:
                if row is not None and review_round and row[0] != review_round:
                    raise ReviewError(
                        f"a verdict for review round {review_round} of {request_id} was already "
                        f"given (its open round is {row[0]})"
                        if review_round < row[0]
                        else f"request {request_id} has no review round {review_round}"
                    )
                raise ReviewError(self._why_not(conn, request_id, row))
            verdict = HumanVerdict(kind, text.strip(), reviewer, decided_at, row[0])
            conn.execute(
                "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)",
                (request_id, row[0], kind, verdict.text, reviewer, decided_at, token),
            )
        return Claim(verdict, token)

    def _why_not(
        self, conn: sqlite3.Connection, request_id: str, row: tuple[int, str] | None
    ) -> str:
        if not conn.execute("SELECT 1 FROM requests WHERE id = ?", (request_id,)).fetchone():
            return f"unknown request {request_id!r}"
        if row is None:
            return f"request {request_id} is not awaiting review"
        if row[1] == DECIDING:
            return (
                f"a verdict for review round {row[0]} of {request_id} was already given "
                "and is being applied"
            )
        return f"request {request_id} is not awaiting review (its last review round was {row[0]})"

    def release(self, request_id: str, token: str) -> None:
        """Undo a claim whose run failed before applying it: the round awaits a verdict again."""
        with self._db() as conn:
            reopened = conn.execute(
                "UPDATE reviews SET status = ?, claim = NULL WHERE request_id = ? AND claim = ?"
                " AND status = ?",
                (AWAITING, request_id, token, DECIDING),
            ).rowcount
            if reopened:
                conn.execute(
                    "DELETE FROM verdicts WHERE request_id = ? AND claim = ?", (request_id, token)
                )

    def claimed(self, request_id: str, token: str) -> tuple[HumanVerdict, ReviewResult]:
        """The verdict claimed with ``token`` and the review it resumes; ReviewError if the
        token is not the open round's claim."""
        with self._db() as conn:
            row = conn.execute(
                "SELECT v.kind, v.text, v.reviewer, v.decided_at, v.review_round, r.state"
                " FROM reviews r JOIN verdicts v ON v.request_id = r.request_id"
                " AND v.review_round = r.review_round"
                " WHERE r.request_id = ? AND r.status = ? AND r.claim = ? AND v.claim = ?",
                (request_id, DECIDING, token, token),
            ).fetchone()
        if row is None:
            raise ReviewError(f"no verdict of request {request_id} is waiting under that claim")
        review = _StoredReview(io.BytesIO(row[5])).load()  # nosec B301 - written by open_round
        return HumanVerdict(row[0], row[1], row[2], row[3], row[4]), _typed(review)

    def verdicts(self, request_id: str) -> list[HumanVerdict]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT kind, text, reviewer, decided_at, review_round FROM verdicts"
                " WHERE request_id = ? ORDER BY review_round",
                (request_id,),
            ).fetchall()
        return [HumanVerdict(*r) for r in rows]


# Where the classes a stored review names moved when agents/ was cut into rooms (issue 47):
# module -> (its names that moved, their module now). A request awaiting review across that
# upgrade resumes.
_MOVED: dict[str, tuple[frozenset[str] | None, str]] = {
    "codegen.agents.usage": (None, "codegen.agents.llm.usage"),
    "codegen.agents.records": (
        frozenset(
            {
                "Selection",
                "SelectionGroup",
                "SharedInput",
                "SplitOutput",
                "SplittingInput",
                "CandidateRun",
                "UsedReliability",
            }
        ),
        "codegen.agents.pick.records",
    ),
}


class _StoredReview(pickle.Unpickler):  # nosec B301 - our own ReviewResult, see above
    def find_class(self, module: str, name: str) -> object:
        names, now = _MOVED.get(module, (frozenset(), module))
        if names is None or name in names:
            module = now
        return super().find_class(module, name)


def _typed(review: ReviewResult) -> ReviewResult:
    """A review stored before its verdicts, rounds and selection were records (they were
    JSON dicts then), with them as records: a request awaiting review across an upgrade
    resumes."""
    verdicts = [
        v if isinstance(v, HumanVerdict) else HumanVerdict.from_dict(v) for v in review.verdicts
    ]
    revised = review.revised
    if revised is not None:
        history = [r if isinstance(r, Round) else Round.from_dict(r) for r in revised.history]
        selection = revised.selection
        if isinstance(selection, dict):
            selection = Selection.from_dict(selection)
        revised = replace(revised, history=history, selection=selection)
    return replace(review, verdicts=verdicts, revised=revised)


def _pending(row: tuple[str, int, str, str]) -> PendingReview:
    return PendingReview(row[0], row[1], row[2], datetime.fromisoformat(row[3]))
