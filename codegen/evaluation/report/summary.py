"""Summaries of evaluation runs: pass@k, failures by category, tokens, cost, latency, history.

Reads only what the store holds, so the same summary comes out of a CLI run, a Dagster
backfill, or a mix of both (a task retried alone simply replaces its own files).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

from codegen.agents.report import GradeSummary
from codegen.agents.types import MODEL_ENDED, Status
from codegen.evaluation.harness import CREW
from codegen.evaluation.learned import load_learned, load_learned_task
from codegen.evaluation.passk import mean_pass_at_k, reportable_ks
from codegen.evaluation.report.time_limits import TimeLimitVerdicts
from codegen.evaluation.scoring import FAILURE_CATEGORIES, SampleScore, ScoreDict
from codegen.evaluation.store import Candidate, EvalStore, HistoryEntry, save_figure
from codegen.json_types import JSONObject


@dataclass
class TaskRow:
    key: str
    n: int
    c: int
    categories: dict[str, int]
    statuses: dict[str, int]
    tokens: int
    cost_usd: float | None
    latency_s: float
    first_failure: str = ""


@dataclass
class Precision:
    """Of the samples the crew ended ``passed`` (its own tests and the visible examples green,
    reviewer approved), how many the benchmark's hidden tests also pass (``correct``):
    ``precision = correct / passed``; ``recall = correct / hidden_passed`` (of the samples the
    hidden tests pass, the share the crew called passed). None where the denominator is 0."""

    passed: int
    correct: int
    hidden_passed: int
    precision: float | None
    recall: float | None

    @classmethod
    def of(cls, pairs: Sequence[tuple[bool, bool]]) -> Precision:
        """``pairs``: (crew said passed, hidden tests pass) per sample."""
        said = sum(s for s, _ in pairs)
        hidden = sum(h for _, h in pairs)
        correct = sum(s and h for s, h in pairs)
        return cls(
            passed=said,
            correct=correct,
            hidden_passed=hidden,
            precision=correct / said if said else None,
            recall=correct / hidden if hidden else None,
        )

    def describe(self) -> str:
        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        return (
            f"precision of passed {pct(self.precision)} ({self.correct} of {self.passed} "
            f"samples the crew passed pass the hidden tests), recall {pct(self.recall)} "
            f"(of {self.hidden_passed} passing the hidden tests)"
        )


@dataclass
class PlusSummary:
    """HumanEval+ results: pass@k, samples and tasks on the plus tests, and (crew mode) the
    precision of the crew's passed against them."""

    pass_at_k: dict[str, float]
    passed_samples: int
    solved_tasks: int
    precision: Precision | None = None


@dataclass
class Summary:
    config_id: str
    mode: str
    tasks_expected: int
    tasks_scored: int
    samples: int
    passed_samples: int
    solved_tasks: int
    pass_at_k: dict[str, float]
    failures_by_category: dict[str, int]
    crew_statuses: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    cost_per_solved_usd: float | None
    generation_latency_s: float
    scoring_s: float
    # Samples the model ended without passing, by crew status (no_code, unrecorded, ...):
    # scored 0 like any wrong answer. ``outages``: samples ended ``error`` (not a score).
    model_failures: dict[str, int] = field(default_factory=dict)
    outages: int = 0
    # The verdicts a time limit decided, with the load at each: the figures above move with it.
    time_limit: TimeLimitVerdicts = field(default_factory=TimeLimitVerdicts)
    # How far the crew's own ``passed`` can be trusted (crew mode; None otherwise).
    precision: Precision | None = None
    # HumanEval+ (``--plus``): pass@k, samples and tasks on the plus tests, and the precision
    # of the crew's passed against them; None for sets without plus inputs.
    plus: PlusSummary | None = None
    # Drafts from several models (``evaluation.learned``): the figures above are the learned
    # pick's; ``first_pick`` is the pick the crew made during the run, ``learned`` the
    # estimates it was re-picked with. None when nothing was re-picked.
    picks: JSONObject | None = None
    # The reviewer's grades of the samples (crew mode; the reviewer model's opinion, 1-10).
    reviewer_grade: GradeSummary | None = None
    # The models whose replies wrote the samples (``Candidate.models``; ``replay:<model>`` for
    # a replay); empty when no sample says (canonical, a samples file, older records).
    models: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    rows: list[TaskRow] = field(default_factory=list)

    @property
    def pass_at_1(self) -> float | None:
        return self.pass_at_k.get("pass@1")

    @property
    def complete(self) -> bool:
        return not self.missing and self.tasks_scored == self.tasks_expected

    def to_dict(self, with_rows: bool = True) -> JSONObject:
        data = cast(JSONObject, asdict(self))
        if not with_rows:
            data.pop("rows")
        return data

    def failure_rows(self) -> list[TaskRow]:
        return [r for r in self.rows if r.c < r.n]


