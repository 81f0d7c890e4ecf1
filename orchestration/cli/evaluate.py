"""``codegen eval``: benchmark runs (HumanEval) with honest pass@k."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from agents.evaluation.harness import CANONICAL, CREW, TaskOutcome, evaluate
from agents.evaluation.humaneval import select_keys
from agents.evaluation.report import history_entry, plot_history, summarize
from orchestration.config import get_settings


@click.group(name="eval")
def eval_group() -> None:
    """Run public benchmarks through the crew and score them in the sandbox."""


def _progress(verbose: bool) -> Any:
    def on_done(key: str, outcome: TaskOutcome | None, error: str | None, done: int) -> None:
        if outcome is not None:
            cached = " (cached)" if outcome.generation_cached and outcome.scoring_cached else ""
            what = f"{outcome.c}/{outcome.n} passed {','.join(sorted(set(outcome.categories)))}"
        else:
            cached, what = "", f"could not run: {error}"
        if verbose or error or (outcome and outcome.c < outcome.n) or done % 10 == 0:
            click.echo(f"[{done}] {key}: {what}{cached}", err=True)

    return on_done


@eval_group.command(name="humaneval")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@click.option(
    "--task", "tasks", multiple=True, help="Only these tasks (HumanEval/3, 3); repeatable."
)
@click.option(
    "--samples",
    type=click.IntRange(min=1, max=200),
    help="Candidates per task (default: [eval] samples); pass@10 needs 10.",
)
@click.option(
    "--canonical",
    is_flag=True,
    help="Submit the benchmark's own solutions: checks the harness, not a model.",
)
@click.option("--workers", type=click.IntRange(min=1, max=64), help="Tasks run concurrently.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Report every task on stderr.")
def humaneval(
    limit: int | None,
    tasks: tuple[str, ...],
    samples: int | None,
    canonical: bool,
    workers: int | None,
    as_json: bool,
    verbose: bool,
) -> None:
    """Generate candidates for HumanEval tasks and score them on the hidden tests.

    The crew sees each task's prompt only; hidden tests run in the sandbox afterwards. Finished
    tasks are cached under $CODEGEN_HOME/eval, so a re-run only does what changed or failed.
    """
    from orchestration.evaluation import eval_session

    if canonical and samples not in (None, 1):
        raise click.UsageError("--canonical scores the one canonical solution: drop --samples")
    try:
        keys = select_keys(limit, list(tasks) or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    settings = get_settings()
    if workers:
        settings = settings.model_copy(
            update={"eval": settings.eval.model_copy(update={"workers": workers})}
        )
    mode = CANONICAL if canonical else CREW
    click.echo(f"HumanEval ({mode}): {len(keys)} tasks", err=True)
    started = time.perf_counter()
    with eval_session(settings, mode, samples) as s:
        click.echo(
            f"config {s.config.config_id}, sandbox {s.sandbox.backend}, {s.workers} workers",
            err=True,
        )
        outcomes, errors = evaluate(
            s.store,
            s.config,
            keys,
            s.generator,
            s.sandbox,
            workers=s.workers,
            on_done=_progress(verbose),
        )
        store, config_id = s.store, s.config.config_id
        label = "canonical" if canonical else str(s.config.identity["default"]["model"])
    wall = time.perf_counter() - started
    summary = summarize(store, config_id, mode, keys)
    entry = history_entry(summary, label=label, wall_s=wall)
    store.append_history(entry)
    plot = plot_history([e for e in store.history() if e["mode"] == mode], store.plot_path)
    result: dict[str, Any] = {
        **summary.to_dict(with_rows=False),
        "wall_s": round(wall, 2),
        "seconds_per_task": round(wall / max(1, len(keys)), 3),
        "cached_tasks": sum(o.generation_cached and o.scoring_cached for o in outcomes),
        "errors": errors,
        "plot": str(plot),
        "results_dir": str(store.config_dir(config_id)),
    }
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        pk = ", ".join(f"{k} = {v:.4f}" for k, v in summary.pass_at_k.items()) or "n/a"
        click.echo(f"HumanEval {mode}: {pk}")
        click.echo(
            f"passed {summary.passed_samples}/{summary.samples} samples, "
            f"solved {summary.solved_tasks}/{summary.tasks_scored} tasks"
        )
        fails = ", ".join(f"{k} {v}" for k, v in summary.failures_by_category.items() if v)
        click.echo(f"failures: {fails or 'none'}")
        cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
        click.echo(
            f"tokens {summary.prompt_tokens + summary.completion_tokens}, cost {cost}, "
            f"time {wall:.1f}s ({result['seconds_per_task']:.2f}s/task)"
        )
        click.echo(f"results {result['results_dir']}; plot {plot}")
    if errors:
        first = next(iter(errors.items()))
        raise click.ClickException(
            f"{len(errors)} of {len(keys)} tasks could not run (first: {first[0]}: {first[1]}); "
            "re-run to retry them, finished tasks are cached"
        )
    if canonical and summary.passed_samples < summary.samples:
        raise click.ClickException(
            f"canonical solutions scored {summary.passed_samples}/{summary.samples}: "
            "the scoring harness is broken"
        )
    sys.stderr.flush()
