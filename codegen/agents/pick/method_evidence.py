"""Each model's reliability from the many small questions a task asks, not only from whole
drafts: for a class, every call of every shared call sequence (a method called on an
instance in some state) and every check of the suite (a worked example, a generated test) is
one question, and each draft answers it (the outcome class it got, or pass/fail). On most
ClassEval tasks no draft is right as a whole class, so whole-draft agreement says little
about who is right; on its method-level questions someone usually is.

``questions_of`` turns a stored selection record into those questions: a column of the
behaviour table, or a check, on which the drafts that ran it do not all agree (a question
everyone answers alike tells nothing about who is more reliable). A worked example is a
question with a known likely answer (passing it), fallible as its author is
(``WORKED_EXAMPLE_LOG_ODDS``).

``estimate_from_questions`` fits the one-coin model of Dawid and Skene (1979) by EM over them:
on each question at most one answer is right, or none is (modelled explicitly: its prior is
learned as the share of questions where no answer is right); a source gives the right answer
with probability ``p``. Each task counts once per source (the mean over its questions), so a
class with many methods does not outweigh one with few, and the interval of ``p`` (a normal
approximation of its Beta posterior over the tasks) says how far the estimate can be trusted:
``Estimate.low``/``high``. Nothing here sees a hidden test.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from codegen.agents.pick.behaviour import UNKNOWN
from codegen.agents.pick.reliability import MAX_P, MIN_P

# A worked example is the prompt author's: right about 19 times in 20 (CheckErrors.sloppy).
WORKED_EXAMPLE_LOG_ODDS = math.log(0.95 / 0.05)
# A wrong draft's value is one of about this many wrong values, each as likely: wrong drafts
# seldom agree by chance, so agreement is evidence against "no draft is right". Without it,
# "no draft is right" explains every question as well as any answer and the fit collapses
# (every model's estimate near zero).
WRONG_VALUES = 4
INTERVAL_Z = 1.645  # a 90% interval on each side's estimate


@dataclass(frozen=True)
class Question:
    """One method-level question of a task: each draft's answer (None: it did not answer,
    e.g. its run stopped before) and, for a worked example, the answer known to be likely
    right. ``check``: a pass/fail question (a check of the suite): one of its two answers is
    right, so "no draft is right" is no hypothesis there, and a wrong draft has one wrong
    answer to give."""

    answers: tuple[Hashable | None, ...]
    known: Hashable | None = None
    check: bool = False


@dataclass(frozen=True)
class TaskQuestions:
    """A task's drafts' sources and its method-level questions."""

    sources: tuple[str, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Estimate:
    """A source's estimated probability of answering a method-level question right, the
    interval around it, and the tasks it rests on."""

    value: float
    low: float
    high: float
    tasks: int


@dataclass(frozen=True)
class MethodReliability:
    estimates: Mapping[str, Estimate]
    none_right: float  # the learned share of value questions no draft answers right
    questions: int
    iterations: int


def with_interval(p: float, tasks: int, prior: tuple[float, float]) -> Estimate:
    """``p`` estimated over ``tasks`` with a Beta(``prior``) pseudo-count, and its interval
    (a normal approximation of the Beta posterior, ``INTERVAL_Z`` each side)."""
    spread = INTERVAL_Z * math.sqrt(p * (1.0 - p) / (sum(prior) + tasks + 1.0))
    return Estimate(
        round(p, 4), round(max(0.0, p - spread), 4), round(min(1.0, p + spread), 4), tasks
    )


def questions_of(
    classes: Sequence[Sequence[int]],
    rows: Sequence[Sequence[bool]],
    trusted: Sequence[bool],
) -> tuple[Question, ...]:
    """The questions a task's observations ask: per behaviour-table column (``classes``: per
    draft, per input, an outcome class; ``UNKNOWN``: not run) and per check (``rows``: per
    draft, per test, passed; ``trusted``: which tests are worked examples), those the drafts
    that answered do not all answer alike."""
    found: list[Question] = []
    count = len(classes)
    for k in range(len(classes[0]) if classes else 0):
        answers = tuple(None if classes[i][k] == UNKNOWN else classes[i][k] for i in range(count))
        if len({a for a in answers if a is not None}) > 1:
            found.append(Question(answers))
    for t in range(len(rows[0]) if rows else 0):
        verdicts = tuple(bool(rows[i][t]) for i in range(count))
        if len(set(verdicts)) > 1:
            found.append(Question(verdicts, True if trusted[t] else None, check=True))
    return tuple(found)


def _log_odds(p: float) -> float:
    p = min(MAX_P, max(MIN_P, p))
    return math.log(p / (1.0 - p))


def _posterior(
    question: Question, sources: Sequence[str], p: Mapping[str, float], none_prior: float
) -> dict[Hashable, float]:
    """Each answer's posterior of being the right one (the rest: no answer is right). An
    answer's score, relative to "no draft is right": its drafts' log-odds, each plus the log of
    the wrong values it would otherwise have been one of."""
    answered = [(i, a) for i, a in enumerate(question.answers) if a is not None]
    distinct = list(dict.fromkeys(a for _, a in answered))
    spread = 0.0 if question.check else math.log(WRONG_VALUES)
    prior = 1.0 if question.check else 1.0 - none_prior
    scores = {
        a: sum(_log_odds(p[sources[i]]) + spread for i, b in answered if b == a)
        + (WORKED_EXAMPLE_LOG_ODDS if question.known is not None and a == question.known else 0.0)
        + math.log(prior / len(distinct))
        for a in distinct
    }
    none_score = -math.inf if question.check else math.log(none_prior)
    top = max([none_score, *scores.values()])
    mass = {a: math.exp(s - top) for a, s in scores.items()}
    total = sum(mass.values()) + (0.0 if question.check else math.exp(none_score - top))
    return {a: m / total for a, m in mass.items()}


def estimate_from_questions(
    tasks: Sequence[TaskQuestions],
    iterations: int = 100,
    prior: tuple[float, float] = (2.0, 2.0),
    tolerance: float = 1e-6,
) -> MethodReliability:
    """Each source's one-coin accuracy on method-level questions, by EM (module docstring).
    ``prior``: a Beta(a, b) pseudo-count on each source's per-task tally."""
    sources = sorted({s for t in tasks for s in t.sources})
    a, b = prior
    p = dict.fromkeys(sources, 0.6)
    none_prior = 0.2
    asked = [t for t in tasks if t.questions]
    done = 0
    tally: dict[str, list[float]] = {s: [0.0, 0.0] for s in sources}
    while done < iterations:
        done += 1
        tally = {s: [0.0, 0.0] for s in sources}
        none_mass, count = 0.0, 0
        for task in asked:
            per_source: dict[str, list[float]] = {}
            for question in task.questions:
                posterior = _posterior(question, task.sources, p, none_prior)
                if not question.check:
                    none_mass += 1.0 - sum(posterior.values())
                    count += 1
                for i, answer in enumerate(question.answers):
                    if answer is not None:
                        seen = per_source.setdefault(task.sources[i], [0.0, 0.0])
                        seen[0] += posterior.get(answer, 0.0)
                        seen[1] += 1.0
            for source, (right, total) in per_source.items():
                tally[source][0] += right / total
                tally[source][1] += 1.0
        new = {s: (a + hits) / (a + b + n) for s, (hits, n) in tally.items()}
        none_prior = min(0.9, max(0.01, none_mass / max(count, 1)))
        change = max((abs(new[s] - p[s]) for s in sources), default=0.0)
        p = new
        if change < tolerance:
            break
    estimates = {s: with_interval(p[s], int(tally[s][1]), prior) for s in sources}
    return MethodReliability(
        estimates, round(none_prior, 4), sum(len(t.questions) for t in asked), done
    )
