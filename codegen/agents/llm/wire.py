"""The wire contract between the crew and an OpenAI-compatible endpoint (docs/architecture.md,
"LLM endpoint").

Every request says which turn it is, so outside servers can replay recorded replies by role,
task, draft and round; a replay server answers a turn it never recorded with a 404 carrying
``UNRECORDED_CODE``. The crew sends these and the replay servers and recordings key on them:
defined here, once, where the sender lives, and imported by ``codegen/replay``.
"""

from __future__ import annotations

import hashlib

ROLE_HEADER = "X-Codegen-Agent"
TASK_HEADER = "X-Codegen-Task"
CANDIDATE_HEADER = "X-Codegen-Candidate"  # programmer drafts only: 0-based draft
ROUND_HEADER = "X-Codegen-Round"  # programmer drafts only: 1-based round
# Requests of `codegen generate` only: request_key(text). The task header carries the request
# id, new in every run; this one is the same for the same text, so a recording of one run
# answers a later run of the same request.
REQUEST_HEADER = "X-Codegen-Request"
# The error code of a replay server's 404 for a turn its recording never held.
UNRECORDED_CODE = "replay_unrecorded"
# The ``system_fingerprint`` of a replay server's completions: no model was called. Its
# ``model`` names the model the recording says wrote the reply ("unknown" when it does not say).
REPLAY_FINGERPRINT = "codegen-replay"
# The scripted server's: it plays the model asked for (its replies are labelled and priced as
# that model, so budgets and costs can be tested offline).
SCRIPTED_FINGERPRINT = "codegen-scripted"
UNKNOWN_MODEL = "unknown"


def replayed_label(model: str | None) -> str:
    """What usage, reports and ``codegen eval list`` call a replayed reply's model."""
    return f"replay:{model or UNKNOWN_MODEL}"


def request_key(text: str) -> str:
    """The stable identity of a request's text (``REQUEST_HEADER``): a digest of the text
    with its whitespace runs made single spaces, so retyped spacing keeps the key."""
    normalized = " ".join(text.split())
    return hashlib.sha256(normalized.encode()).hexdigest()[:32]


def headers(
    role: str,
    task: str | None = None,
    request: str | None = None,
    draft: tuple[int, int] | None = None,
) -> dict[str, str]:
    """The headers of one request (never a secret); ``draft``: a programmer's (candidate,
    round)."""
    sent = {ROLE_HEADER: role}
    if task:
        sent[TASK_HEADER] = task
    if request:
        sent[REQUEST_HEADER] = request
    if draft is not None:
        sent[CANDIDATE_HEADER], sent[ROUND_HEADER] = str(draft[0]), str(draft[1])
    return sent
