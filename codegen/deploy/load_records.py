"""What a load run against the docker deployment reads and reports (``deploy.load``): the
GraphQL queries and the runs they return, each request's outcome, the queue samples, the
faults injected, and the summary ``benchmarks/deploy_load.py`` prints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, NotRequired, TypedDict

RUNS_QUERY = """
query Runs($cursor: String) {
  runsOrError(limit: 500, cursor: $cursor) {
    __typename
    ... on Runs {
      results {
        runId status jobName creationTime startTime endTime
        tags { key value }
      }
    }
    ... on PythonError { message }
  }
}
"""
EVENTS_QUERY = """
query Events($runId: ID!) {
  logsForRun(runId: $runId, limit: 500) {
    __typename
    ... on EventConnection { events { __typename ... on MessageEvent { message } } }
  }
}
"""


class RunTag(TypedDict):
    key: str
    value: str


class Run(TypedDict):
    """One run as RUNS_QUERY asks for it (times in epoch seconds, None before they happen)."""

    runId: str
    status: str  # QUEUED, STARTING, STARTED, SUCCESS, FAILURE, CANCELING, CANCELED, ...
    jobName: str
    creationTime: float | None
    startTime: float | None
    endTime: float | None
    tags: list[RunTag]


# Functional form: a class body would mangle ``__typename``.
RunsOrError = TypedDict(
    "RunsOrError", {"__typename": str, "results": list[Run], "message": str}, total=False
)


class RunsData(TypedDict):
    runsOrError: RunsOrError


class MessageEvent(TypedDict, total=False):
    message: str


class EventConnection(TypedDict, total=False):
    events: list[MessageEvent]


class EventsData(TypedDict):
    logsForRun: EventConnection


class RequestReport(TypedDict, total=False):
    """The fields of a request's report.json (written by the crew) that the load checks."""

    request_id: str
    status: str  # passed, failed, ...


class GenerateSummary(TypedDict, total=False):
    """The fields of ``codegen generate --json``'s summary that the load reads."""

    request_id: str
    status: str


class CliOutcome(NamedTuple):
    exit_code: int
    summary: GenerateSummary | None  # None: it printed none (or not JSON)
    stderr: str  # its tail


class Fault(TypedDict):
    fault: str  # what was done: "daemon SIGKILL", "daemon restarted", "run container SIGKILL"
    t: float  # seconds since the driver started
    run_id: NotRequired[str]  # the run whose container was killed


class QueueSummary(TypedDict):
    max_queued: int
    max_in_flight: int
    wait_s_p50: float | None
    wait_s_p95: float | None
    wait_s_max: float | None


class LoadSummary(TypedDict):
    requests: int
    with_report: int
    statuses: dict[str, int]
    wall_s: float
    throughput_per_min: float
    runs: int
    queue: QueueSummary
    faults: list[Fault]
    unretried_failures: NotRequired[dict[str, list[str]]]
    stray_reports: NotRequired[list[str]]


@dataclass
class RequestOutcome:
    request_id: str
    source: str  # "cli" or "inbox"
    report: RequestReport | None
    runs: list[Run]
    cli_exit: int | None = None


@dataclass
class QueueSample:
    t: float
    queued: int
    in_flight: int


@dataclass
class LoadResult:
    wall_s: float
    outcomes: list[RequestOutcome]
    samples: list[QueueSample]
    faults: list[Fault] = field(default_factory=list)
    container_hosts: set[str] = field(default_factory=set)
    # Failed runs that no retry followed: their event messages and the daemon's log lines
    # about retries, so that a lost retry can be explained after the stack is gone.
    unretried: dict[str, list[str]] = field(default_factory=dict)
    # report.json folders that belong to no submitted request (a request stored twice).
    stray_reports: list[str] = field(default_factory=list)

    def summary(self) -> LoadSummary:
        done = [o for o in self.outcomes if o.report is not None]
        waits = sorted(
            started - created
            for o in self.outcomes
            for r in o.runs
            if (started := r.get("startTime")) and (created := r.get("creationTime"))
        )
        summary = LoadSummary(
            requests=len(self.outcomes),
            with_report=len(done),
            statuses=_count(o.report["status"] for o in done if o.report),
            wall_s=round(self.wall_s, 1),
            throughput_per_min=round(len(done) / self.wall_s * 60, 2) if self.wall_s else 0,
            runs=sum(len(o.runs) for o in self.outcomes),
            queue=QueueSummary(
                max_queued=max((s.queued for s in self.samples), default=0),
                max_in_flight=max((s.in_flight for s in self.samples), default=0),
                wait_s_p50=_pct(waits, 0.5),
                wait_s_p95=_pct(waits, 0.95),
                wait_s_max=round(waits[-1], 1) if waits else None,
            ),
            faults=self.faults,
        )
        if self.unretried:
            summary["unretried_failures"] = self.unretried
        if self.stray_reports:
            summary["stray_reports"] = self.stray_reports
        return summary


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _pct(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return round(sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))], 1)
