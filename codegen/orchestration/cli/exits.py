"""Exit statuses the commands share (ARCHITECTURE.md, "CLI contract").

0 success, 1 codegen itself failed, 2 usage; then what ended the work:
"""

from __future__ import annotations

# The model ended the request without passing: failed_tests, rejected, no_code,
# budget_exceeded, unrecorded (`codegen generate`).
NOT_PASSED_EXIT = 3
# The tests pass and the request waits for a person (`codegen review`).
AWAITING_REVIEW_EXIT = 4
# An outage: the endpoint or the sandbox could not be reached, or answered with an error that
# is not the model's (`codegen generate` ended `error`; `codegen eval` left tasks unscored).
# Nothing it touched is cached: a re-run retries it.
OUTAGE_EXIT = 5