def _add(a: float | None, b: float | None) -> float | None:
    # One unpriced call makes the total unknown: never report an unknown cost as zero.
    return None if a is None or b is None else a + b


@dataclass
class _TaskResults:
    """One task's stored results: its candidates, the scores of the crew's own (first) picks,
    and the scores reported: the learned re-pick's where there is one, else the first."""

    key: str
    candidates: list[Candidate]
    first_scores: list[SampleScore]
    scores: list[SampleScore]

    def row(self) -> TaskRow:
        scores, cands = self.scores, self.candidates
        task_cost: float | None = 0.0
        for cand in cands:
            task_cost = _add(task_cost, cand.cost_usd)
        first = next((f"{s.category}: {s.message}" for s in scores if not s.passed), "")
        return TaskRow(
            key=self.key,
            n=len(scores),
            c=sum(s.passed for s in scores),
            categories=dict(Counter(s.category for s in scores if not s.passed)),
            statuses=dict(Counter(c.status for c in cands)),
            tokens=sum(c.prompt_tokens + c.completion_tokens for c in cands),
            cost_usd=task_cost,
            latency_s=round(self.latency_s, 3),
            first_failure=first[:200],
        )

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.candidates)

    @property
    def has_plus(self) -> bool:
        return any(s.plus is not None for s in self.scores)


def _task_results(
    store: EvalStore, config_id: str, key: str, learned: JSONObject | None
) -> _TaskResults | None:
    """``key``'s results as stored, or None when it is not scored yet."""
    scores_doc = store.load_scores(config_id, key)
    samples_doc = store.load_samples(config_id, key)
    if not scores_doc or not samples_doc:
        return None
    first_scores = [SampleScore.from_dict(s) for s in scores_doc["scores"]]
    task_learned = (
        load_learned_task(store, config_id, key, str(samples_doc.get("fingerprint", "")))
        if learned
        else None
    )
    raw = task_learned.get("scores") if task_learned else None
    scores = (
        [SampleScore.from_dict(cast(ScoreDict, s)) for s in raw]
        if isinstance(raw, list) and len(raw) == len(first_scores)
        else first_scores
    )
    candidates = [Candidate.from_dict(c) for c in samples_doc["candidates"]]
    return _TaskResults(key, candidates, first_scores, scores)


def _said_passed(task: _TaskResults, hidden: Sequence[bool]) -> list[tuple[bool, bool]]:
    """(the crew said passed, ``hidden`` says passed) per sample of ``task``."""
    return [
        (c.status == Status.PASSED.value, h) for c, h in zip(task.candidates, hidden, strict=True)
    ]


def _plus_summary(tasks: Sequence[_TaskResults], mode: str) -> PlusSummary | None:
    """HumanEval+ figures over the tasks scored on plus inputs (None: no such task)."""
    plus_tasks = [t for t in tasks if t.has_plus]
    if not plus_tasks:
        return None
    plus_counts = [(len(t.scores), sum(bool(s.plus) for s in t.scores)) for t in plus_tasks]
    plus_pairs = [
        pair for t in plus_tasks for pair in _said_passed(t, [bool(s.plus) for s in t.scores])
    ]
    plus_ks = reportable_ks([n for n, _ in plus_counts])
    return PlusSummary(
        pass_at_k={f"pass@{k}": mean_pass_at_k(plus_counts, k) for k in plus_ks},
        passed_samples=sum(c for _, c in plus_counts),
        solved_tasks=sum(c > 0 for _, c in plus_counts),
        precision=Precision.of(plus_pairs) if mode == CREW else None,
    )


def _first_picks(
    tasks: Sequence[_TaskResults], learned: JSONObject | None, ks: Sequence[int]
) -> JSONObject | None:
    """With a learned re-pick: the crew's own picks' figures beside the estimates it used."""
    if not learned or not tasks:
        return None
    first_counts = [(len(t.first_scores), sum(s.passed for s in t.first_scores)) for t in tasks]
    rules = Counter(
        str(c.selection.get("rule")) for t in tasks for c in t.candidates if c.selection
    )
    return {
        "first_pick": {
            "rules": dict(rules),
            "solved_tasks": sum(c > 0 for _, c in first_counts),
            "passed_samples": sum(c for _, c in first_counts),
            "pass_at_k": {f"pass@{k}": mean_pass_at_k(first_counts, k) for k in ks},
        },
        "learned": learned,
    }


