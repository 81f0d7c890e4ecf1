"""The crew in this process: ``run_crew`` runs the same ``STEPS`` the Dagster assets run.

The modules beside this one hold the parts: ``state`` (the typed request state),
``refine`` (the test-and-revise loop), ``steps`` (the sequence), ``runner`` (running it) and
``report`` (artifacts and report.json).
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from codegen.agents.artifacts import new_request_id
from codegen.agents.dependencies import SandboxPackages
from codegen.agents.llm import LLMClient, request_key
from codegen.agents.options import CrewOptions
from codegen.agents.refine import Event, quiet
from codegen.agents.runner import run_steps
from codegen.agents.state import CrewState
from codegen.agents.steps import Crew
from codegen.agents.types import CrewOutcome
from codegen.retrieval.types import Retriever
from codegen.sandbox.api import Sandbox


def run_crew(
    request: str,
    *,
    llm: LLMClient,
    sandbox: Sandbox,
    retriever: Retriever | None = None,
    options: CrewOptions | None = None,
    on_event: Event | None = None,
    task_id: str | None = None,
    artifacts: Path | None = None,
    packages: SandboxPackages | None = None,
) -> CrewOutcome:
    """Run the whole crew in this process: the same steps the Dagster assets run.

    ``task_id`` tags every request (``X-Codegen-Task``): the benchmark task during an
    evaluation; a fresh request id when None. ``artifacts``: a folder for the request's files.
    ``packages``: the sandbox's package set, which the spec's dependencies must be in (None:
    not checked).
    """
    options = options or CrewOptions()
    emit = on_event or quiet
    state = CrewState(request_id=task_id or new_request_id(), request=request, options=options)
    crew = Crew(
        # A request (no benchmark task) is also keyed by its text, as `codegen generate` is.
        llm=llm.for_task(state.request_id, None if task_id else request_key(request)),
        sandbox=lambda: nullcontext(sandbox),
        retriever=retriever,
        limits=options.limits,
        on_event=emit,
        artifacts=artifacts,
        packages=packages,
    )
    outcome = run_steps(crew, state).outcome()
    emit(f"{outcome.status.value}: {outcome.reason}")
    return outcome
