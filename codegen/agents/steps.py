"""The crew's steps, defined once: ``STEPS`` is the sequence
``spec -> (tests || context -> draft) -> solution -> review -> docs``, each step naming the
steps it needs. A step is a plain function of the services (``Crew``), the ``CrewState`` so
far and a budget ``Meter``, returning its typed result. ``runner`` runs them in this process;
``codegen/assets/codegen.py`` runs each as a Dagster asset."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from codegen.agents import prompts
from codegen.agents.context import queries_for, retrieve_context
from codegen.agents.dependencies import SandboxPackages, missing, missing_reason
from codegen.agents.draft_pick import select_draft
from codegen.agents.llm import Draft, LLMClient, Meter
from codegen.agents.pick import (
    ReliabilityHistory,
    Selection,
)
from codegen.agents.refine import Event, classify, quiet, refine
from codegen.agents.roles import (
    analyze,
    design_tests,
    document,
    validate_request,
    write_code,
)
from codegen.agents.spec import SPEC_JSON_SCHEMA, Spec, off_target
from codegen.agents.state import (
    ContextResult,
    CrewState,
    DocsResult,
    DraftCandidate,
    DraftResult,
    Ended,
    ReviewResult,
    SolutionResult,
    SpecResult,
    StepResult,
    TestsResult,
)
from codegen.agents.suite import spec_example_tests, with_examples
from codegen.agents.types import Status
from codegen.retrieval.grounding import Grounding
from codegen.retrieval.types import Retriever
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits


@dataclass
class Crew:
    """The services of one request: a task-tagged LLM client, a way to open a sandbox, the
    retriever, sandbox limits, a progress callback and (optionally) the artifact folder."""

    llm: LLMClient
    sandbox: Callable[[], AbstractContextManager[Sandbox]]
    retriever: Retriever | None = None
    limits: Limits | None = None
    on_event: Event = quiet
    artifacts: Path | None = None
    # How grounded a search of ``retriever`` is now (codegen.retrieval.grounding.Grounding).
    grounding: Callable[[], Grounding] | None = None
    # The sandbox's package set the spec's dependencies are checked against; None: unknown,
    # not checked.
    packages: SandboxPackages | None = None
    # What this home learned of each model's reliability, for the pick (requests have it; an
    # evaluation's crew has none, so its first pick and its cache key do not move).
    history: ReliabilityHistory | None = None


def _spec_step(crew: Crew, state: CrewState, meter: Meter) -> SpecResult:
    analysis = analyze(crew.llm, meter, validate_request(state.request))
    result = SpecResult(spec=analysis.spec, structured_outputs=analysis.structured_outputs)
    result.packages = crew.packages.declared if crew.packages is not None else None
    # Decided once, here: the tests are written from the spec and import its names, so code
    # that passes them has the spec's names; a spec for another request ends the request
    # before the programmer (a re-ask would mostly get the same answer: a replay, a script).
    elsewhere = off_target(state.request, analysis.spec)
    if elsewhere is not None:
        result.ended = Ended(Status.OFF_TARGET, elsewhere)
        return result
    lacking = missing(analysis.spec, crew.packages) if crew.packages is not None else []
    if lacking and crew.packages is not None:
        # Code importing them could never pass in the sandbox: end before the programmer.
        result.ended = Ended(Status.MISSING_DEPENDENCY, missing_reason(lacking, crew.packages))
    return result


def _spec(state: CrewState) -> Spec:
    # run_step checked the step's needs, and a spec step that did not end the request has one
    assert state.spec is not None and state.spec.spec is not None
    return state.spec.spec


def _tests_step(crew: Crew, state: CrewState, meter: Meter) -> TestsResult:
    return TestsResult(tests=design_tests(crew.llm, meter, _spec(state)))


def _context_step(crew: Crew, state: CrewState, meter: Meter) -> ContextResult:
    spec = _spec(state)
    chunks = retrieve_context(
        crew.retriever,
        spec,
        top_k=state.options.top_k,
        token_budget=state.options.context_token_budget,
    )
    grounded = crew.grounding() if crew.grounding is not None else None
    return ContextResult(queries=queries_for(spec), chunks=chunks, grounding=grounded)


def _draft_step(crew: Crew, state: CrewState, meter: Meter) -> DraftResult:
    chunks = state.context.chunks if state.context else []
    count = max(1, state.options.candidates)

    def one(index: int) -> DraftCandidate:
        own = Meter(meter.budget, prior=meter.total())
        code, problem = write_code(
            crew.llm, own, _spec(state), chunks, draft=Draft(candidate=index, round=1)
        )
        meter.add(own.usage)
        return DraftCandidate(code, problem, own.usage)

    if count == 1:
        drafts = [one(0)]
    else:
        # Each draft's model ([llm] candidates as a list: the entries, repeated past its end).
        models = ", ".join(
            crew.llm.model_for("programmer", Draft(candidate=i)).model for i in range(count)
        )
        crew.on_event(f"programmer: {count} drafts in parallel ({models})")
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="draft") as pool:
            drafts = list(pool.map(one, range(count)))
    meter.check()  # the drafts together may have crossed the budget
    return DraftResult(code=drafts[0].code, problem=drafts[0].problem, drafts=drafts)


def _solution_step(crew: Crew, state: CrewState, meter: Meter) -> SolutionResult:
    assert state.tests is not None and state.draft is not None and state.context is not None
    limits = state.options.limits or crew.limits
    drafts = state.draft.drafts or [DraftCandidate(state.draft.code, state.draft.problem)]
    selection: Selection | None = None
    tests = state.tests.tests
    chosen = drafts[0]
    try:
        with crew.sandbox() as box:
            if len(drafts) > 1:
                index, selection, tests = select_draft(
                    crew.llm, crew.history, crew.on_event, box, state, limits
                )
                chosen = drafts[index]
            tests = _with_program_runs(_spec(state), tests)
            result = refine(
                crew.llm,
                meter,
                box,
                _spec(state),
                tests,
                state.context.chunks,
                chosen.code,
                chosen.problem,
                max_rounds=state.options.max_rounds,
                limits=limits,
                on_event=crew.on_event,
                candidate=drafts.index(chosen),
                # In human mode a person signs off instead of the Reviewer agent.
                agent_review=state.options.review != "human",
            )
    except Exception as exc:  # e.g. no sandbox backend: still a status and a report
        status, reason = classify(exc)
        return SolutionResult(ended=Ended(status, f"sandbox: {reason}"), code=chosen.code)
    return replace(result, selection=selection, tests=tests)


def _with_program_runs(spec: Spec, tests: str) -> str:
    """A program spec's suite with the spec's worked runs in it (trusted tests): a program has
    no name the tests must import, so passing it answers to the runs the spec states; a
    function or class spec's suite is the designer's, as it always was."""
    return with_examples(tests, spec_example_tests(spec)) if spec.program is not None else tests


def _review_step(crew: Crew, state: CrewState, meter: Meter) -> ReviewResult:
    """Agent mode: the refinement's reviewer already signed off. Human and both: wait for a
    person (``awaiting_review``); a verdict resumes here: approval accepts the code, a
    rejection sends it back through refinement with the points, then it waits again."""
    mode = state.options.review
    if mode == "agent":
        return ReviewResult(mode=mode)
    prior = state.review_prior or ReviewResult(mode=mode)
    # Earlier review rounds count against the budget too, and stay in the usage.
    meter.prior = meter.prior.merge(prior.usage)
    result = ReviewResult(
        usage=prior.usage, mode=mode, verdicts=list(prior.verdicts), revised=prior.revised
    )
    verdict = state.verdict
    if verdict is None:
        return _awaiting(result, len(result.verdicts) + 1)
    result.verdicts.append(verdict)
    if verdict.kind == "approve":
        return result
    if verdict.kind == "timeout":
        result.ended = Ended(Status.REJECTED, f"review timed out: {verdict.text}")
        return result
    current = result.revised or state.solution
    assert current is not None and state.tests is not None and state.context is not None
    # The suite the code was refined against (suspect tests dropped), as in the solution step.
    tests = current.tests or state.tests.tests
    crew.on_event(f"review round {verdict.review_round}: rejected; programmer revises")
    with crew.sandbox() as box:
        again = refine(
            crew.llm,
            meter,
            box,
            _spec(state),
            tests,
            state.context.chunks,
            current.code,
            max_rounds=state.options.max_rounds,
            limits=state.options.limits or crew.limits,
            on_event=crew.on_event,
            feedback=prompts.FEEDBACK_HUMAN.format(points=verdict.text),
            first_round=current.rounds + 1,
            agent_review=mode == "both",
        )
    result.revised = replace(
        again,
        ended=None,  # the review step's result carries how the request ended
        report=again.report or current.report,
        review=again.review or current.review,
        history=[*current.history, *again.history],
        selection=current.selection,
        tests=tests,
    )
    if again.ended is not None:
        result.ended = again.ended
        return result
    return _awaiting(result, len(result.verdicts) + 1)


def _awaiting(result: ReviewResult, review_round: int) -> ReviewResult:
    result.ended = Ended(
        Status.AWAITING_REVIEW, f"the tests pass; awaiting a person's review (round {review_round})"
    )
    return result


def _docs_step(crew: Crew, state: CrewState, meter: Meter) -> DocsResult:
    accepted = state.accepted
    assert accepted is not None
    return DocsResult(docs=document(crew.llm, meter, _spec(state), accepted.code))


StepFn = Callable[[Crew, CrewState, Meter], StepResult]


@dataclass(frozen=True)
class Step:
    """One step of the crew, named once: what it fills, needs and runs, and how it shows as a
    Dagster asset (``codegen/assets/codegen.py`` builds one per step from these fields)."""

    name: str  # the CrewState result it fills (CrewState.result(name))
    needs: tuple[str, ...]
    run: StepFn
    result_type: type[StepResult]
    doing: str  # progress line when it starts
    asset: str = ""  # its asset's name ("": the step's name)
    description: str = ""  # its asset's description ("": ``doing``)
    roles: tuple[str, ...] = ()  # the agent roles whose prompts version its asset's code
    services: tuple[str, ...] = ()  # what it opens beyond the model: "sandbox", "retriever"
    schema: str = ""  # a JSON schema its prompts send, versioned with them

    @property
    def asset_name(self) -> str:
        return self.asset or self.name

    @property
    def code_version(self) -> str:
        """A hash of its roles' prompts and schema: a prompt edit marks the asset stale; a
        step without a role is at "1"."""
        return prompts.prompt_version(*self.roles, extra=self.schema) if self.roles else "1"


STEPS: tuple[Step, ...] = (
    Step(
        "spec",
        (),
        _spec_step,
        SpecResult,
        "analyzer: writing the spec",
        "request_spec",
        "The Requirements Analyzer's JSON spec of the request (Structured Outputs).",
        ("analyzer",),
        schema=json.dumps(SPEC_JSON_SCHEMA, sort_keys=True),
    ),
    # The test designer works from the spec alone, in parallel with retrieval + programmer.
    Step(
        "tests",
        ("spec",),
        _tests_step,
        TestsResult,
        "test designer: writing the tests",
        "test_suite",
        "The Test Designer's pytest module, written from the spec alone (never code).",
        ("test_designer",),
    ),
    Step(
        "context",
        ("spec",),
        _context_step,
        ContextResult,
        "retrieving context",
        "retrieved_context",
        "Corpus chunks for the programmer: spec to queries, deduplicated, cited, budgeted.",
        services=("retriever",),
    ),
    Step(
        "draft",
        ("spec", "context"),
        _draft_step,
        DraftResult,
        "programmer: first draft",
        "solution_draft",
        "The Programmer's first draft(s) of solution.py; needs no tests, so it runs in "
        "parallel with the test designer.",
        ("programmer", "reviewer"),
    ),
    Step(
        "solution",
        ("spec", "tests", "context", "draft"),
        _solution_step,
        SolutionResult,
        "refinement: test, feed back, revise, review",
        "solution_code",
        "solution.py after the refinement loop: the Test Executor, Programmer and Reviewer "
        "execute, feed back, reprogram and review.",
        ("programmer", "reviewer"),
        ("sandbox",),
    ),
    Step(
        "review",
        ("solution",),
        _review_step,
        ReviewResult,
        "review: the code's sign-off",
        "human_review",
        "The sign-off on code whose tests pass: the Reviewer agent's (mode agent), or a "
        "person's (human, both: the request waits in awaiting_review, holding no run, until the "
        "review_request job brings a verdict; a rejection revises the code).",
        ("programmer", "reviewer"),
        ("sandbox",),
    ),
    Step(
        "docs",
        ("spec", "review"),
        _docs_step,
        DocsResult,
        "documenter: writing the README",
        "documentation",
        "The Documentation Generator's README for accepted code; completes report.json.",
        ("documenter",),
    ),
)


def step_named(name: str) -> Step:
    """The step of ``STEPS`` called ``name`` (read when asked, so a step added to ``STEPS``
    is found)."""
    for step in STEPS:
        if step.name == name:
            return step
    raise KeyError(f"no crew step named {name!r}")


def upstream(name: str) -> set[str]:
    """Every step ``name`` depends on, directly or not."""
    out: set[str] = set()
    todo = list(step_named(name).needs)
    while todo:
        need = todo.pop()
        if need not in out:
            out.add(need)
            todo.extend(step_named(need).needs)
    return out
