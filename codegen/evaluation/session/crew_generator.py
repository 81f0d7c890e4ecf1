"""The crew as a HumanEval candidate generator.

The crew gets ``PublicTask.request`` (the prompt wrapped in an instruction) and nothing else;
its final ``solution.py`` is the candidate. The crew's own generated tests are recorded for
contrast only: the score comes from the hidden tests alone.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict
from pathlib import Path
from typing import cast

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient, candidate_at
from codegen.agents.options import CrewOptions
from codegen.agents.report import parse_grade
from codegen.evaluation.harness import Generator, PublicTask
from codegen.evaluation.store import Candidate
from codegen.json_types import JSONObject
from codegen.retrieval.types import Retriever
from codegen.sandbox.api import Sandbox

# The files whose text decides what the crew sends and does; their hash is the crew's code
# version, so editing a prompt invalidates cached candidates.
_CREW_SOURCES = (
    "crew.py",
    "prompts.py",
    "roles.py",
    "replies/extract.py",
    "replies/program.py",
    "pick/matrix.py",
    "suite.py",
    "context.py",
    "llm/client.py",
)


def crew_code_version() -> str:
    root = Path(__file__).resolve().parents[1] / "agents"
    h = hashlib.sha256()
    for name in _CREW_SOURCES:
        path = root / name
        if path.exists():
            h.update(name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def crew_identity(
    llm: LLMClient, options: CrewOptions, retriever: JSONObject | None = None
) -> JSONObject:
    """What makes two crew runs comparable: endpoint, models, rounds, budget, code version,
    and the index the programmer's context comes from (``retriever``).

    ``llm.endpoint`` is a display string that never holds the key. Drafts with their own
    model or endpoint (``[llm] candidates`` as a list) add ``candidate_models``, one entry per
    draft; drafts that all keep the programmer's model leave the identity as it was.
    """
    drafts = [candidate_at(llm.candidates, i).to_dict() for i in range(options.candidates)]
    own: JSONObject = {"candidate_models": list(drafts)} if any(drafts) else {}
    return {
        **own,
        "retriever": retriever or {"kind": "empty"},
        "endpoint": llm.endpoint,
        "default": cast(JSONObject, asdict(llm.default)),
        "roles": {k: cast(JSONObject, asdict(v)) for k, v in sorted(llm.roles.items())},
        "max_rounds": options.max_rounds,
        "candidates": options.candidates,
        "budget_tokens": options.budget_tokens,
        "budget_usd": options.budget_usd,
        "crew_version": crew_code_version(),
    }


def crew_generator(
    llm: LLMClient,
    sandbox: Sandbox,
    options: CrewOptions,
    retriever: Retriever | None = None,
) -> Generator:
    def generate(task: PublicTask, index: int) -> Candidate:
        started = time.perf_counter()
        outcome = run_crew(
            task.request,
            llm=llm,
            sandbox=sandbox,
            retriever=retriever,
            options=options,
            task_id=task.task_id or task.key,
        )
        usage = outcome.usage
        report = outcome.test_report
        return Candidate(
            code=outcome.solution or None,
            status=outcome.status.value,
            reason=outcome.reason[:500],
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            latency_s=round(time.perf_counter() - started, 3),
            llm_calls=usage.calls,
            cache_hits=usage.cache_hits,
            rounds=outcome.rounds,
            own_tests_passed=report.passed if report else None,
            own_tests_total=report.total if report else None,
            drafts=list(outcome.drafts) or None,
            selection=outcome.selection.to_dict() if outcome.selection else None,
            reviewer_grade=parse_grade(outcome.review),
            models=sorted({entry.model for entry in usage.endpoints}) or None,
        )

    return generate
