"""ClassEval (FudanSELab): its task file and replies (``tasks``), its per-test-class scoring
(``scoring``), its figures and its task shape (``figures``).

The room's face: the rest of codegen imports these names from here."""

from codegen.evaluation.classeval.figures import (
    CLASSEVAL_SHAPE,
    FAILURES_SHOWN,
    FIGURES,
    KS,
    METADATA_FAILURES,
    class_summary,
    describe,
    metadata,
)
from codegen.evaluation.classeval.scoring import (
    SCORING_VERSION,
    TEST_CLASS_TIMEOUT_S,
    Pair,
    outcome,
    runner_test,
    score_classes,
)
from codegen.evaluation.classeval.tasks import (
    NAME,
    SHAPE,
    TaskFileError,
    candidate_module,
    extract_code,
    is_task_list,
    parse_task,
    parse_task_list,
    replies_modules,
)

__all__ = [
    "CLASSEVAL_SHAPE",
    "FAILURES_SHOWN",
    "FIGURES",
    "KS",
    "METADATA_FAILURES",
    "NAME",
    "SCORING_VERSION",
    "SHAPE",
    "TEST_CLASS_TIMEOUT_S",
    "Pair",
    "TaskFileError",
    "candidate_module",
    "class_summary",
    "describe",
    "extract_code",
    "is_task_list",
    "metadata",
    "outcome",
    "parse_task",
    "parse_task_list",
    "replies_modules",
    "runner_test",
    "score_classes",
]
