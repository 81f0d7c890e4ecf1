"""The model client: one OpenAI-compatible endpoint per role or draft, its wire contract
(the headers a replay server reads), the response cache, Structured Outputs, usage and budget.

It knows nothing of how drafts are picked: the step that picks hands reliabilities in.
"""

from codegen.agents.llm.call import Completion, Draft, LLMError
from codegen.agents.llm.client import LLMClient, first_call_started
from codegen.agents.llm.endpoint import (
    CandidateRoute,
    LLMRoute,
    RoleModel,
    candidate_at,
    resolved_base_url,
    shown_url,
)
from codegen.agents.llm.structured import StructuredMode, StructuredModes, structured_modes_file
from codegen.agents.llm.usage import Budget, BudgetExceeded, Meter, Usage
from codegen.agents.llm.wire import (
    CANDIDATE_HEADER,
    REPLAY_FINGERPRINT,
    REQUEST_HEADER,
    ROLE_HEADER,
    ROUND_HEADER,
    SCRIPTED_FINGERPRINT,
    TASK_HEADER,
    UNKNOWN_MODEL,
    UNRECORDED_CODE,
    replayed_label,
    request_key,
)

__all__ = [
    "CANDIDATE_HEADER",
    "REPLAY_FINGERPRINT",
    "REQUEST_HEADER",
    "ROLE_HEADER",
    "ROUND_HEADER",
    "SCRIPTED_FINGERPRINT",
    "TASK_HEADER",
    "UNKNOWN_MODEL",
    "UNRECORDED_CODE",
    "Budget",
    "BudgetExceeded",
    "CandidateRoute",
    "Completion",
    "Draft",
    "LLMClient",
    "LLMError",
    "LLMRoute",
    "Meter",
    "RoleModel",
    "StructuredMode",
    "StructuredModes",
    "Usage",
    "candidate_at",
    "first_call_started",
    "replayed_label",
    "request_key",
    "resolved_base_url",
    "shown_url",
    "structured_modes_file",
]
