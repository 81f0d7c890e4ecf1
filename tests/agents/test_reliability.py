"""Candidates from several models (agents.pick.reliability): each source's reliability estimated
across the tasks of an evaluation without hidden tests, and the pick weighing it; fixtures
written for these tests."""

from __future__ import annotations

import pytest

from codegen.agents.pick import BehaviourTable, TaskVotes, agreement_pick, estimate
from codegen.agents.pick.reliability import UNKNOWN, Reliability
from codegen.sandbox.calls import CallOutcome


def ok(value: object) -> CallOutcome:
    return CallOutcome("ok", value)


def evaluation() -> list[TaskVotes]:
    """20 tasks, three sources. ``strong`` passes every example and is always right (behaviour
    "A"). The two weak ones fail a worked example on 12 tasks between them and agree with
    ``strong`` on some others; on the last 4 tasks both pass the examples and agree with each
    other on another behaviour ("B"): by count, two against one."""
    tasks = []
    sources = ("strong", "weak1", "weak2")
    for t in range(20):
        if t < 6:  # weak1 fails an example
            eligible, behaviours = (True, False, True), ("A", "x", "A")
        elif t < 12:  # weak2 fails an example
            eligible, behaviours = (True, True, False), ("A", "A", "x")
        elif t < 16:  # everyone agrees
            eligible, behaviours = (True, True, True), ("A", "A", "A")
        else:  # the weak ones agree on a wrong behaviour
            eligible, behaviours = (True, True, True), ("A", "B", "B")
        tasks.append(TaskVotes(sources, eligible, behaviours))
    return tasks


def test_the_estimate_ranks_the_sources_without_hidden_tests() -> None:
    reliability = estimate(evaluation())
    accuracy = reliability.accuracy
    assert accuracy["strong"] > 0.85
    assert accuracy["weak1"] < 0.7 and accuracy["weak2"] < 0.7
    # The strong source's log-odds outweigh the two weak ones together.
    assert reliability.weight("strong") > reliability.weight("weak1") + reliability.weight("weak2")
    # A source never seen (or no estimate at all) counts 1, as today's rule does.
    assert reliability.weight("unknown") == 1.0
    assert Reliability({}).weights(["a", "b"]) == [1.0, 1.0]


def test_weaker_models_that_agree_do_not_outvote_a_reliable_one() -> None:
    # One task: every candidate passes the worked example; the two weak drafts return the
    # same wrong outputs on the generated inputs, the strong model's draft the right ones.
    right = [ok(2), ok(3), ok(1)]
    wrong = [ok(2), ok(4), ok(0)]
    table = BehaviourTable.of([right, wrong, wrong])
    rows = [(True,), (True,), (True,)]  # the worked example: passed by all
    trusted = [True]
    by_count = agreement_pick(table, rows, trusted)
    assert by_count.rule == "output_agreement"
    assert by_count.group.members == (1, 2)
    weights = estimate(evaluation()).weights(["strong", "weak1", "weak2"])
    weighted = agreement_pick(table, rows, trusted, priors=weights)
    assert weighted.rule == "weighted_output_agreement"
    assert weighted.chosen == 0 and weighted.group.members == (0,)
    assert weighted.group.weight == pytest.approx(weights[0], abs=1e-4)
    # A reliable model's draft that fails the worked example still cannot win.
    failing = agreement_pick(table, [(False,), (True,), (True,)], trusted, priors=weights)
    assert failing.chosen == 1 and 0 not in failing.eligible


def test_equal_priors_are_todays_rule() -> None:
    table = BehaviourTable.of([[ok(1)], [ok(2)], [ok(2)], [CallOutcome("error", error="E")]])
    rows = [()] * 4
    plain = agreement_pick(table, rows)
    equal = agreement_pick(table, rows, priors=[1.0] * 4)
    assert plain.chosen == equal.chosen == 1
    assert [g.members for g in plain.groups] == [g.members for g in equal.groups]
    with pytest.raises(ValueError, match="priors"):
        agreement_pick(table, rows, priors=[1.0])


def test_a_models_history_from_its_candidates_entry_weighs_its_drafts() -> None:
    from codegen import composition
    from codegen.agents.llm import LLMRoute
    from codegen.agents.pick.reliability import priors_from_history
    from codegen.settings import CandidateModel

    entry = CandidateModel(model="strong", reliability=0.95)
    route = composition.candidate_route(entry)
    assert route.reliability == 0.95
    stored = LLMRoute("http://127.0.0.1:1/v1", candidates=(route,)).to_dict()
    assert LLMRoute.from_dict(stored).candidates[0].reliability == 0.95
    with pytest.raises(ValueError):
        CandidateModel(reliability=1.0)
    # No entry with a history: no priors, today's count.
    assert priors_from_history(["a", "b"], [None, None]) is None
    priors = priors_from_history(["strong", "weak", "other"], [0.95, 0.6, None])
    assert priors == [0.95, 0.6, pytest.approx(UNKNOWN)]


def test_similarity_support_lets_near_identical_drafts_support_each_other() -> None:
    # Five inputs. The two strong drafts are right and differ only on input 4 (outside the
    # domain: one raises, one returns); the two weak drafts return the same wrong value on
    # inputs 1 to 3. By exact groups the weak pair is the largest; by expected agreement,
    # the strong drafts support each other on four inputs of five.
    error = CallOutcome("error", error="ValueError: x")
    right_a = [ok(1), ok(2), ok(3), ok(4), error]
    right_b = [ok(1), ok(2), ok(3), ok(4), ok(0)]
    wrong = [ok(1), ok(9), ok(9), ok(9), ok(0)]
    table = BehaviourTable.of([right_a, right_b, wrong, wrong])
    rows = [()] * 4
    assert agreement_pick(table, rows).group.members == (2, 3)
    priors = Reliability({"strong": 0.9, "weak": 0.6}).probabilities(
        ["strong", "strong", "weak", "weak"]
    )
    chosen = agreement_pick(table, rows, priors=priors, support="similarity")
    assert chosen.rule == "similarity_agreement"
    assert chosen.chosen in (0, 1) and "expected agreement" in chosen.why
    assert chosen.groups[0].similarity > chosen.groups[-1].similarity
    # Equal priors: the weak pair's exact agreement still wins (a tie is not invented).
    assert agreement_pick(table, rows, support="similarity").chosen == 2


def test_each_drafts_history_comes_from_its_candidates_entry() -> None:
    from codegen.agents.llm import CandidateRoute, Draft, LLMClient

    entries = (CandidateRoute(model="strong", reliability=0.9), CandidateRoute(model="weak"))
    llm = LLMClient(base_url="http://127.0.0.1:9/v1", api_key="sk-unused", candidates=entries)
    # Draft i takes entry i, the list repeated past its end.
    assert [llm.reliability_for(Draft(candidate=i)) for i in range(3)] == [0.9, None, 0.9]
    assert llm.model_for("programmer", Draft(candidate=2)).model == "strong"
    assert LLMClient(base_url="http://127.0.0.1:9/v1", api_key="x").reliability_for(Draft()) is None


def test_with_no_shared_input_the_most_reliable_draft_passing_the_examples_wins() -> None:
    table = BehaviourTable([[] for _ in range(3)], [])  # no input could be derived
    rows = [(True,), (True,), (False,)]
    chosen = agreement_pick(table, rows, [True], priors=[0.6, 0.9, 0.95], support="similarity")
    assert chosen.chosen == 1 and chosen.eligible == (0, 1)
