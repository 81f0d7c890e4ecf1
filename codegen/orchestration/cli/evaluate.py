"""``codegen eval``: benchmark runs (HumanEval, MBPP, any task file) with honest pass@k."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import click

from codegen.agents.report import counted
from codegen.evaluation.harness import CANONICAL, CREW, SAMPLES, Progress, TaskOutcome
from codegen.evaluation.report import EvalOutage, HarnessBroken, Report
from codegen.evaluation.shapes import package_set_of, shapes_in
from codegen.evaluation.staged import StagedFileError, StagedFiles
from codegen.evaluation.store import EvalStore
from codegen.evaluation.tasks import TaskSet
from codegen.json_types import JSONObject
from codegen.orchestration.cli.eval_options import RunOptions, run_options
from codegen.orchestration.cli.exits import OUTAGE_EXIT, Refused
from codegen.orchestration.instance import configured_instance
from codegen.settings import Settings, get_settings

if TYPE_CHECKING:
    from codegen.evaluation.samples_file import SamplesFile
    from codegen.evaluation.session import BackfillPlan, EvalSession
    from codegen.evaluation.task_shape import TaskShape
    from codegen.orchestration.backfill import BackfillProgress
    from codegen.orchestration.cli.replay import RecordingRun


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
    from codegen.evaluation.store import plot_runs, run_rows, runs_text

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


@eval_group.command(name="humaneval")
@click.option(
    "--plus",
    "plus_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="HumanEval+ (EvalPlus's HumanEvalPlus.jsonl.gz): score base and plus per task as "
    "EvalPlus does, every solution in the sandbox.",
)
@run_options
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
@run_options
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
@run_options
def mbpp(task_file: Path, **options: Unpack[RunOptions]) -> None:
    """Run MBPP from its task file (either published shape); the visible example assertions
    are what the crew sees, the hidden test scores. --backfill runs it as a Dagster backfill
    (one dynamic partition per task, keyed by the file's digest)."""
    _evaluate(_task_set(task_file, "MBPP"), **options)


@eval_group.command(name="classeval")
@click.option(
    "--tasks",
    "task_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="ClassEval's task file (the authors' ClassEval_data.json, gzip too).",
)
@run_options
def classeval(task_file: Path, **options: Unpack[RunOptions]) -> None:
    """Run ClassEval's class-level tasks: each unittest class of a task runs on its own in the
    sandbox (package set 'classeval'); reports class success, method success, their partial
    variants and pass@k as the benchmark's authors define them. --samples-file also takes
    the authors' replies files ([{task_id, predict: [reply, ...]}]), read by their rules."""
    from codegen.evaluation.classeval import SHAPE

    found = _task_set(task_file, "ClassEval")
    if not any(p.shape == SHAPE for p in found.problems.values()):
        raise click.UsageError(f"--tasks: {task_file} is not a ClassEval task file (a JSON list)")
    _evaluate(found, **options)


