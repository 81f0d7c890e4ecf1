"""A request's options: the one definition of what a person may set (RequestOptions, shared
by the CLI flags, inbox files and the launchpad), its stored form, and the crew's resolved
CrewOptions."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Annotated, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from codegen.agents.llm import Budget
from codegen.json_types import JSONObject
from codegen.sandbox.types import Limits
from codegen.settings import DRAFTS, ROUNDS, TOKEN_BUDGET, USD_BUDGET, bounds_of


class ReviewMode(StrEnum):
    """Who signs off on code whose tests pass: the Reviewer agent, a person, or the agent then
    a person (``[review] mode``, overridable per request). Members are named as their values,
    which is how Dagster's launchpad shows an enum."""

    agent = "agent"
    human = "human"
    both = "both"


REVIEW_MODES = tuple(m.value for m in ReviewMode)


class BadOptions(ValueError):
    """A request's options are wrong: the one-line reason, before any model is called."""


class StoredOptions(TypedDict, total=False):
    """``RequestOptions`` as a request stores them: the values that were set, as JSON."""

    max_rounds: int
    candidates: int
    budget_tokens: int
    budget_usd: float
    review: str  # one of REVIEW_MODES


def _span(rng: FieldInfo) -> str:
    bounds = bounds_of(rng)
    return f"{bounds['min']}-{bounds['max']}"


class RequestOptions(BaseModel):
    """What a person may set on one request: the one definition of the names, types and ranges
    behind `codegen generate`'s flags, an inbox file's ``"options"`` and the launchpad config
    of ``submit_request_job``. Unset (None): the configured default."""

    model_config = ConfigDict(extra="forbid")

    # Each range is the setting's own (codegen.settings), so a flag and the config agree.
    max_rounds: Annotated[int | None, ROUNDS] = Field(
        default=None, description=f"Refinement rounds, {_span(ROUNDS)} (default: [llm] max_rounds)"
    )
    candidates: Annotated[int | None, DRAFTS] = Field(
        default=None,
        description=f"Programmer drafts, one picked by execution, {_span(DRAFTS)} (default: [llm] "
        "candidates; with a list there, its first N entries, repeated when N is longer)",
    )
    budget_tokens: Annotated[int | None, TOKEN_BUDGET] = Field(
        default=None, description="Stop after this many tokens (default: none)"
    )
    budget_usd: Annotated[float | None, USD_BUDGET] = Field(
        default=None, description="Dollar budget, above 0 (default: none)"
    )
    review: ReviewMode | None = Field(
        default=None,
        description="Who signs off once the tests pass: agent, human or both "
        "(default: [review] mode)",
    )

    @classmethod
    def check(cls, raw: object) -> StoredOptions:
        """``raw`` validated into the stored form (set values only); BadOptions says why not."""
        if not isinstance(raw, dict):
            raise BadOptions('"options" must be an object')
        try:
            options = cls.model_validate(raw)
        except ValidationError as exc:
            raise BadOptions(
                "bad options: "
                + "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'options'}: "
                    + ("unknown option" if e["type"] == "extra_forbidden" else e["msg"])
                    for e in exc.errors()
                )
            ) from exc
        return options.stored()

    def stored(self) -> StoredOptions:
        return cast(StoredOptions, self.model_dump(mode="json", exclude_none=True))

    @classmethod
    def bounds(cls, name: str) -> dict[str, float | bool]:
        """A numeric option's range as click's IntRange/FloatRange keywords."""
        return bounds_of(cls.model_fields[name])


# -- options and outcome ---------------------------------------------------------------------
@dataclass(frozen=True)
class CrewOptions:
    max_rounds: int = 3
    candidates: int = 1  # programmer drafts, one picked by execution (agents.pick.matrix)
    budget_tokens: int | None = None
    budget_usd: float | None = None
    # Retrieved context is cut to this many (estimated) tokens.
    context_token_budget: int = 1500
    top_k: int = 8
    # Sandbox limits for each test run; None means the sandbox's defaults.
    limits: Limits | None = None
    review: str = "agent"  # one of REVIEW_MODES

    @property
    def budget(self) -> Budget:
        return Budget(tokens=self.budget_tokens, usd=self.budget_usd)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject | None) -> CrewOptions:
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in (data or {}).items() if k in known}
        if isinstance(values.get("limits"), dict):
            values["limits"] = Limits(**values["limits"])
        if values.get("review", "agent") not in REVIEW_MODES:
            raise TypeError(f"review must be one of {', '.join(REVIEW_MODES)}")
        return cls(**values)
