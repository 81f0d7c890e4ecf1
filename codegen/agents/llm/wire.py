"""The wire contract between the crew and an OpenAI-compatible endpoint (docs/architecture.md,
"LLM endpoint").

Every request says which turn it is, so outside servers can replay recorded replies by role,
task, draft and round; a replay server answers a turn it never recorded with a 404 carrying
``UNRECORDED_CODE``. The crew sends these and the replay servers and recordings key on them:
defined here, once, where the sender lives, and imported by ``codegen/replay``.
"""

from __future__ import annotations

ROLE_HEADER = "X-Codegen-Agent"
TASK_HEADER = "X-Codegen-Task"
CANDIDATE_HEADER = "X-Codegen-Candidate"  # programmer drafts only: 0-based draft
ROUND_HEADER = "X-Codegen-Round"  # programmer drafts only: 1-based round
# The error code of a replay server's 404 for a turn its recording never held.
UNRECORDED_CODE = "replay_unrecorded"
