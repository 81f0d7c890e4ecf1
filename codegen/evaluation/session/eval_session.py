"""One evaluation as plain Python: the session the CLI, the assets and the backfill all drive.

An :class:`EvalSession` is one task set in one mode (the crew, the canonical solutions, or a
samples file) with its configuration (and so its cache key), its store and its workers. Its
callers supply what the platform builds from settings, as plain objects: an
:class:`EvalSetup` (``codegen.composition.eval_setup``), and for the crew an LLM and a
retriever source (the Dagster resources satisfy these protocols; nothing here imports Dagster).

    run(keys)             the CLI's direct run: every task, then the end-of-run re-pick
    generate/score/...    one task at a time, as an asset's partitions are
    learn(keys, box)      the re-pick with learned reliabilities (also after a backfill)
    report(keys, wall)    summary, history line, plot, the JSON result and its verdict
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.evaluation.harness import (
    CANONICAL,
    CREW,
    SAMPLES,
    EvalConfig,
    Generator,
    Progress,
    TaskOutcome,
    canonical_generator,
    evaluate,
    evaluate_samples,
    generate_task,
    run_samples_task,
    score_task,
)
from codegen.evaluation.report import (
    Ran,
    Report,
    Summary,
    add_absent,
    build_report,
    history_entry,
    plot_history,
    summarize,
)
from codegen.evaluation.samples_file import SamplesFile
from codegen.evaluation.scoring import SampleScore
from codegen.evaluation.shapes import shapes_in
from codegen.evaluation.store import Candidate, EvalStore
from codegen.evaluation.tasks import TaskSet, humaneval_tasks
from codegen.json_types import JSONObject
from codegen.retrieval.types import Retriever
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits


@dataclass(frozen=True)
class EvalSetup:
    """The settings an evaluation reads, as plain values."""

    eval_dir: Path
    limits: Limits  # of one hidden-test execution ([eval] timeout_s, memory_mb)
    workers: int  # tasks worked on at once ([eval] workers)
    samples: int  # candidates per task unless a run says otherwise ([eval] samples)
    reliability_file: Path  # where the re-pick records what it learned of each model


class LLMSource(Protocol):
    """The crew's endpoint and options (``codegen.assets.resources.LLMResource``)."""

    def client(self, *, record_to: Path | None = ...) -> LLMClient: ...

    def crew_options(self, overrides: JSONObject | None = ...) -> CrewOptions: ...


class RetrieverSource(Protocol):
    """What the crew searches and its identity (``RetrieverResource``)."""

    def get_retriever(self) -> Retriever | None: ...

    def identity(self) -> Mapping[str, object]: ...


class SandboxSource(Protocol):
    """Where candidates and tests run (``SandboxResource``)."""

    def open(self) -> AbstractContextManager[Sandbox]: ...

    def limits(self) -> Limits: ...


Note = Callable[[str], None]  # a line for the person running the evaluation (stderr)


def crew_config(
    setup: EvalSetup,
    samples: int | None,
    llm: LLMSource,
    retriever: RetrieverSource,
    tasks: TaskSet | None = None,
) -> EvalConfig:
    """The crew's configuration (and cache key) over ``tasks``; builds it without a call."""
    from codegen.evaluation.session.crew_generator import crew_identity

    identity = {
        **crew_identity(llm.client(), llm.crew_options(), dict(retriever.identity())),
        **(tasks.identity() if tasks else {}),
    }
    return EvalConfig(
        mode=CREW, samples=samples or setup.samples, limits=setup.limits, identity=identity
    )


def canonical_config(setup: EvalSetup, tasks: TaskSet | None = None) -> EvalConfig:
    identity = tasks.identity() if tasks else {}
    return EvalConfig(mode=CANONICAL, samples=1, limits=setup.limits, identity=identity)


def samples_config(setup: EvalSetup, samples: SamplesFile) -> EvalConfig:
    """A samples file's configuration: its bytes' digest (so an edited file is a new
    configuration, while its unchanged samples still hit the per-sample verdict cache)."""
    return EvalConfig(
        mode=SAMPLES,
        samples=max(len(m) for m in samples.modules.values()),
        limits=setup.limits,
        identity={"samples_file": samples.digest[:16], **samples.tasks.identity()},
    )


def score_samples_file(
    setup: EvalSetup, samples: SamplesFile, sandbox: Sandbox, on_done: Progress | None = None
) -> tuple[EvalConfig, list[TaskOutcome], dict[str, str]]:
    """Score a validated samples file (``--samples-file``, benchmarks): same store, scorer
    and per-sample cache as the crew and canonical modes, ``workers`` at a time."""
    config = samples_config(setup, samples)
    outcomes, errors = evaluate_samples(
        EvalStore(setup.eval_dir),
        config,
        samples.modules,
        sandbox,
        workers=setup.workers,
        on_done=on_done,
        tasks=samples.tasks,
    )
    return config, outcomes, errors


