"""What a request leaves behind: report.json (``RequestReport``, its one writer) and the
artifacts beside it, the plain-text lines the CLI and the UI show of it, and the reviewer's
grade read from its reply."""

from codegen.agents.report.grade import GradeSummary, parse_grade
from codegen.agents.report.request_report import (
    RequestReport,
    Verification,
    grounding_from_json,
    store_artifacts,
    write_report,
)
from codegen.agents.report.shown import (
    all_pass,
    counted,
    grade_line,
    module_lines,
    packages_line,
    program_run_lines,
    program_runs,
)

__all__ = [
    "GradeSummary",
    "RequestReport",
    "Verification",
    "all_pass",
    "counted",
    "grade_line",
    "grounding_from_json",
    "module_lines",
    "packages_line",
    "parse_grade",
    "program_run_lines",
    "program_runs",
    "store_artifacts",
    "write_report",
]
