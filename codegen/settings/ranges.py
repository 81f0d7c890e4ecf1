"""The ranges that a setting shares with a request's option or a CLI flag, one definition each:
the settings' tables use them, and RequestOptions and the commands' IntRange read them
(``bounds_of``)."""

from __future__ import annotations

from pydantic import Field
from pydantic.fields import FieldInfo

MAX_CANDIDATES = 20  # programmer drafts per request
DRAFTS = Field(ge=1, le=MAX_CANDIDATES)
ROUNDS = Field(ge=1, le=20)  # refinement rounds per request
TOKEN_BUDGET = Field(ge=1)
USD_BUDGET = Field(gt=0)
TOP_K = Field(ge=1, le=100)  # retrieved hits per query (`codegen search -k`)
SAMPLES = Field(ge=1, le=200)  # an evaluation's candidates per task
WORKERS = Field(ge=1, le=64)  # an evaluation's tasks worked on at once
TEMPERATURE = Field(ge=0, le=2)  # the range OpenAI-compatible endpoints take
MAX_TOKENS = Field(ge=1)
MODEL_NAME = Field(min_length=1)
MEMORY_MB = Field(ge=16)  # as the sandbox's own floor ([sandbox] memory_mb)
SHARE = Field(ge=0, le=1)  # a fraction: an MRR floor, a recall, a ratio
POSITIVE = Field(gt=0)  # a timeout, a delay that must pass, a size
AT_LEAST_ONE = Field(ge=1)  # a count of pages, items, bytes, queries, workers
NOT_NEGATIVE = Field(ge=0)  # retries, waits


def bounds_of(field: FieldInfo) -> dict[str, float | bool]:
    """A numeric range as click's IntRange/FloatRange keywords (min, max, min_open, max_open)."""
    out: dict[str, float | bool] = {}
    for rule in field.metadata:
        for attr, key, is_open in (
            ("ge", "min", False),
            ("gt", "min", True),
            ("le", "max", False),
            ("lt", "max", True),
        ):
            if getattr(rule, attr, None) is not None:
                out[key] = getattr(rule, attr)
                if is_open:
                    out[f"{key}_open"] = True
    return out
