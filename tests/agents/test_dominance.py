"""Issue 48: the pick cannot fall below the clearly most reliable model for no reason, and
each model's estimate comes from method-level questions (``agents.pick.dominance``,
``agents.pick.method_evidence``). Fixtures written here: one class task's five drafts as a
behaviour table (one column per call of a shared call sequence) and suite rows."""

from __future__ import annotations

from dataclasses import replace

from codegen.agents.pick import (
    BehaviourTable,
    Question,
    TaskQuestions,
    TaskVotes,
    UsedReliability,
    decide,
    estimate,
    estimate_from_questions,
    questions_of,
)
from codegen.agents.pick import rules as pick_rules
from codegen.agents.pick.behaviour import ERROR
from codegen.agents.pick.decision import agreement_rule
from codegen.agents.pick.reliability import METHOD_LEVEL, NONE_CAP, whole_drafts_tell
from codegen.agents.pick.rules import Observations

STRONG = "strong @ http://a"
WEAK = [f"weak{i} @ http://a" for i in range(1, 5)]
# Draft 0 (the strong model) answers the middle calls one way; drafts 1-4 agree on another.
CLASSES = [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
LABELS = [{0: "None"}, {0: "3", 1: "4"}, {0: "[3]", 1: "[4]"}, {0: "None"}]
ORIGINS = ["example", "example", "test", "test"]
EXAMPLE = "test_solution.py::test_spec_example_0"
GENERATED = "test_solution.py::test_push_pop"


def used(strong: tuple[float, float, float], weak: tuple[float, float, float]):
    return [UsedReliability(0, STRONG, strong[0], "evaluation", 60, strong[1], strong[2])] + [
        UsedReliability(i + 1, m, weak[0], "evaluation", 60, weak[1], weak[2])
        for i, m in enumerate(WEAK)
    ]


CLEAR = used((0.80, 0.72, 0.88), (0.40, 0.30, 0.50))
CLOSE = used((0.60, 0.50, 0.70), (0.55, 0.45, 0.65))


def pick(
    rows: list[tuple[bool, ...]], reliabilities: list[UsedReliability], classes=CLASSES
) -> tuple[int, str, str]:
    table = BehaviourTable([list(r) for r in classes], LABELS)
    decision = decide(
        table, [EXAMPLE, GENERATED], rows, [True, False], reliabilities, None, ORIGINS
    )
    return decision.chosen, decision.why, decision.rule


def test_four_weak_drafts_agreeing_on_a_wrong_class_do_not_outvote_the_clearly_reliable_one() -> (
    None
):
    rows = [(True, True)] * 5
    table = BehaviourTable([list(r) for r in CLASSES], LABELS)
    # Agreement alone (the rule before): the four weak drafts' group wins.
    seen = Observations(table, [EXAMPLE, GENERATED], rows, [True, False], CLEAR, None, ORIGINS)
    assert agreement_rule(seen).chosen != 0
    chosen, why, rule = pick(rows, CLEAR)
    assert (chosen, rule) == (0, "dominant_model")
    assert f"model {STRONG} stands clearly above the others" in why
    assert "low 0.72 > every other's high, at most 0.50" in why
    assert "its draft 0 stands" in why


def test_the_reliable_draft_failing_a_worked_example_another_passes_moves_the_pick() -> None:
    rows = [(False, True), (True, True), (True, True), (True, True), (True, True)]
    chosen, why, rule = pick(rows, CLEAR)
    assert chosen != 0 and rule == "dominant_model_shown_wrong"
    assert f"draft 0 fails worked example {EXAMPLE}" in why
    assert "where draft(s) 1, 2, 3, 4 are right" in why


def test_the_reliable_draft_raising_on_a_worked_example_call_moves_the_pick() -> None:
    classes = [[0, ERROR, 1, 0], *CLASSES[1:]]
    chosen, why, rule = pick([(True, True)] * 5, CLEAR, classes)
    assert chosen != 0 and rule == "dominant_model_shown_wrong"
    assert "draft 0 raises" in why and "worked-example call 1" in why


def test_close_estimates_leave_the_pick_to_agreement() -> None:
    rows = [(True, True)] * 5
    table = BehaviourTable([list(r) for r in CLASSES], LABELS)
    seen = Observations(table, [EXAMPLE, GENERATED], rows, [True, False], CLOSE, None, ORIGINS)
    agreed = agreement_rule(seen)
    chosen, why, rule = pick(rows, CLOSE)
    assert (chosen, why, rule) == (agreed.chosen, agreed.why, agreed.rule)
    assert chosen != 0


def test_one_model_for_every_draft_is_never_dominant() -> None:
    same = [UsedReliability(i, STRONG, 0.8, "evaluation", 60, 0.72, 0.88) for i in range(5)]
    table = BehaviourTable([list(r) for r in CLASSES], LABELS)
    seen = Observations(table, [EXAMPLE], [(True,)] * 5, [True], same, None, ORIGINS)
    assert pick_rules.rule_named("dominance")(seen) == agreement_rule(seen)


def test_questions_are_the_calls_and_checks_the_drafts_answer_differently() -> None:
    rows = [(False, True), (True, True), (True, True), (True, True), (True, True)]
    found = questions_of(CLASSES, rows, [True, False])
    # Columns 1 and 2 split the drafts; column 0 and 3 do not; the example splits them and
    # its known answer is passing; the generated test everyone passes asks nothing.
    assert [q.answers for q in found] == [
        (1, 0, 0, 0, 0),
        (1, 0, 0, 0, 0),
        tuple(r[0] for r in rows),
    ]
    assert [q.known for q in found] == [None, None, True]


def tasks_where_weak_models_share_mistakes() -> list[TaskQuestions]:
    """Forty classes, five questions each: the four weak models share a mistake the strong
    one does not make (the popularity trap); the worked examples settle two calls, which
    the strong model gets right and two weak ones (in turn) wrong; on one call the strong
    model agrees with two weak ones; on one no draft is right (every answer different)."""
    sources = (STRONG, *WEAK)
    tasks = []
    for t in range(40):
        wrong = {1 + t % 4, 1 + (t + 1) % 4}  # the weak drafts failing the examples
        example = tuple(i == 0 or i not in wrong for i in range(5))
        agree = {1 + (t + 2) % 4, 1 + (t + 3) % 4}
        questions = [
            Question((1, 0, 0, 0, 0)),
            Question(example, known=True, check=True),
            Question(example, known=True, check=True),
            Question(tuple(0 if i == 0 or i in agree else 10 + i for i in range(5))),
            Question((0, 1, 2, 3, 4)),
        ]
        tasks.append(TaskQuestions(sources, tuple(questions)))
    return tasks


def test_the_method_level_estimate_ranks_the_reliable_model_first_and_narrows_with_tasks() -> None:
    tasks = tasks_where_weak_models_share_mistakes()
    few = estimate_from_questions(tasks)
    strong, weak = few.estimates[STRONG], [few.estimates[m] for m in WEAK]
    assert strong.tasks == 40 and strong.low < strong.value < strong.high
    assert all(strong.value > w.value for w in weak)
    assert few.questions == 200
    # Forty tasks: the intervals overlap (no model dominates); eight times the tasks: they
    # no longer do.
    assert not all(strong.low > w.high for w in weak)
    many = estimate_from_questions(tasks * 8)
    assert all(many.estimates[STRONG].low > many.estimates[m].high for m in WEAK)


def test_whole_drafts_tell_the_models_apart_only_where_some_draft_is_right_on_most_tasks() -> None:
    sources = (STRONG, *WEAK)
    agreeing = [TaskVotes(sources, (True,) * 5, (0, 0, 0, 1, 2)) for _ in range(30)]
    assert whole_drafts_tell(estimate(agreeing))
    # Every draft of every class its own behaviour, most failing the examples: whole-class
    # agreement finds no right draft, and every estimate collapses alike.
    apart = [TaskVotes(sources, (True, False, False, True, False), (0, 1, 2, 3, 4))] * 30
    collapsed = estimate(apart)
    assert not whole_drafts_tell(collapsed)
    assert collapsed.none_correct == NONE_CAP


def test_a_method_level_estimate_weighs_no_vote_but_still_tells_a_dominant_model() -> None:
    rows = [(True, True)] * 5
    method = [replace(u, source=METHOD_LEVEL) for u in CLEAR]
    table = BehaviourTable([list(r) for r in CLASSES], LABELS)
    equal = [replace(u, value=None, source="none") for u in CLEAR]
    votes = Observations(table, [EXAMPLE, GENERATED], rows, [True, False], method, None, ORIGINS)
    plain = Observations(table, [EXAMPLE, GENERATED], rows, [True, False], equal, None, ORIGINS)
    assert agreement_rule(votes) == agreement_rule(plain)  # equal votes
    chosen, why, rule = pick(rows, method)  # the dominant draft stands
    assert (chosen, rule) == (0, "dominant_model") and "stands clearly above" in why
    close = [replace(u, source=METHOD_LEVEL) for u in CLOSE]
    assert pick(rows, close)[0] == agreement_rule(plain).chosen
