"""What a home has learned of each model's reliability: ``$CODEGEN_HOME/reliability.json``.

Two kinds of evidence, both from what the crew observed (no hidden test):

* an evaluation with drafts from several models stores its estimate (``agents.pick.reliability.
  estimate`` over all its tasks) per model, with the number of tasks it rests on, under its
  configuration id (a re-run replaces its own entry, never counts twice);
* a request with drafts from several models stores its observations (each draft's model,
  eligibility and behaviour, ``TaskVotes``) under its request id; all stored requests are
  estimated together when the history is read.

``snapshot`` gives per model (``source_key``: model @ endpoint) the task-weighted mean of
those estimates and the tasks they rest on. A request's pick uses a model's figure only from
``MIN_TASKS`` tasks on (below that it counts as with no history), and a figure in the config
wins (``draft_pick.used_reliabilities``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from codegen.agents.pick.reliability import TaskVotes, estimate, tasks_per_source

# Below this many tasks a model's estimate is not used: with the estimate's Beta(2, 1) prior,
# a handful of tasks moves p a long way and one lucky run would outvote the others.
MIN_TASKS = 20
# The requests kept as evidence (the newest); older ones drop out.
MAX_REQUESTS = 2000
FILE_NAME = "reliability.json"


@dataclass(frozen=True)
class Learned:
    """One model's reliability as the home has learned it (with its interval when an
    evaluation's method-level estimate gave one)."""

    value: float
    tasks: int
    low: float | None = None
    high: float | None = None


class ReliabilityHistory:
    """The home's reliability file: read by requests' picks, written by evaluations and by
    requests with drafts from several models. A missing or unreadable file is no history."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"evaluations": {}, "requests": {}}
        if not isinstance(data, dict):
            return {"evaluations": {}, "requests": {}}
        return {
            "evaluations": data.get("evaluations")
            if isinstance(data.get("evaluations"), dict)
            else {},
            "requests": data.get("requests") if isinstance(data.get("requests"), dict) else {},
        }

    def _write(self, data: Mapping[str, object]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def record_evaluation(
        self, run: str, task_set: str, tasks: int, estimates: Mapping[str, Learned]
    ) -> None:
        """An evaluation's estimates (per model, with the tasks each rests on) under its
        configuration id ``run``."""
        with self._locked():
            data = self._read()
            evaluations = dict(data["evaluations"])
            evaluations[run] = {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "task_set": task_set,
                "tasks": tasks,
                "sources": {k: {"p": v.value, "tasks": v.tasks} for k, v in estimates.items()},
            }
            self._write({**data, "evaluations": evaluations})

    def record_request(self, request_id: str, votes: TaskVotes) -> None:
        """A request's observations, when its drafts came from two models or more."""
        if len(set(votes.sources)) < 2:
            return
        with self._locked():
            data = self._read()
            requests = dict(data["requests"])
            requests[request_id] = {
                "at": time.time(),
                "sources": list(votes.sources),
                "eligible": list(votes.eligible),
                # Only equality matters to the estimate: a behaviour's text stands for it.
                "behaviours": [repr(b) for b in votes.behaviours],
            }
            newest = sorted(requests.items(), key=lambda kv: _at(kv[1]))[-MAX_REQUESTS:]
            self._write({**data, "requests": dict(newest)})

    def snapshot(self) -> dict[str, Learned]:
        """Per model, the task-weighted mean of every stored estimate and the tasks they rest
        on (requests: one estimate over all of them)."""
        data = self._read()
        parts: dict[str, list[tuple[float, int]]] = {}
        for entry in data["evaluations"].values():
            sources = entry.get("sources") if isinstance(entry, dict) else None
            for key, found in (sources or {}).items():
                if isinstance(found, dict) and _number(found.get("p")) is not None:
                    tasks = found.get("tasks")
                    count = tasks if isinstance(tasks, int) and tasks > 0 else 0
                    parts.setdefault(str(key), []).append((float(found["p"]), count))
        votes = [v for v in map(_votes, data["requests"].values()) if v is not None]
        if votes:
            fitted = estimate(votes)
            for key, count in tasks_per_source(votes).items():
                if key in fitted.accuracy:
                    parts.setdefault(key, []).append((fitted.accuracy[key], count))
        out: dict[str, Learned] = {}
        for key, found in parts.items():
            total = sum(n for _, n in found)
            if total > 0:
                out[key] = Learned(round(sum(p * n for p, n in found) / total, 4), total)
        return out


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _at(entry: object) -> float:
    return (_number(entry.get("at")) or 0.0) if isinstance(entry, dict) else 0.0


def _votes(entry: object) -> TaskVotes | None:
    if not isinstance(entry, dict):
        return None
    sources, eligible, behaviours = (entry.get(k) for k in ("sources", "eligible", "behaviours"))
    if not (
        isinstance(sources, list) and isinstance(eligible, list) and isinstance(behaviours, list)
    ):
        return None
    if not sources or not len(sources) == len(eligible) == len(behaviours):
        return None
    return TaskVotes(
        tuple(str(s) for s in sources),
        tuple(bool(e) for e in eligible),
        tuple(str(b) for b in behaviours),
    )


def usable(found: Mapping[str, Learned], minimum: int | None = None) -> dict[str, Learned]:
    """The models whose figure rests on at least ``minimum`` (default ``MIN_TASKS``) tasks."""
    least = MIN_TASKS if minimum is None else minimum
    return {k: v for k, v in found.items() if v.tasks >= least}
