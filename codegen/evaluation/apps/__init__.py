"""APPS: whole programs, stdin in and stdout out. Its task file and MapCoder's rows
(``tasks``), its sandbox scoring (``scoring``, driven by ``sandbox/inside/program_driver.py``),
its figures and its task shape (``figures``).

The room's face: the rest of codegen imports these names from here."""

from codegen.evaluation.apps.figures import APPS_SHAPE, describe, program_summary
from codegen.evaluation.apps.scoring import (
    MAX_STDOUT_BYTES,
    SCORING_VERSION,
    TIME_LIMIT_S,
    score_programs,
)
from codegen.evaluation.apps.tasks import (
    NAME,
    TaskFileError,
    expected_text,
    hidden_cases,
    is_task_file,
    parse_task_file,
    rows_modules,
    rows_verdicts,
)

__all__ = [
    "APPS_SHAPE",
    "MAX_STDOUT_BYTES",
    "NAME",
    "SCORING_VERSION",
    "TIME_LIMIT_S",
    "TaskFileError",
    "describe",
    "expected_text",
    "hidden_cases",
    "is_task_file",
    "parse_task_file",
    "program_summary",
    "rows_modules",
    "rows_verdicts",
    "score_programs",
]
