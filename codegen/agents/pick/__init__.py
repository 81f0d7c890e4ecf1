"""The pick: one draft chosen among several from what was observed of them (``decide``), by
agreement on shared inputs (``inputs/``; for a program, input streams: ``programs``), each
draft's vote weighed by its model's reliability and its history, the suite's pass/fail matrix
as the fallback, typicality as the tie-break, and the records a pick leaves. The crew's
selection step and an evaluation's re-pick share it. The rule itself is a registered
``PickRule`` (``rules``): ``DEFAULT_RULE`` names the one used (``dominance``: agreement unless
one model's estimate stands clearly above the others'). Each model's estimate in an
evaluation's re-pick comes from method-level questions (``method_evidence``)."""

from codegen.agents.pick.agreement import (
    CALL_LIMIT_S,
    DRAFT_DEADLINE_S,
    MAX_TIMEOUTS,
    agreement_pick,
    run_on_shared_inputs,
)
from codegen.agents.pick.behaviour import BehaviourTable
from codegen.agents.pick.decision import decide, observations, record, repick
from codegen.agents.pick.dominance import Dominant, Evidence, dominant_model, shown_wrong
from codegen.agents.pick.matrix import Row, dual_agreement, pick
from codegen.agents.pick.method_evidence import (
    Estimate,
    MethodReliability,
    Question,
    TaskQuestions,
    estimate_from_questions,
    questions_of,
    with_interval,
)
from codegen.agents.pick.posterior import CHECK_ERRORS, posterior_pick
from codegen.agents.pick.programs import STREAM_LIMIT_S, run_on_streams
from codegen.agents.pick.records import CandidateRun, Selection, SharedInput, UsedReliability
from codegen.agents.pick.reliability import (
    CONFIG,
    EVALUATION,
    HISTORY,
    METHOD_LEVEL,
    NONE,
    PRIOR,
    TaskVotes,
    estimate,
    source_key,
    tasks_per_source,
    votes_of,
    whole_drafts_tell,
)
from codegen.agents.pick.reliability_history import (
    FILE_NAME,
    Learned,
    ReliabilityHistory,
    usable,
)
from codegen.agents.pick.rules import (
    PICK_RULES,
    Decision,
    Observations,
    PickRule,
    register_rule,
)
from codegen.agents.pick.typical import most_typical, typicality

__all__ = [
    "CALL_LIMIT_S",
    "CHECK_ERRORS",
    "CONFIG",
    "DRAFT_DEADLINE_S",
    "EVALUATION",
    "FILE_NAME",
    "HISTORY",
    "MAX_TIMEOUTS",
    "METHOD_LEVEL",
    "NONE",
    "PICK_RULES",
    "PRIOR",
    "STREAM_LIMIT_S",
    "BehaviourTable",
    "CandidateRun",
    "Decision",
    "Dominant",
    "Estimate",
    "Evidence",
    "Learned",
    "MethodReliability",
    "Observations",
    "PickRule",
    "Question",
    "ReliabilityHistory",
    "Row",
    "Selection",
    "SharedInput",
    "TaskQuestions",
    "TaskVotes",
    "UsedReliability",
    "agreement_pick",
    "decide",
    "dominant_model",
    "dual_agreement",
    "estimate",
    "estimate_from_questions",
    "most_typical",
    "observations",
    "pick",
    "posterior_pick",
    "questions_of",
    "record",
    "register_rule",
    "repick",
    "run_on_shared_inputs",
    "run_on_streams",
    "shown_wrong",
    "source_key",
    "tasks_per_source",
    "typicality",
    "usable",
    "votes_of",
    "whole_drafts_tell",
    "with_interval",
]
