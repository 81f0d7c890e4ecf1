"""Running steps: one (``run_step``, ``advance``), or every missing one with independent
steps in parallel (``run_steps``)."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from codegen.agents import steps
from codegen.agents.llm import Meter
from codegen.agents.refine import classify
from codegen.agents.report import store_artifacts
from codegen.agents.state import CrewState, Ended, StepResult
from codegen.agents.steps import Crew, Step, step_named, upstream


def run_step(name: str, crew: Crew, state: CrewState) -> StepResult:
    """One step over ``state``; never raises. A step after the request ended does no work and
    carries the ending on; the budget counts what every upstream step spent."""
    step = step_named(name)
    missing = [n for n in step.needs if state.result(n) is None]
    if missing:
        raise ValueError(f"step {name} needs {', '.join(missing)} first")
    before = upstream(name)
    ended = state.ended(tuple(before))
    if ended is not None:
        return step.result_type(ended=ended)
    crew.on_event(step.doing)
    meter = Meter(state.options.budget, prior=state.usage(before))
    try:
        result = step.run(crew, state, meter)
    except Exception as exc:
        status, reason = classify(exc)
        result = step.result_type(ended=Ended(status, reason))
    # A step may carry usage of its own earlier rounds (a resumed review).
    result.usage = result.usage.merge(meter.usage)
    return result


def advance(name: str, crew: Crew, state: CrewState) -> CrewState:
    """``state`` with step ``name`` run, and its artifacts stored when the crew has a folder."""
    new = state.with_result(name, run_step(name, crew, state))
    if crew.artifacts is not None:
        store_artifacts(crew.artifacts, name, new)
    return new


def run_steps(crew: Crew, state: CrewState) -> CrewState:
    """Every step whose result is missing, each as soon as the steps it needs are done, so
    independent steps (the test designer and the programmer) run in parallel."""
    # STEPS read when run: a step added to it runs here with no edit.
    pending = [s for s in steps.STEPS if state.result(s.name) is None]
    running: dict[Future[CrewState], Step] = {}
    with ThreadPoolExecutor(max_workers=len(pending) or 1, thread_name_prefix="crew") as pool:
        while pending or running:
            for step in list(pending):
                if all(state.result(n) is not None for n in step.needs):
                    running[pool.submit(advance, step.name, crew, state)] = step
                    pending.remove(step)
            if not running:
                raise ValueError(f"steps cannot run: {[s.name for s in pending]}")
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                step = running.pop(future)
                state = state.with_result(step.name, future.result().result(step.name))
    return state
