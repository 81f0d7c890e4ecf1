"""What an LLM call gives back and how it fails, apart from the client that makes the call
(``codegen.agents.llm.client``), so steps and roles can name them without the client's machinery."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.agents.llm.wire import UNRECORDED_CODE


@dataclass
class Completion:
    role: str
    model: str
    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    latency_s: float
    cached: bool
    # A replay server answered (``wire.REPLAY_FINGERPRINT``): ``model`` is its replay label and
    # ``cost_usd`` None, since no model was called.
    replayed: bool = False


class LLMError(Exception):
    """The endpoint failed for good (retries exhausted, timeout, bad reply)."""

    def __init__(
        self, message: str, *, status: int | None = None, detail: str = "", code: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, when the endpoint answered with one
        self.detail = detail  # the endpoint's own error message
        self.code = code  # the endpoint's own error code (``error.code`` in the body)

    @property
    def unrecorded(self) -> bool:
        """A replay server's 404 for a turn its recording does not hold: the recording's end,
        not an outage (any other 404 is one)."""
        return self.status == 404 and self.code == UNRECORDED_CODE


# Words in a refusal of ``response_format``: llama.cpp answers HTTP 500 "response_format type
# must be one of "text" or "json_object", but got: json_schema"; vLLM before 0.5.5 answers
# 400 with pydantic's "Input should be 'text' or 'json_object'".
_REFUSAL_WORDS = ("response_format", "json_schema", "json_object", "unsupported", "not supported")


def refuses_structured_outputs(exc: LLMError) -> bool:
    """Whether an error is the server turning down the requested ``response_format``."""
    detail = exc.detail.lower()
    if exc.status in (400, 422):
        return True
    return exc.status is not None and any(word in detail for word in _REFUSAL_WORDS)


@dataclass(frozen=True)
class Draft:
    """Which programmer draft a call writes: ``candidate`` 0-based, ``round`` 1-based."""

    candidate: int = 0
    round: int = 1