def summarize(store: EvalStore, config_id: str, mode: str, keys: Sequence[str]) -> Summary:
    """Aggregate the stored scores of ``keys`` (tasks not scored yet are listed as missing)."""
    learned = load_learned(store, config_id)
    found = [(key, _task_results(store, config_id, key, learned)) for key in keys]
    tasks = [task for _, task in found if task is not None]
    rows = [task.row() for task in tasks]
    categories: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    cost: float | None = 0.0
    for row in rows:
        categories.update(row.categories)
        statuses.update(row.statuses)
        cost = _add(cost, row.cost_usd)
    # The crew's own "passed" was said of the first pick: precision is measured on it.
    verdict_pairs = [
        pair for t in tasks for pair in _said_passed(t, [s.passed for s in t.first_scores])
    ]
    counts = [(r.n, r.c) for r in rows]
    ks = reportable_ks([r.n for r in rows])
    # Unrounded: an exact fraction (3/8, 1/3) must compare equal; displays round it.
    pass_at = {f"pass@{k}": mean_pass_at_k(counts, k) for k in ks} if rows else {}
    solved = sum(r.c > 0 for r in rows)
    gen_latency = scoring_s = 0.0
    for task in tasks:
        gen_latency += task.latency_s
        scoring_s += sum(s.duration_s for s in task.scores)
    return Summary(
        config_id=config_id,
        mode=mode,
        tasks_expected=len(keys),
        tasks_scored=len(rows),
        samples=sum(r.n for r in rows),
        passed_samples=sum(r.c for r in rows),
        solved_tasks=solved,
        pass_at_k=pass_at,
        failures_by_category={c.value: categories.get(c.value, 0) for c in FAILURE_CATEGORIES},
        crew_statuses=dict(statuses),
        model_failures={s.value: statuses[s.value] for s in MODEL_ENDED if statuses[s.value]},
        outages=statuses.get(Status.ERROR.value, 0),
        time_limit=TimeLimitVerdicts.of((t.key, t.scores) for t in tasks),
        precision=Precision.of(verdict_pairs) if mode == CREW else None,
        plus=_plus_summary(tasks, mode),
        picks=_first_picks(tasks, learned, ks),
        reviewer_grade=GradeSummary.of([c.reviewer_grade for t in tasks for c in t.candidates])
        if mode == CREW
        else None,
        prompt_tokens=sum(c.prompt_tokens for t in tasks for c in t.candidates),
        completion_tokens=sum(c.completion_tokens for t in tasks for c in t.candidates),
        models=sorted({m for t in tasks for c in t.candidates for m in c.models or ()}),
        cost_usd=cost,
        cost_per_solved_usd=None if cost is None or solved == 0 else cost / solved,
        generation_latency_s=round(gen_latency, 3),
        scoring_s=round(scoring_s, 3),
        missing=[key for key, task in found if task is None],
        rows=rows,
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def failures_markdown(summary: Summary, limit: int = 50) -> str:
    """Failures by category, then the failing tasks (first ``limit``) with their first error."""
    lines = ["| category | samples |", "|---|---|"]
    lines += [f"| {cat} | {count} |" for cat, count in summary.failures_by_category.items()]
    failing = summary.failure_rows()
    if failing:
        lines += ["", "| task | passed/n | categories | first failure |", "|---|---|---|---|"]
        for row in failing[:limit]:
            cats = ", ".join(f"{k}×{v}" for k, v in sorted(row.categories.items()))
            msg = row.first_failure.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {row.key} | {row.c}/{row.n} | {cats} | {msg} |")
        if len(failing) > limit:
            lines.append(f"\n… and {len(failing) - limit} more failing tasks")
    return "\n".join(lines)


def summary_markdown(summary: Summary) -> str:
    pk = ", ".join(f"{k} = {v:.4f}" for k, v in summary.pass_at_k.items()) or "no tasks scored"
    decided = f" ({summary.time_limit.note})" if summary.time_limit.note else ""
    head = [
        f"**HumanEval ({summary.mode})**: {pk}{decided}",
        "",
        f"- tasks scored: {summary.tasks_scored}/{summary.tasks_expected}"
        + (f" (missing: {len(summary.missing)})" if summary.missing else ""),
        f"- samples passed: {summary.passed_samples}/{summary.samples}; "
        f"tasks solved: {summary.solved_tasks}",
        f"- tokens: {summary.prompt_tokens} prompt + {summary.completion_tokens} completion",
        f"- cost: {_money(summary.cost_usd)}; per solved task: "
        f"{_money(summary.cost_per_solved_usd)}",
        f"- generation latency (sum): {summary.generation_latency_s:.1f}s; "
        f"sandbox scoring (sum): {summary.scoring_s:.1f}s",
        *(
            [f"- model failures: {_counts(summary.model_failures)}"]
            if summary.model_failures
            else []
        ),
        *([f"- {summary.precision.describe()}"] if summary.precision else []),
        *([f"- {summary.reviewer_grade.describe()}"] if summary.reviewer_grade else []),
        *picks_lines(summary),
        *(f"- {line}" for line in summary.time_limit.lines()),
        "",
    ]
    return "\n".join(head) + "\n" + failures_markdown(summary)


def picks_lines(summary: Summary) -> list[str]:
    """Both picks of a run with drafts from several models, and the estimates."""
    if not summary.picks:
        return []
    first = summary.picks.get("first_pick")
    learned = summary.picks.get("learned")
    if not isinstance(first, dict) or not isinstance(learned, dict):
        return []
    estimates = learned.get("estimates")
    shown = ", ".join(
        f"{k} {v.get('p')} ({v.get('tasks')} tasks)"
        for k, v in (estimates.items() if isinstance(estimates, dict) else [])
        if isinstance(v, dict)
    )
    moved = learned.get("moved")
    return [
        f"- pick: learned from this run's {learned.get('tasks')} tasks, solved "
        f"{summary.solved_tasks}; first pick ({_counts(first.get('rules') or {})}) solved "
        f"{first.get('solved_tasks')}; {len(moved) if isinstance(moved, list) else 0} tasks "
        f"moved, re-pick {learned.get('seconds')}s",
        f"- reliability estimates: {shown or 'none'}",
    ]


def history_entry(summary: Summary, label: str, wall_s: float | None = None) -> HistoryEntry:
    entry = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "label": label,
        "config_id": summary.config_id,
        "mode": summary.mode,
        "tasks": summary.tasks_scored,
        "samples": summary.samples,
        "solved": summary.solved_tasks,
        **summary.pass_at_k,
        **({f"plus {k}": v for k, v in summary.plus.pass_at_k.items()} if summary.plus else {}),
        "precision": summary.precision.precision if summary.precision else None,
        "tokens": summary.prompt_tokens + summary.completion_tokens,
        "cost_usd": summary.cost_usd,
        "cost_per_solved_usd": summary.cost_per_solved_usd,
        "wall_s": None if wall_s is None else round(wall_s, 2),
    }
    if summary.models:
        entry["models"] = summary.models
    first = (summary.picks or {}).get("first_pick")
    learned = (summary.picks or {}).get("learned")
    if isinstance(first, dict) and isinstance(learned, dict):
        # Both picks: pass@1 above is the learned one's.
        pass_at = first.get("pass_at_k")
        entry["first pass@1"] = pass_at.get("pass@1") if isinstance(pass_at, dict) else None
        entry["reliability"] = learned.get("estimates")
    return cast(HistoryEntry, entry)


