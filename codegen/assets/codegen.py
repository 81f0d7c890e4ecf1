"""Code-generation assets: every request is one partition of the ``requests`` dynamic partitions.

One asset per step of ``codegen.agents.steps.STEPS`` (the sequence the in-process ``run_crew``
runs too), built by ``build_step_asset`` from the step (asset name, code version from its
roles' prompts, description, services) and its Dagster view in ``STEP_VIEWS`` (metadata,
config): ``request_spec -> (test_suite ||
retrieved_context -> solution_draft) -> solution_code -> human_review -> documentation``,
with a blocking sandbox check and a bandit check on ``solution_code`` (``codegen_checks``;
what each step shows: ``codegen_metadata``). Each asset reads the results of the steps
upstream of it, runs its own step with ``codegen.agents.runner.advance`` and stores only its
own result. A step added to ``STEPS`` gets its asset without an edit here.

``human_review`` passes agent-mode requests straight on; in human and both modes it ends the
run in ``awaiting_review`` until the ``review_request`` job rematerializes it (and
``documentation``) with a person's verdict as run config. Failures never raise: a step after
an ending carries it on, and ``report.json`` (written by ``codegen.agents.report.write_report``
alone) always says how the request ended.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetsDefinition,
    Config,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    asset,
)

from codegen import composition
from codegen.agents import steps
from codegen.agents.llm import LLMRoute, request_key
from codegen.agents.pick import FILE_NAME as HISTORY_FILE
from codegen.agents.pick import ReliabilityHistory, votes_of
from codegen.agents.report import write_report
from codegen.agents.runner import advance
from codegen.agents.state import CrewState, StepResult
from codegen.agents.steps import Crew, Step, step_named, upstream
from codegen.agents.types import Status, is_outage
from codegen.assets.codegen_metadata import (
    StepMetadata,
    context_metadata,
    default_metadata,
    docs_metadata,
    draft_metadata,
    review_metadata,
    solution_metadata,
    spec_metadata,
    tests_metadata,
)
from codegen.assets.corpus_builds import build_in_progress
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    recording_of,
)
from codegen.json_types import JSONObject
from codegen.requests.review import ReviewError, ReviewStore
from codegen.requests.route import foreign_endpoint
from codegen.requests.store import RequestStore, artifact_dir
from codegen.retrieval.grounding import FULL, Grounding
from codegen.settings import Settings

requests_partitions = DynamicPartitionsDefinition(name="requests")

GROUP = "codegen"


def artifacts_folder(settings: Settings, request_id: str) -> Path:
    return artifact_dir(settings.artifacts_dir, request_id)


def _no_sandbox() -> NoReturn:
    raise RuntimeError("this step has no sandbox")


def _learn_from(settings: Settings, request_id: str, state: CrewState) -> None:
    """A pick among drafts of two models or more adds its observations to what the home
    knows of their reliability (``agents.pick.reliability_history``)."""
    selection = state.solution.selection if state.solution else None
    if selection is None or len({u.model for u in selection.reliabilities}) < 2:
        return
    votes = votes_of(selection.to_dict(), [u.model for u in selection.reliabilities])
    if votes is not None:
        ReliabilityHistory(settings.home / HISTORY_FILE).record_request(request_id, votes)


# The job that brings a verdict (codegen/orchestration/launch/review.py); named here so the
# asset can tell it.
REVIEW_JOB = "review_request"


class ReviewVerdictConfig(Config):
    """A person's verdict (the ``review_request`` job's run config). Empty: no verdict yet,
    so in human and both modes the request waits (``awaiting_review``)."""

    verdict: str = ""  # approve | reject ("" in the request job: wait for one)
    note: str = ""  # the approval's note, or the rejection's points (required to reject)
    reviewer: str = ""  # who decided; the launchpad's default is "launchpad"
    claim: str = ""  # set by `codegen review`, which claimed the round already
    review_round: int = 0  # the round the verdict is for (0: the open one)


def _run_review(
    context: AssetExecutionContext,
    config: ReviewVerdictConfig | None,
    crew: Crew,
    state: CrewState,
    settings: Settings,
) -> CrewState:
    """The review step between the review store's claim and its close: a person's verdict is
    claimed first (and released if the step fails), a pending round opened after."""
    assert config is not None
    request_id = context.partition_key
    reviews = ReviewStore(settings.requests_dir)
    token = config.claim
    if not config.verdict and context.job_name == REVIEW_JOB:
        # Without a verdict this would restart the review and drop a rejection's revision.
        raise Failure(
            description="the review_request job needs a verdict: ops.human_review.config."
            "verdict approve or reject (with note: the points)",
            allow_retries=False,
        )
    if config.verdict:
        try:
            if not token:  # the launchpad: this run claims the round itself
                reviewer = config.reviewer or "launchpad"
                token = reviews.claim(
                    request_id, config.verdict, config.note, reviewer, config.review_round
                ).token
            verdict, prior = reviews.claimed(request_id, token)
        except ReviewError as exc:
            # Nothing is materialized: the stored request and its artifacts stay as they were.
            raise Failure(description=str(exc), allow_retries=False) from exc
        state = replace(state, review_prior=prior, verdict=verdict)
    try:
        state = advance("review", crew, state)
        _fail_on_outage(artifacts_folder(settings, request_id), state, "review")
    except BaseException:
        if token:  # the verdict was not applied: its round awaits one again
            reviews.release(request_id, token)
        raise
    review = state.review
    if state.status is Status.AWAITING_REVIEW and review is not None:
        review.open_round = reviews.open_round(request_id, review)
        context.log.warning(f"request {request_id} awaits review (round {review.open_round})")
    elif review is not None and review.mode != "agent":
        reviews.close(request_id)
    return state


# -- the request assets, one per step of STEPS ---------------------------------------------------
Metadata = Callable[[CrewState, Path], StepMetadata]
StepRunner = Callable[
    [AssetExecutionContext, "ReviewVerdictConfig | None", Crew, CrewState, Settings], CrewState
]


@dataclass(frozen=True)
class StepView:
    """What only Dagster adds to a crew step (``agents.steps.Step`` holds its asset's name,
    description, code version and services): the metadata it shows and, rarely, run config
    and its own way to run."""

    metadata: Metadata = default_metadata
    config: type[Config] | None = None
    run: StepRunner | None = None


# By step name; a step not listed shows the default metadata.
STEP_VIEWS: dict[str, StepView] = {
    "spec": StepView(spec_metadata),
    "tests": StepView(tests_metadata),
    "context": StepView(context_metadata),
    "draft": StepView(draft_metadata),
    "solution": StepView(solution_metadata),
    "review": StepView(review_metadata, ReviewVerdictConfig, _run_review),
    "docs": StepView(docs_metadata),
}


def asset_name(step_name: str) -> str:
    return step_named(step_name).asset_name


def _checked_route(stored: JSONObject | None, llm: LLMResource) -> LLMRoute | None:
    """The LLM route a request was stored with, once this process's own settings name every
    endpoint and key variable in it (or this process has no key to send); else the step fails
    in one line before any call (a row edited to another endpoint must not get this process's
    key: requests/route.py)."""
    if not stored:
        return None
    try:
        route = LLMRoute.from_dict(stored)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Failure(
            description="refused: the request's stored LLM route is not one codegen wrote",
            allow_retries=False,
        ) from None
    own = tuple(composition.candidate_route(c) for c in llm.candidates)
    problem = foreign_endpoint(route, llm.base_url, own, llm.allowed_base_urls, environ=os.environ)
    if problem is not None:
        raise Failure(description=problem, allow_retries=False)
    return route


def _start(context: AssetExecutionContext, settings: Settings, llm: LLMResource) -> CrewState:
    """The request as stored: its text and options (the review mode's default is [review]
    mode; the request's own options override it)."""
    stored = RequestStore(settings.requests_dir).get(context.partition_key)
    # A queued request's route carries its caller's [llm] candidates: their number of drafts.
    route = _checked_route(stored.route, llm)
    options = llm.crew_options({"review": settings.review.mode, **stored.options}, route)
    return CrewState(request_id=stored.id, request=stored.text, options=options)


def _crew(context: AssetExecutionContext, settings: Settings, services: tuple[str, ...]) -> Crew:
    """The services of this request's step, tagged with its request id (the partition) and
    its text's key, on the LLM route the request was queued with (its caller's endpoint and
    models), if any, recording to the file the run's ``--record`` tag names."""
    resources = context.resources
    try:
        request = RequestStore(settings.requests_dir).get(context.partition_key)
    except KeyError:
        request = None
    llm: LLMResource = resources.llm
    route = _checked_route(request.route if request else None, llm)
    record_to = recording_of(context.partition_key)
    sandbox: SandboxResource | None = resources.sandbox if "sandbox" in services else None
    retriever: RetrieverResource | None = resources.retriever if "retriever" in services else None
    return Crew(
        llm=llm.client(route, record_to=record_to).for_task(
            context.partition_key, request_key(request.text) if request else None
        ),
        sandbox=sandbox.open if sandbox is not None else _no_sandbox,
        retriever=retriever.get_retriever() if retriever is not None else None,
        grounding=_grounding(context, retriever) if retriever is not None else None,
        limits=sandbox.limits() if sandbox is not None else None,
        on_event=context.log.info,
        artifacts=artifacts_folder(settings, context.partition_key),
        packages=composition.crew_packages(settings.sandbox),
        history=llm.reliability_history(),
    )


def _grounding(
    context: AssetExecutionContext, retriever: RetrieverResource
) -> Callable[[], Grounding]:
    """How grounded the search is, taken when the crew searches: while a corpus build runs on
    this instance (the first build of a fresh home, say), "building" and how far it got."""

    def now() -> Grounding:
        grounding = retriever.grounding()
        if grounding.status != FULL and build_in_progress(context.instance) is not None:
            return grounding.while_building()
        return grounding

    return now


def _fail_on_outage(folder: Path, state: CrewState, name: str) -> None:
    """Nothing when step ``name`` did not end in an outage; else report.json says so and the
    step fails (red in the UI, nothing materialized; a re-run retries, nothing was cached)."""
    result = state.result(name)
    ended = result.ended if result is not None else None
    if ended is not None and is_outage(ended.status):
        write_report(folder, state)
        raise Failure(description=f"{ended.status.value}: {ended.reason}", allow_retries=True)


def skipped_metadata(state: CrewState, name: str) -> StepMetadata:
    """``skipped`` (why) when step ``name`` did no work: an earlier step ended the request and
    this one only carried the ending on; else nothing."""
    origin = state.ended_at(tuple(upstream(name)))
    if origin is None:
        return {}
    ended_by, ended = origin
    return {"skipped": f"the request ended at {asset_name(ended_by)} ({ended.status.value})"}


def build_step_asset(step: Step) -> AssetsDefinition:
    """The asset that runs ``step`` for one request: it reads the results of every step
    upstream of it (each asset stores only its own step's result) and returns its own."""
    view = STEP_VIEWS.get(step.name, StepView())
    names = {asset_name(n): n for n in sorted(upstream(step.name))}

    def materialize_step(
        context: AssetExecutionContext, config: Config | None, results: dict[str, StepResult]
    ) -> MaterializeResult:
        settings: Settings = context.resources.settings.load()
        state = _start(context, settings, context.resources.llm)
        for key, value in results.items():
            state = state.with_result(names[key], value)
        crew = _crew(context, settings, step.services)
        if view.run is not None:
            state = view.run(context, config, crew, state, settings)  # type: ignore[arg-type]
        else:
            state = advance(step.name, crew, state)
        folder = artifacts_folder(settings, context.partition_key)
        _fail_on_outage(folder, state, step.name)
        if step.name == "solution":
            _learn_from(settings, context.partition_key, state)
        return MaterializeResult(
            value=state.result(step.name),
            metadata={**view.metadata(state, folder), **skipped_metadata(state, step.name)},
        )

    decorate = asset(
        name=step.asset_name,
        partitions_def=requests_partitions,
        group_name=GROUP,
        kinds={"python"},
        code_version=step.code_version,
        description=step.description or step.doing,
        ins={key: AssetIn(key) for key in names},
        required_resource_keys={"settings", "llm", *step.services},
    )
    if view.config is not None:
        config_type = view.config

        def with_config(context: AssetExecutionContext, config, **results):  # type: ignore[no-untyped-def]
            return materialize_step(context, config, results)

        with_config.__annotations__["config"] = config_type
        with_config.__annotations__["context"] = AssetExecutionContext
        return decorate(with_config)

    def without_config(context: AssetExecutionContext, **results: StepResult) -> MaterializeResult:
        return materialize_step(context, None, results)

    return decorate(without_config)


def build_request_assets(crew_steps: tuple[Step, ...] | None = None) -> dict[str, AssetsDefinition]:
    """One asset per step (of ``agents.steps.STEPS`` unless given), by step name."""
    return {step.name: build_step_asset(step) for step in crew_steps or steps.STEPS}


REQUEST_ASSETS = build_request_assets()
