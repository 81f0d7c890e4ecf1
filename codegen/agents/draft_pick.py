"""The solution step's pick among several drafts: each draft against the suite plus the
spec's examples and on shared inputs in the sandbox, each draft's reliability (its
``[llm] candidates`` entry's, else the home's history of its model), then ``agents.pick``'s
``decide`` and the suite without the tests it found suspect."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from codegen.agents.llm import Draft, LLMClient, shown_url
from codegen.agents.pick import (
    CONFIG,
    HISTORY,
    NONE,
    CandidateRun,
    ReliabilityHistory,
    Selection,
    SharedInput,
    UsedReliability,
    decide,
    record,
    run_on_shared_inputs,
    run_on_streams,
    source_key,
    typicality,
    usable,
)
from codegen.agents.refine import Event
from codegen.agents.roles import execute_tests
from codegen.agents.state import CrewState, DraftCandidate
from codegen.agents.suite import (
    EXAMPLE_PREFIX,
    rows_of,
    spec_example_tests,
    test_function,
    with_examples,
    without_tests,
)
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits, TestReport


def used_reliabilities(
    llm: LLMClient, history: ReliabilityHistory | None, count: int
) -> list[UsedReliability]:
    """Per draft of ``count``, the reliability its vote counts with: its ``[llm] candidates``
    entry's (``config``), else the home's estimate of its model (``history``) when it
    rests on at least ``MIN_TASKS`` tasks (``history``), else none."""
    learned = usable(history.snapshot()) if history is not None else {}
    out: list[UsedReliability] = []
    for index in range(count):
        draft = Draft(candidate=index)
        # The name the draft's model is known by: model @ endpoint.
        model = llm.model_for("programmer", draft).model
        source = source_key(model, shown_url(llm.endpoint_for("programmer", draft)))
        configured = llm.reliability_for(draft)
        if configured is not None:
            out.append(UsedReliability(index, source, configured, CONFIG))
        elif source in learned:
            found = learned[source]
            out.append(UsedReliability(index, source, found.value, HISTORY, found.tasks))
        else:
            out.append(UsedReliability(index, source, None, NONE))
    return out


def select_draft(
    llm: LLMClient,
    history: ReliabilityHistory | None,
    on_event: Event,
    box: Sandbox,
    state: CrewState,
    limits: Limits | None,
) -> tuple[int, Selection, str]:
    """Every draft against the suite plus the spec's examples (one pytest run each) and, in
    one more sandbox execution, on the shared inputs (``agents.pick.agreement``); the pick, why,
    and the suite without suspect tests."""
    assert state.tests is not None and state.draft is not None
    drafts = state.draft.drafts
    assert state.spec is not None and state.spec.spec is not None
    spec = state.spec.spec
    examples = spec_example_tests(spec)
    suite = with_examples(state.tests.tests, examples)
    on_event(f"selection: {len(drafts)} drafts against the suite in the sandbox")

    def run(draft: DraftCandidate) -> TestReport | None:
        return execute_tests(box, draft.code, suite, limits) if draft.code else None

    codes = [d.code or "" for d in drafts]
    with ThreadPoolExecutor(max_workers=min(4, len(drafts) + 1)) as pool:
        # A program is compared as what the user runs: on input streams, not its functions.
        shared_future = (
            pool.submit(run_on_streams, box, codes, spec.program, limits)
            if spec.program is not None
            else pool.submit(run_on_shared_inputs, box, codes, spec, state.tests.tests, limits)
        )
        reports = list(pool.map(run, drafts))
        shared = shared_future.result()
    names, rows = rows_of([r or TestReport() for r in reports])
    trusted = [test_function(n).startswith(EXAMPLE_PREFIX) for n in names]
    # Each draft's reliability: its [llm] candidates entry's, else what this home learned of
    # its model (earlier evaluations and requests), else none (equal votes).
    used = used_reliabilities(llm, history, len(drafts))
    typical = typicality(codes)
    decision = decide(shared.table, names, rows, trusted, used, typical)
    base = Selection(
        chosen=decision.chosen,
        why=decision.why,
        trusted_tests=[n for n, t in zip(names, trusted, strict=True) if t],
        candidates=[
            CandidateRun(
                candidate=i,
                problem=d.problem,
                passed=r.passed if r else 0,
                total=r.total if r else 0,
                outcomes=dict(zip(names, rows[i], strict=True)),
                tokens=d.usage.total_tokens,
                cost_usd=d.usage.cost_usd,
                classes=list(shared.table.classes[i]),
                typicality=typical[i],
            )
            for i, (d, r) in enumerate(zip(drafts, reports, strict=True))
        ],
        inputs=[
            SharedInput(i.text or ", ".join(repr(a) for a in i.args), i.origin, dict(labels))
            for i, labels in zip(shared.inputs, shared.table.labels, strict=True)
        ],
        inputs_seconds=round(shared.seconds, 3) if shared.inputs else None,
        inputs_time_limit_s=shared.time_limit_s if shared.inputs else None,
        reliabilities=list(used),
    )
    selection = record(base, decision, names)
    chosen_index, why, suspect_names = selection.chosen, selection.why, selection.suspect_tests
    designer_names = [n for n, t in zip(names, trusted, strict=True) if not t]
    tests = without_tests(state.tests.tests, suspect_names, designer_names)
    on_event(f"selection: draft {chosen_index} picked ({why})")
    return chosen_index, selection, tests