def plot_history(entries: Sequence[HistoryEntry], path: Path) -> Path:
    """PNG of pass@1 and cost per solved task across runs (oldest left)."""
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on servers or in tests
    import matplotlib.pyplot as plt

    runs = list(entries)[-30:]
    xs = list(range(1, len(runs) + 1))
    labels = [str(e.get("label") or e.get("config_id", ""))[:18] for e in runs]
    pass1 = [e.get("pass@1") for e in runs]
    cost = [e.get("cost_per_solved_usd") for e in runs]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(xs, [float("nan") if v is None else v for v in pass1], marker="o", label="pass@1")
    precision = [e.get("precision") for e in runs]
    if any(v is not None for v in precision):
        top.plot(
            xs,
            [float("nan") if v is None else v for v in precision],
            marker="x",
            linestyle="--",
            label="precision of passed",
        )
        top.legend(fontsize=7)
    top.set_ylabel("pass@1")
    top.set_ylim(0, 1.05)
    top.set_title("HumanEval runs")
    bottom.plot(xs, [float("nan") if v is None else v for v in cost], marker="o", color="C1")
    bottom.set_ylabel("cost per solved task (USD)")
    bottom.set_xticks(xs, labels, rotation=30, ha="right", fontsize=7)
    return save_figure(fig, path)
