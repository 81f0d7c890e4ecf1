"""An evaluation session (``eval_session``): a task set, a configuration and a mode run and
reported; a backfill's plan (``backfill_plan``); the crew as a generator (``crew_generator``,
imported lazily).

The room's face: the rest of codegen imports these names from here."""

from codegen.evaluation.session.backfill_plan import (
    HISTORY_BY_CLI,
    HISTORY_BY_SUMMARY,
    HISTORY_TAG,
    LLM_POOL,
    MODE_TAG,
    PACKAGE_SET_TAG,
    SAMPLES_FILE_TAG,
    SANDBOX_POOL,
    TASK_SET_PARTITIONS,
    TASK_SET_TAG,
    BackfillPlan,
    plan_backfill,
)
from codegen.evaluation.session.eval_session import (
    EvalSession,
    EvalSetup,
    LLMSource,
    Note,
    RetrieverSource,
    RunResult,
    SandboxSource,
    canonical_config,
    crew_config,
    samples_config,
    score_samples_file,
)

__all__ = [
    "HISTORY_BY_CLI",
    "HISTORY_BY_SUMMARY",
    "HISTORY_TAG",
    "LLM_POOL",
    "MODE_TAG",
    "PACKAGE_SET_TAG",
    "SAMPLES_FILE_TAG",
    "SANDBOX_POOL",
    "TASK_SET_PARTITIONS",
    "TASK_SET_TAG",
    "BackfillPlan",
    "EvalSession",
    "EvalSetup",
    "LLMSource",
    "Note",
    "RetrieverSource",
    "RunResult",
    "SandboxSource",
    "canonical_config",
    "crew_config",
    "plan_backfill",
    "samples_config",
    "score_samples_file",
]
