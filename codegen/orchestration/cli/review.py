"""``codegen review ID --approve | --reject POINTS`` and ``codegen requests [--status S]``."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime

import click

from codegen.agents.artifacts import is_request_id
from codegen.agents.report import RequestReport
from codegen.agents.types import Status
from codegen.json_types import JSONObject
from codegen.orchestration.cli.exits import Refused
from codegen.orchestration.cli.outcome import show_outcome, summarize
from codegen.orchestration.instance import configured_instance
from codegen.requests.review import ReviewError, ReviewStore
from codegen.requests.store import RequestStore, artifact_dir
from codegen.settings import get_settings

# A request without report.json yet: waiting for the daemon's sensor, or its run under way.
UNDER_WAY = ("queued", "running")
LISTED_STATUSES = (*UNDER_WAY, *(s.value for s in Status))


@click.command()
@click.argument("request_id")
@click.option("--approve", is_flag=True, help="Accept the code; the documenter writes the README.")
@click.option("--reject", "points", metavar="POINTS", help="Send it back with these points.")
@click.option("--note", default="", help="A note recorded with the approval.")
@click.option("--reviewer", help="Who decides (default: the login name).")
@click.option(
    "--round",
    "review_round",
    type=click.IntRange(1),
    help="The review round this verdict is for (refused if another round is open).",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def review(
    request_id: str,
    approve: bool,
    points: str | None,
    note: str,
    reviewer: str | None,
    review_round: int | None,
    as_json: bool,
) -> None:
    """Give a person's verdict on REQUEST_ID, which awaits review.

    Approval continues to the documentation step; rejection re-enters refinement with
    POINTS as feedback (rounds and budget count on), then the request waits for review again.
    Exit status as for `codegen generate` (docs/cli.md, "Exit codes").
    """
    if approve == (points is not None):
        raise click.UsageError("give exactly one of --approve and --reject POINTS")
    if points is not None and not points.strip():
        raise click.UsageError("--reject needs the points to fix")
    if points is not None and note:
        raise click.UsageError("--note goes with --approve; a rejection's text is its points")
    if not is_request_id(request_id):
        raise click.UsageError(f"not a request id: {request_id!r}")
    settings = get_settings()
    kind, text = ("approve", note) if approve else ("reject", points or "")
    reviews = ReviewStore(settings.requests_dir)
    try:
        claim = reviews.claim(
            request_id, kind, text, reviewer or getpass.getuser(), review_round or 0
        )
    except ReviewError as exc:  # unknown request, not awaiting review, already decided
        raise Refused(str(exc)) from exc
    from codegen.orchestration.launch import run_in_this_process, verdict_run_config

    click.echo(
        f"request {request_id}: {kind} (review round {claim.verdict.review_round})", err=True
    )
    instance = configured_instance(settings)
    run_id, success = run_in_this_process(
        instance,
        request_id,
        "review_job",
        verdict_run_config(kind, text, claim.verdict.reviewer, claim.token),
    )
    folder = artifact_dir(settings.artifacts_dir, request_id)
    report = RequestReport.load(folder)
    if not success or report is None:
        reviews.release(request_id, claim.token)  # not applied: the round awaits a verdict
        raise click.ClickException(
            f"review run {run_id} for request {request_id} failed (see the Dagster UI)"
        )
    show_outcome(summarize(report, run_id, folder), as_json)


def _age(created_at: str, now: datetime) -> str:
    seconds = int((now - datetime.fromisoformat(created_at)).total_seconds())
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


@click.command()
@click.option("--status", type=click.Choice(LISTED_STATUSES), help="Only requests in this status.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def requests(status: str | None, as_json: bool) -> None:
    """List requests with their status, age, rounds and cost (oldest first)."""
    settings = get_settings()
    now = datetime.now(UTC)
    reviews = ReviewStore(settings.requests_dir)
    rows: list[JSONObject] = []
    for req in RequestStore(settings.requests_dir).all():
        report = RequestReport.load(artifact_dir(settings.artifacts_dir, req.id))
        if report is not None:
            current = report.status.value
        else:
            current = "queued" if req.state == "queued" else "running"
        if status and current != status:
            continue
        pending = reviews.get(req.id) if current == Status.AWAITING_REVIEW else None
        rows.append(
            {
                "request_id": req.id,
                "status": current,
                "age": _age(req.created_at, now),
                "created_at": req.created_at,
                "rounds": report.rounds if report else 0,
                "cost_usd": report.usage.cost_usd if report else 0.0,
                "review_round": pending.review_round if pending else None,
                "waiting_hours": round(pending.waited_hours(now), 3) if pending else None,
                "request": " ".join(req.text.split())[:60],
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'ID':20}  {'STATUS':16}  {'AGE':>6}  {'ROUNDS':>6}  {'COST':>10}  REQUEST")
    for row in rows:
        cost = row["cost_usd"]
        shown = "unknown" if cost is None else f"${cost:.6f}"
        click.echo(
            f"{row['request_id']:20}  {row['status']:16}  {row['age']:>6}  {row['rounds']:>6}  "
            f"{shown:>10}  {row['request']}"
        )