@eval_group.command(name="apps")
@click.option(
    "--tasks",
    "task_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="An APPS task file: JSONL with description, sample_io and test_list ({input, "
    "output} cases), as MapCoder's selection has it.",
)
@run_options
def apps_command(task_file: Path, **options: Unpack[RunOptions]) -> None:
    """Run APPS: whole programs, each hidden input on a fresh process's stdin in the sandbox,
    stdout compared with the expected lines (trailing whitespace ignored), a time limit per
    input. --samples-file also takes MapCoder's rows (each task's source_codes[-1]) and
    reports their own is_solved beside the sandbox's verdicts, with every disagreement."""
    from codegen.evaluation.humaneval import PROGRAM

    found = _task_set(task_file, "APPS")
    if not any(p.shape == PROGRAM for p in found.problems.values()):
        raise click.UsageError(f"--tasks: {task_file} is not an APPS task file (test_list cases)")
    _evaluate(found, **options)


def _shape_sandbox(settings: Settings, shape: TaskShape) -> Settings:
    """A task shape whose tests need a package set (ClassEval's import numpy, pandas, nltk,
    ...) runs with it (a backfill's runs too: its plan carries the set in a run tag)."""
    wanted = shape.package_set
    if wanted is None or settings.sandbox.package_set == wanted:
        return settings
    click.echo(f"{shape.title}: the sandbox runs with package set {wanted!r}", err=True)
    sandbox = settings.sandbox.model_copy(update={"package_set": wanted})
    return settings.model_copy(update={"sandbox": sandbox})


def _task_set(path: Path, name: str | None) -> TaskSet:
    """The task file at ``path``, checked whole (a bad one is refused: ``exits.py``), read
    after the modules of ``[eval] benchmarks`` registered their own task shapes."""
    from codegen.evaluation.benchmarks import BenchmarkError, registered
    from codegen.evaluation.tasks import read_task_file

    try:
        registered(get_settings().eval.benchmarks)
    except BenchmarkError as exc:
        raise click.UsageError(str(exc)) from None
    return read_task_file(path, name=f"{name} ({path.name})" if name else None)


def _usage_errors(task_set: TaskSet, options: RunOptions) -> None:
    """Flags that cannot go together, refused before anything runs or is stored."""
    canonical, samples = options["canonical"], options["samples"]
    if canonical and samples not in (None, 1):
        raise click.UsageError("--canonical scores the one canonical solution: drop --samples")
    if canonical and not task_set.has_canonical:
        raise click.UsageError(
            f"--canonical: {task_set.name} has no reference solution (canonical_solution) "
            "for every task"
        )
    if options["samples_file"] is not None:
        clash = [
            name
            for name, given in (
                ("--canonical", canonical),
                ("--samples", samples is not None),
                ("--limit", options["limit"] is not None),
                ("--task", bool(options["tasks"])),
                ("--record", options["record_path"] is not None),
                ("--candidates", options["candidates"] is not None),
            )
            if given
        ]
        if clash:
            raise click.UsageError(
                f"--samples-file scores the tasks in the file: drop {', '.join(clash)}"
            )
    if options["record_path"] is not None and (
        canonical or options["backfill"] or options["submit_only"]
    ):
        raise click.UsageError(
            "--record records the crew's own calls: not with --canonical or --backfill"
        )


def _with_overrides(settings: Settings, options: RunOptions, backfill: bool) -> Settings:
    """``settings`` with the run's flags applied. A backfill's runs read settings in their own
    processes: the overrides travel in the environment too (they are part of the crew's
    identity, so the cache keeps them apart)."""
    if options["workers"]:
        eval_ = settings.eval.model_copy(update={"workers": options["workers"]})
        settings = settings.model_copy(update={"eval": eval_})
    if options["candidates"] is not None:
        # With a list of candidates, N drafts are its first N entries (repeated when longer).
        chosen = settings.llm.candidates_for(options["candidates"])
        os.environ["CODEGEN_LLM__CANDIDATES"] = json.dumps(
            chosen if isinstance(chosen, int) else [c.model_dump(exclude_none=True) for c in chosen]
        )
        llm = settings.llm.model_copy(update={"candidates": chosen})
        settings = settings.model_copy(update={"llm": llm})
    samples = options["samples"]
    if backfill and samples is not None:
        os.environ["CODEGEN_EVAL__SAMPLES"] = str(samples)
        eval_ = settings.eval.model_copy(update={"samples": samples})
        settings = settings.model_copy(update={"eval": eval_})
    return settings


def _evaluate(task_set: TaskSet, **options: Unpack[RunOptions]) -> None:
    """Generate candidates for ``task_set``'s tasks (or score its canonical solutions or a
    samples file) and score them on the hidden tests: here, or as a Dagster backfill."""
    from codegen.composition import llm_route, unset_key_envs
    from codegen.orchestration.launch import open_session

    _usage_errors(task_set, options)
    try:
        keys = task_set.select(options["limit"], list(options["tasks"]) or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    backfill = options["backfill"] or options["submit_only"]
    settings = _with_overrides(get_settings(), options, backfill)
    shaped = package_set_of(task_set.problems.values())
    if shaped is not None:
        settings = _shape_sandbox(settings, shaped)
    if options["samples_file"] is not None:
        _score_samples_file(settings, options["samples_file"], task_set, options)
        return
    canonical = options["canonical"]
    unset = unset_key_envs(llm_route(settings))
    if unset and not canonical:
        raise Refused(unset)
    mode = CANONICAL if canonical else CREW
    from codegen.orchestration.cli.replay import RecordingRun

    # --record (never with --backfill): every task generated again, every reply recorded.
    recording = RecordingRun(options["record_path"]) if options["record_path"] else None
    click.echo(f"{task_set.name} ({mode}): {counted(len(keys), 'task')}", err=True)
    record_to = recording.path if recording else None
    session = open_session(settings, task_set, mode, options["samples"], record_to=record_to)
    if backfill:
        _backfill(settings, session, keys, options)
        return
    with recording or contextlib.nullcontext():
        _run_here(settings, session, keys, options, recording)


def _run_here(
    settings: Settings,
    session: EvalSession,
    keys: list[str],
    options: RunOptions,
    recording: RecordingRun | None = None,
) -> None:
    """The session's tasks in this process, then its report (and ``recording``'s outcome)."""
    from codegen.orchestration.launch import sandbox_resource
    from codegen.sandbox import SandboxUnavailable

    try:
        ran = session.run(
            keys,
            sandbox_resource(settings),
            on_done=_progress(options["verbose"]),
            note=lambda line: click.echo(line, err=True),
        )
    except SandboxUnavailable as exc:
        raise Outage(str(exc)) from None
    report = session.report(
        keys, ran.wall_s, outcomes=ran.outcomes, errors=ran.errors, extra=ran.extra
    )
    if recording is not None:
        recording.evaluated(report, scored=len(ran.outcomes), tasks=len(keys))
    _show(report, session, options["as_json"], ran.wall_s)


def _backfill(
    settings: Settings, session: EvalSession, keys: list[str], options: RunOptions
) -> None:
    """``keys`` as a Dagster asset backfill of the task set's family; driven from here (then
    re-picked and reported as a direct run is) unless ``--submit-only``."""
    from codegen.evaluation.session import plan_backfill

    task_set, mode = session.tasks, session.mode
    samples_digest = None
    if session.samples_file is not None:
        samples_digest = _stage_samples(settings, session.samples_file)
    what = "samples file " + session.samples_file.path.name if session.samples_file else mode
    try:
        plan = plan_backfill(
            task_set,
            keys,
            mode,
            eval_dir=settings.eval_dir,
            drive=not options["submit_only"],
            title=f"{task_set.name} {what}, {counted(len(keys), 'task')}",
            samples_digest=samples_digest,
            package_set=settings.sandbox.package_set,
        )
    except StagedFileError as exc:
        raise click.ClickException(str(exc)) from None
    ran = _submit(settings, plan, options)
    if ran is None:
        return
    backfill_id, progress, wall = ran
    extra: JSONObject = {"backfill_id": backfill_id, "backfill_status": progress.status}
    if mode == CREW and not progress.runs_failed:
        from codegen.orchestration.launch import sandbox_resource

        with sandbox_resource(settings).open() as box:
            extra.update(session.learn(keys, box, note=lambda line: click.echo(line, err=True)))
    _show(session.report(keys, wall, extra=extra), session, options["as_json"], wall)
    if progress.runs_failed:
        raise click.ClickException(
            f"backfill {backfill_id}: {progress.runs_failed} of {progress.runs} runs failed; "
            "see the Dagster UI, then re-run the failed partitions"
        )


def _stage_samples(settings: Settings, samples: SamplesFile) -> str:
    """Stage a samples file for a backfill's runs; returns its digest (their run tag)."""
    if samples.tasks.builtin:
        # Launches from the UI read the setting; a run of this backfill reads its tag.
        path = str(samples.path.resolve())
        os.environ["CODEGEN_EVAL__SAMPLES_FILE"] = path
    try:
        return StagedFiles(settings.eval_dir).stage_samples(samples)
    except StagedFileError as exc:
        raise click.ClickException(str(exc)) from None


def _score_samples_file(
    settings: Settings, path: Path, task_set: TaskSet, options: RunOptions
) -> None:
    """``--samples-file``: validate the whole file, then score its tasks (or backfill them)."""
    from codegen.evaluation.samples_file import read_samples
    from codegen.orchestration.launch import open_session

    samples = read_samples(path, task_set)  # a bad file is refused whole (exits.py)
    session = open_session(settings, None, SAMPLES, samples_file=samples)
    keys = list(samples.modules)
    click.echo(
        f"{samples.tasks.name} (samples): {counted(samples.samples, 'sample')} for "
        f"{counted(len(keys), 'task')} from {path} ({counted(len(samples.missing()), 'task')} "
        "not in the file)",
        err=True,
    )
    if options["backfill"] or options["submit_only"]:
        _backfill(settings, session, keys, options)
    else:
        _run_here(settings, session, keys, options)


def _submit(
    settings: Settings, plan: BackfillPlan, options: RunOptions
) -> tuple[str, BackfillProgress, float] | None:
    """Submit ``plan`` to the configured instance; unless ``--submit-only`` (then the id is
    printed and None returned), drive it to the end: (backfill id, final progress, wall s)."""
    from codegen.orchestration.backfill import drive_backfill, stdout_to_stderr, submit_plan

    instance = configured_instance(settings)
    backfill_id, pools = submit_plan(instance, settings, plan)
    partitions = len(plan.partitions)
    click.echo(
        f"backfill {backfill_id} submitted: {partitions} partitions, pools {pools}", err=True
    )
    if options["submit_only"]:
        click.echo(json.dumps({"backfill_id": backfill_id}) if options["as_json"] else backfill_id)
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


def _show(report: Report, session: EvalSession, as_json: bool, wall: float) -> None:
    """Print ``report`` (JSON or text), then exit as its verdict says."""
    if as_json:
        click.echo(json.dumps(report.result, indent=2))
    else:
        _print_text(report, session, wall)
    try:
        report.raise_for_verdict()
    except EvalOutage as exc:
        raise Outage(str(exc)) from None
    except HarnessBroken as exc:
        raise click.ClickException(str(exc)) from None
    sys.stderr.flush()


def _print_text(report: Report, session: EvalSession, wall: float) -> None:
    summary, result = report.summary, report.result
    pk = ", ".join(f"{k} = {v:.4f}" for k, v in summary.pass_at_k.items()) or "n/a"
    decided = f" ({summary.time_limit.note})" if summary.time_limit.note else ""
    click.echo(f"{session.tasks.name} {session.mode}: {pk}{decided}")
    if report.absent:
        click.echo(f"tasks not in the file (missing): {len(report.absent)}")
    click.echo(
        f"passed {summary.passed_samples}/{summary.samples} samples, "
        f"solved {summary.solved_tasks}/{summary.tasks_scored} tasks"
    )
    fails = ", ".join(f"{k} {v}" for k, v in summary.failures_by_category.items() if v)
    click.echo(f"failures: {fails or 'none'}")
    for line in summary.time_limit.lines():
        click.echo(f"  {line}")
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
    if summary.reviewer_grade is not None:
        click.echo(summary.reviewer_grade.describe())
    cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    click.echo(
        f"tokens {summary.prompt_tokens + summary.completion_tokens}, cost {cost}, "
        f"time {wall:.1f}s ({result['seconds_per_task']:.2f}s/task)"
    )
    for shape in shapes_in(session.tasks.problems.values()):
        figures = result.get(shape.name)
        if shape.describe is not None and isinstance(figures, dict):
            for line in shape.describe(figures, session.mode == CANONICAL):
                click.echo(line)
    for failure in report.result.get("canonical_failures", []):  # type: ignore[union-attr]
        click.echo(f"canonical fails {failure['task']}: {failure['why']}")  # type: ignore[index]
    click.echo(f"results {result['results_dir']}; plot {result['plot']}")
