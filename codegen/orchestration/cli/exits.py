"""The exit statuses every command shares: the one rule (docs/cli.md, "Exit codes", lists them).

0 done. 1 work that failed inside codegen (an unexpected error, or work that ended without
its result). 2 refused before any work (nothing stored, nothing run): bad input of any kind,
files included (missing, unreadable, too large or malformed: a task, samples, recording or
request file, ``codegen.toml``), bad flags, or flags, settings or an environment that do not
fit together (a daemon holding another key, an unset key variable, a busy port); the one
line says what to change. Each outcome of the work has its own status from 3 on (below).

The one exception: ``codegen sandbox exec`` exits with its command's own status, as
``docker run`` does (``cli/sandbox.py``).

Input from outside that cannot be used is a ``codegen.untrusted.BadInput`` wherever it is
read; ``cli.main`` turns every one into this refusal, so no command maps it on its own.
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
# The spec needs a distribution the sandbox's package set lacks (`missing_dependency`): the
# analyzer ran, so this is an outcome, not a refusal; the reason names the setting and the
# build command.
MISSING_DEPENDENCY_EXIT = 6
# The spec or code answers another request (none of the names asked for).
OFF_TARGET_EXIT = 7
