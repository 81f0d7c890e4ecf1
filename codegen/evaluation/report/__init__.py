"""What a run reports: the summary and pass@k (``summary``), the session's report
(``session_report``) and the verdicts a time limit decided (``time_limits``).

The room's face: the rest of codegen imports these names from here."""

from codegen.evaluation.report.session_report import (
    EvalOutage,
    HarnessBroken,
    Ran,
    Report,
    add_absent,
    build_report,
)
from codegen.evaluation.report.summary import (
    PlusSummary,
    Precision,
    Summary,
    TaskRow,
    failures_markdown,
    history_entry,
    picks_lines,
    plot_history,
    summarize,
    summary_markdown,
)
from codegen.evaluation.report.time_limits import (
    TimeLimitVerdicts,
)

__all__ = [
    "EvalOutage",
    "HarnessBroken",
    "PlusSummary",
    "Precision",
    "Ran",
    "Report",
    "Summary",
    "TaskRow",
    "TimeLimitVerdicts",
    "add_absent",
    "build_report",
    "failures_markdown",
    "history_entry",
    "picks_lines",
    "plot_history",
    "summarize",
    "summary_markdown",
]
