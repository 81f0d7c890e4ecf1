"""How far each candidate source (a model, an endpoint) can be trusted, without hidden tests.

When the candidates of a task come from several models, a plain count of agreeing drafts lets
several weaker models that agree with each other outvote a stronger one. This module estimates
each source's reliability across the tasks of one evaluation from what the crew can observe,
and turns it into a weight per candidate that ``agreement.agreement_pick`` sums instead of
counting members.

The observations per task (``TaskVotes``): each candidate's source, whether it is *eligible*
(it passes the most worked examples among the task's candidates and loads; a candidate that
fails an example the others pass is known to be wrong) and its behaviour group (candidates
with the same outputs on every shared input and the same suite verdicts share one).

``estimate`` fits the one-coin model of Dawid and Skene (1979) by EM: each task has at most one
correct behaviour (or none); source ``m`` produces the correct one with probability ``p_m``,
independently of the other sources. The E-step gives each behaviour group of a task its
posterior of being the correct one; the M-step sets ``p_m`` to the smoothed mean posterior of
its candidates (an ineligible candidate counts as wrong). Nothing here sees a hidden test.

Under that model the most probable behaviour of a task is the group with the largest sum of
log-odds ``log(p_m / (1 - p_m))`` over its members (``Reliability.weight``); with one source,
or with no estimate at all, every weight is equal and the pick is today's count.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from codegen.agents.pick.records import UsedReliability

MIN_P = 0.05
MAX_P = 0.98
# The most of the tasks ``estimate`` lets "no candidate is right" explain. An estimate that
# reaches it found no right behaviour on half the tasks or more: whole candidates cannot tell
# the sources apart there (``whole_drafts_tell``), and the estimate must come from smaller
# questions (``agents.pick.method_evidence``).
NONE_CAP = 0.5
PRIOR = (2.0, 1.0)  # ``estimate``'s Beta pseudo-count on each source's tally
UNKNOWN = math.e / (1.0 + math.e)  # p whose log-odds are 1.0: a source with no estimate


@dataclass(frozen=True)
class TaskVotes:
    """One task as the estimate sees it: per candidate, its source, whether it is eligible,
    and its behaviour (a hashable key; equal keys behave the same)."""

    sources: tuple[str, ...]
    eligible: tuple[bool, ...]
    behaviours: tuple[Hashable, ...]


@dataclass(frozen=True)
class Reliability:
    """Each source's estimated probability of producing a task's correct behaviour."""

    accuracy: Mapping[str, float]
    iterations: int = 0
    none_correct: float = 0.0  # the estimated share of tasks where no behaviour is correct

    def weight(self, source: str) -> float:
        """The log-odds of ``source`` (equal weights, 1.0, for a source never seen)."""
        if source not in self.accuracy:
            return 1.0
        p = min(MAX_P, max(MIN_P, self.accuracy[source]))
        # A source no better than a coin still counts a little: weights stay positive.
        return max(0.05, math.log(p / (1.0 - p)))

    def weights(self, sources: Sequence[str]) -> list[float]:
        return [self.weight(s) for s in sources]

    def probability(self, source: str) -> float:
        """The estimated accuracy of ``source`` (a source never seen: UNKNOWN, whose log-odds
        are 1.0, the weight ``weight`` gives it)."""
        p = self.accuracy.get(source, UNKNOWN)
        return min(MAX_P, max(MIN_P, p))

    def probabilities(self, sources: Sequence[str]) -> list[float]:
        """Priors for ``agreement_pick(..., support="similarity")`` and for
        ``posterior.suspect_checks``: each draft's probability of being right."""
        return [self.probability(s) for s in sources]


def _groups(task: TaskVotes) -> dict[Hashable, list[int]]:
    groups: dict[Hashable, list[int]] = {}
    for i, (ok, key) in enumerate(zip(task.eligible, task.behaviours, strict=True)):
        if ok:
            groups.setdefault(key, []).append(i)
    return groups


def estimate(
    tasks: Sequence[TaskVotes],
    iterations: int = 100,
    prior: tuple[float, float] = PRIOR,
    tolerance: float = 1e-6,
) -> Reliability:
    """The one-coin Dawid-Skene estimate of each source's accuracy over ``tasks`` (EM from
    the share of each source's candidates that are eligible and agree with most others).

    ``prior`` is a Beta(a, b) pseudo-count added to each source's tally (a source seen on
    few tasks stays near a / (a + b))."""
    sources = sorted({s for t in tasks for s in t.sources})
    if not sources:
        return Reliability({})
    a, b = prior
    # Start: the share of a source's candidates that are eligible and in a group of two or more.
    start: dict[str, list[float]] = {s: [a, a + b] for s in sources}
    for task in tasks:
        groups = _groups(task)
        for i, source in enumerate(task.sources):
            key = task.behaviours[i]
            agreed = task.eligible[i] and len(groups.get(key, [])) > 1
            start[source][0] += 1.0 if agreed else 0.5 * task.eligible[i]
            start[source][1] += 1.0
    p = {s: hits / total for s, (hits, total) in start.items()}
    none_prior = 0.1
    done = 0
    while done < iterations:
        done += 1
        tally = {s: [a, a + b] for s in sources}
        none_mass = 0.0
        for task in tasks:
            groups = _groups(task)
            # log-likelihood of "nothing is correct": every candidate wrong
            wrong = sum(math.log(1.0 - _clip(p[s])) for s in task.sources)
            scores: dict[Hashable, float] = {}
            for key, members in groups.items():
                scores[key] = (
                    wrong
                    + sum(math.log(_clip(p[task.sources[i]])) for i in members)
                    - sum(math.log(1.0 - _clip(p[task.sources[i]])) for i in members)
                    + math.log((1.0 - none_prior) / len(groups))
                )
            none_score = wrong + math.log(none_prior) if groups else 0.0
            top = max([none_score, *scores.values()])
            mass = {k: math.exp(v - top) for k, v in scores.items()}
            total = sum(mass.values()) + math.exp(none_score - top)
            posterior = {k: v / total for k, v in mass.items()}
            none_mass += 1.0 - sum(posterior.values())
            for i, source in enumerate(task.sources):
                right = posterior.get(task.behaviours[i], 0.0) if task.eligible[i] else 0.0
                tally[source][0] += right
                tally[source][1] += 1.0
        new = {s: hits / total for s, (hits, total) in tally.items()}
        none_prior = min(NONE_CAP, max(0.01, none_mass / max(len(tasks), 1)))
        change = max(abs(new[s] - p[s]) for s in sources)
        p = new
        if change < tolerance:
            break
    return Reliability(
        {s: round(v, 4) for s, v in p.items()}, iterations=done, none_correct=none_prior
    )