@dataclass
class RunResult:
    """A direct run: its outcomes, the tasks that could not run, what the re-pick added."""

    outcomes: list[TaskOutcome]
    errors: dict[str, str]
    wall_s: float
    extra: JSONObject = field(default_factory=dict)


class EvalSession:
    """One task set in one mode: configuration, store, generator, and the steps of a run."""

    def __init__(
        self,
        setup: EvalSetup,
        tasks: TaskSet | None = None,
        mode: str = CREW,
        *,
        samples: int | None = None,
        llm: LLMSource | None = None,
        retriever: RetrieverSource | None = None,
        samples_file: SamplesFile | None = None,
        references_pass: bool = False,
        record_to: Path | None = None,
    ) -> None:
        self.setup = setup
        # ``--record``: the crew's replies go to this recording, and every task is generated
        # again (a stored candidate made no call, so it would be missing from the recording).
        self.record_to = record_to
        self.tasks = samples_file.tasks if samples_file else (tasks or humaneval_tasks())
        self.samples_file = samples_file
        self.mode = SAMPLES if samples_file else mode
        self.llm, self.retriever = llm, retriever
        # A benchmark whose references all pass: one failing means the harness is broken.
        self.references_pass = references_pass
        self.store = EvalStore(setup.eval_dir)
        self.workers = max(1, setup.workers)
        if samples_file is not None:
            self.config = samples_config(setup, samples_file)
        elif mode == CANONICAL:
            if samples not in (None, 1):
                raise ValueError("canonical mode scores the one canonical solution")
            self.config = canonical_config(setup, self.tasks)
        else:
            if llm is None or retriever is None:
                raise ValueError("a crew evaluation needs an LLM and a retriever")
            self.config = crew_config(setup, samples, llm, retriever, self.tasks)

    @property
    def label(self) -> str:
        """What the history calls this run: the model, "canonical", or the samples file."""
        if self.samples_file is not None:
            return f"samples:{self.samples_file.path.name}"
        if self.mode == CANONICAL:
            return "canonical"
        return str(self.config.identity["default"]["model"])  # type: ignore[index]

    def generator(self, box: Sandbox, sandbox_limits: Limits | None = None) -> Generator:
        """What writes this mode's candidates: the crew (running its tests in ``box``) or
        the task set's reference solutions."""
        if self.mode == CANONICAL:
            return canonical_generator(self.tasks)
        if self.llm is None or self.retriever is None:
            raise ValueError(f"{self.mode} mode has no generator")
        from codegen.evaluation.session.crew_generator import crew_generator

        overrides: JSONObject = {"limits": sandbox_limits} if sandbox_limits else {}  # type: ignore[dict-item]
        options = self.llm.crew_options(overrides)
        found = self.retriever.get_retriever()
        return crew_generator(self.llm.client(record_to=self.record_to), box, options, found)

    # One task at a time (the assets' partitions) -----------------------------------------

    def generate(self, key: str, generator: Generator) -> tuple[list[Candidate], bool]:
        """Task ``key``'s candidates (stored, or generated now): (candidates, cached)."""
        return generate_task(
            self.store,
            self.config,
            self.tasks.get(key),
            generator,
            self.workers,
            fresh=self.record_to is not None,
        )

    def score(self, key: str, box: Sandbox) -> tuple[list[SampleScore], bool]:
        """Hidden-test verdicts for task ``key``'s stored candidates: (scores, cached)."""
        _, scores, cached = score_task(
            self.store, self.config, self.tasks.get(key), box, self.workers
        )
        return scores, cached

    def score_file_task(self, key: str, box: Sandbox) -> TaskOutcome:
        """A samples file's samples for task ``key``, scored."""
        if self.samples_file is None:
            raise ValueError("not a samples-file session")
        modules = self.samples_file.modules[self.tasks.get(key).key]
        return run_samples_task(
            self.store, self.config, key, modules, box, self.workers, self.tasks
        )

    # A whole run -------------------------------------------------------------------------

    def run(
        self,
        keys: Sequence[str],
        sandbox: SandboxSource,
        *,
        on_done: Progress | None = None,
        note: Note | None = None,
    ) -> RunResult:
        """Every task of ``keys`` here, ``workers`` at a time, then (crew, several drafts) the
        re-pick; the re-pick's share of the wall time goes into ``extra``."""
        started = time.perf_counter()
        with sandbox.open() as box:
            if note:
                note(
                    f"config {self.config.config_id}, sandbox {box.backend}, {self.workers} workers"
                )
            if self.samples_file is not None:
                outcomes, errors = evaluate_samples(
                    self.store,
                    self.config,
                    self.samples_file.modules,
                    box,
                    workers=self.workers,
                    on_done=on_done,
                    tasks=self.tasks,
                )
            else:
                generator = self.generator(box, sandbox.limits())
                outcomes, errors = evaluate(
                    self.store,
                    self.config,
                    list(keys),
                    generator,
                    box,
                    workers=self.workers,
                    on_done=on_done,
                    tasks=self.tasks,
                    fresh=self.record_to is not None,
                )
            extra = self.learn(keys, box, errors, note)
        wall = time.perf_counter() - started
        seconds = extra.get("repick_seconds")
        if isinstance(seconds, float):
            # The re-pick's share of the evaluation's wall time (it is inside ``wall``).
            extra["repick_share"] = round(seconds / max(wall, 1e-9), 4)
        return RunResult(outcomes, errors, wall, extra)

    def learn(
        self,
        keys: Sequence[str],
        box: Sandbox,
        errors: Mapping[str, str] | None = None,
        note: Note | None = None,
    ) -> JSONObject:
        """A complete crew run with several drafts a task re-decides its picks from its stored
        records with the reliabilities it estimates (``evaluation.learned``); returns what its
        JSON result adds (nothing when no re-pick applies)."""
        drafts = self.config.identity.get("candidates")
        if self.mode != CREW or errors or not isinstance(drafts, int) or drafts < 2:
            return {}
        from codegen.agents.pick import ReliabilityHistory
        from codegen.evaluation.learned import learn_picks

        history = ReliabilityHistory(self.setup.reliability_file)
        run = learn_picks(
            self.store, self.config, list(keys), self.tasks, box, self.setup.workers, history
        )
        if note:
            note(
                f"re-pick: {len(run.moved)} of {run.tasks} tasks moved in {run.seconds:.2f}s"
                if run.applied
                else f"re-pick: none ({run.reason})"
            )
        return {"repick": run.to_dict(), "repick_seconds": round(run.seconds, 3)}

    # The end -----------------------------------------------------------------------------

    def summarize(self, keys: Sequence[str] | None = None) -> Summary:
        return summarize(self.store, self.config.config_id, self.mode, keys or self.tasks.keys())

    def record(
        self, summary: Summary, wall_s: float | None = None, label: str | None = None
    ) -> None:
        """Append ``summary`` to the history (complete runs only: an outage is no data)."""
        # The models that answered, when the samples say (a replay is not the configured model).
        answered = ", ".join(summary.models)
        entry = history_entry(summary, label=label or answered or self.label, wall_s=wall_s)
        self.store.append_history({**entry, "task_set": self.tasks.name})

    def plot(self) -> Path:
        """The history of this session's mode, as a PNG."""
        history = [e for e in self.store.history() if e["mode"] == self.mode]
        return plot_history(history, self.store.plot_path)

    def shape_figures(self, keys: Sequence[str]) -> dict[str, JSONObject]:
        """Each task shape's own figures (ClassEval's) over the stored scores of ``keys``, by
        the shape's name; shapes without figures of their own are left out."""
        figures: dict[str, JSONObject] = {}
        for shape in shapes_in(self.tasks.get(k) for k in keys):
            if shape.figures is None:
                continue
            scored = []
            for key in keys:
                stored = self.store.load_scores(self.config.config_id, key)
                if stored and self.tasks.get(key).shape == shape.name:
                    found = [SampleScore.from_dict(s) for s in stored["scores"]]
                    scored.append((self.tasks.get(key), found))
            recorded = self.samples_file.recorded if self.samples_file else {}
            figures[shape.name] = shape.summary(scored, recorded)
        return figures

    def report(
        self,
        keys: Sequence[str],
        wall: float,
        *,
        outcomes: Sequence[TaskOutcome] = (),
        errors: Mapping[str, str] | None = None,
        extra: JSONObject | None = None,
    ) -> Report:
        """Summarize what the store holds for ``keys``, record it in the history (when
        complete), plot it; the verdict says what, if anything, leaves the run unfinished."""
        errors = dict(errors or {})
        summary = self.summarize(keys)
        absent = self.samples_file.missing() if self.samples_file else []
        unscored = add_absent(summary, absent, self.tasks)
        if not errors and not unscored and not summary.crew_statuses.get("error"):
            self.record(summary, wall_s=wall)
        figures = self.shape_figures(keys)
        if figures:
            extra = {**(extra or {}), **figures}
        if self.samples_file is not None:
            extra = {
                "samples_file": str(self.samples_file.path),
                "fields": self.samples_file.fields,
                **(extra or {}),
            }
        ran = Ran(self.mode, self.tasks, keys, wall, outcomes, errors, self.references_pass)
        results_dir = self.store.config_dir(self.config.config_id)
        return build_report(ran, summary, unscored, absent, extra or {}, self.plot(), results_dir)
