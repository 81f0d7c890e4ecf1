"""Exit statuses the commands share (ARCHITECTURE.md, "CLI contract").

0 success; 1 codegen itself failed (an unexpected error, or work that ended without its
result); 2 refused: nothing was done (nothing stored, nothing run) because the command as
called cannot work: bad arguments, or flags, settings or an environment that do not fit
together (a daemon holding another key, a candidate's key variable unset, --launch queue
with no daemon). The one-line message says what to change. `codegen generate` exits 2 too
when the request needs what the settings leave out (``missing_dependency``: the spec names a
distribution outside ``[sandbox] packages``): only the analyzer ran, and the reason names the
setting and the build command. Then what ended the work:
"""

from __future__ import annotations

import click

REFUSED_EXIT = 2  # click's own usage errors exit 2 too


class Refused(click.ClickException):
    """The command is refused before it does anything (exit 2, one line, no usage hint)."""

    exit_code = REFUSED_EXIT


# The model ended the request without passing: failed_tests, rejected, no_code,
# budget_exceeded, unrecorded (`codegen generate`).
NOT_PASSED_EXIT = 3
# The tests pass and the request waits for a person (`codegen review`).
AWAITING_REVIEW_EXIT = 4
# An outage: the endpoint or the sandbox could not be reached, or answered with an error that
# is not the model's (`codegen generate` ended `error`; `codegen eval` left tasks unscored).
# Nothing it touched is cached: a re-run retries it.
OUTAGE_EXIT = 5
# The spec or code answers another request (none of the names asked for).
OFF_TARGET_EXIT = 7