def whole_drafts_tell(fitted: Reliability) -> bool:
    """Whether a whole-candidate estimate can tell its sources apart: it found a right
    behaviour on more than half the tasks (``NONE_CAP``)."""
    return fitted.none_correct < NONE_CAP


def _clip(p: float) -> float:
    return min(MAX_P, max(MIN_P, p))


def priors_from_history(
    models: Sequence[str], reliabilities: Sequence[float | None]
) -> list[float] | None:
    """Per draft, its model's history (``[llm] candidates`` entries' ``reliability``) as the
    prior of ``agreement_pick(..., support="similarity", errors=...)`` (the crew's pick with a
    history); a draft whose model has none counts ``UNKNOWN``. None when no draft's model has
    a history: the pick is then today's count."""
    if len(models) != len(reliabilities):
        raise ValueError("models != reliabilities")
    if all(r is None for r in reliabilities):
        return None
    # Each draft its own entry's figure (two entries may name one model on two endpoints).
    return [min(MAX_P, max(MIN_P, UNKNOWN if r is None else r)) for r in reliabilities]


# -- where a draft's reliability comes from, and the selection record as evidence ----------
CONFIG = "config"  # an ``[llm] candidates`` entry's ``reliability``
EVALUATION = "evaluation"  # estimated over this evaluation's own tasks (its re-pick)
HISTORY = "history"  # estimated by earlier evaluations and requests in the same home
NONE = "none"  # no figure: the draft counts as today (equal votes, or UNKNOWN beside others)
# Estimated over this evaluation's method-level questions (whole drafts told the models
# nothing): it says when one model clearly dominates (``agents.pick.dominance``) but does not
# weigh votes: on ClassEval's 70 tuning tasks, votes weighed by it lost 2 classes against
# equal votes, while equal votes kept the first pick's 26 (best single file: 24).
METHOD_LEVEL = "method_level"
ORIGINS = (CONFIG, EVALUATION, HISTORY, METHOD_LEVEL, NONE)


def vote_weights(used: Sequence[UsedReliability]) -> list[float | None]:
    """Per draft, the reliability its vote counts with: its value, except a method-level
    estimate's (None: an equal vote)."""
    return [None if u.source == METHOD_LEVEL else u.value for u in used]


def source_key(model: str, endpoint: str) -> str:
    """The name a model's reliability is kept under: its model and endpoint (one model
    served by two endpoints is two sources). ``endpoint`` must be shown without credentials."""
    return f"{model} @ {endpoint}"


def votes_of(selection: Mapping[str, object], sources: Sequence[str]) -> TaskVotes | None:
    """What the estimate sees of one task in a stored selection record (``Selection.to_dict``):
    each draft's eligibility and behaviour as the pick recorded them (its ``group``; -1: not
    eligible), else, with no shared input, its verdicts on the trusted tests. None when the
    record does not hold one entry per source."""
    raw = selection.get("candidates")
    entries = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    cands = sorted(entries, key=lambda c: int(c.get("candidate", 0)))
    if not cands or len(cands) != len(sources):
        return None
    groups = [c.get("group") for c in cands]
    if all(isinstance(g, int) for g in groups):
        eligible = tuple(int(g) >= 0 for g in groups)  # type: ignore[call-overload]
        behaviours: tuple[Hashable, ...] = tuple(groups)  # type: ignore[arg-type]
    else:  # no shared input: the examples and suite verdicts are all there is
        found = selection.get("trusted_tests")
        trusted = set(found) if isinstance(found, list) else set()

        def outcomes(c: Mapping[str, object]) -> dict[str, bool]:
            o = c.get("outcomes")
            return {str(k): bool(v) for k, v in o.items()} if isinstance(o, dict) else {}

        passed = [sum(v for k, v in outcomes(c).items() if k in trusted) for c in cands]
        eligible = tuple(p == max(passed) for p in passed)
        behaviours = tuple(tuple(sorted(outcomes(c).items())) for c in cands)
    return TaskVotes(sources=tuple(sources), eligible=eligible, behaviours=behaviours)


def tasks_per_source(tasks: Sequence[TaskVotes]) -> dict[str, int]:
    """How many tasks each source has a draft in: the evidence its estimate rests on."""
    count: dict[str, int] = {}
    for task in tasks:
        for source in set(task.sources):
            count[source] = count.get(source, 0) + 1
    return count
