"""The pick: one draft chosen among several from what was observed of them (``decide``), by
agreement on shared inputs (``inputs/``), each draft's vote weighed by its model's reliability
and its history, the suite's pass/fail matrix as the fallback, typicality as the tie-break, and
the records a pick leaves. The crew's selection step and an evaluation's re-pick share it.
The rule itself is a registered ``PickRule`` (``rules``): ``DEFAULT_RULE`` names the one used."""

from codegen.agents.pick.agreement import (
    CALL_LIMIT_S,
    DRAFT_DEADLINE_S,
    MAX_TIMEOUTS,
    agreement_pick,
    run_on_shared_inputs,
)
from codegen.agents.pick.behaviour import BehaviourTable
from codegen.agents.pick.decision import decide, record, repick
from codegen.agents.pick.matrix import Row, dual_agreement, pick
from codegen.agents.pick.posterior import CHECK_ERRORS, posterior_pick
from codegen.agents.pick.records import CandidateRun, Selection, SharedInput, UsedReliability
from codegen.agents.pick.reliability import (
    CONFIG,
    EVALUATION,
    HISTORY,
    NONE,
    TaskVotes,
    estimate,
    source_key,
    tasks_per_source,
    votes_of,
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
    "NONE",
    "PICK_RULES",
    "BehaviourTable",
    "CandidateRun",
    "Decision",
    "Learned",
    "Observations",
    "PickRule",
    "ReliabilityHistory",
    "Row",
    "Selection",
    "SharedInput",
    "TaskVotes",
    "UsedReliability",
    "agreement_pick",
    "decide",
    "dual_agreement",
    "estimate",
    "most_typical",
    "pick",
    "posterior_pick",
    "record",
    "register_rule",
    "repick",
    "run_on_shared_inputs",
    "source_key",
    "tasks_per_source",
    "typicality",
    "usable",
    "votes_of",
]
