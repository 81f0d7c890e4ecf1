"""Where a request's calls go: the route (base URL, the model of each role and of each
programmer candidate, never a key), the SDK's own default endpoint, and URLs as shown to people
(without credentials)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from codegen.json_types import JSONObject


@dataclass(frozen=True)
class RoleModel:
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 4096


@dataclass(frozen=True)
class CandidateRoute:
    """One programmer candidate's overrides of the programmer's model and of the endpoint;
    None keeps the programmer role's value (``base_url``: the route's own endpoint).

    ``api_key_env`` is the *name* of the environment variable holding the key for
    ``base_url``, read where the call is made; a candidate with its own ``base_url`` and no
    ``api_key_env`` sends no key (the main key never goes to another host unasked).
    ``reliability``: the model's verified share correct from a history, if the user has one
    (``agents.pick.reliability.priors_from_history``)."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    reliability: float | None = None

    def applied_to(self, programmer: RoleModel) -> RoleModel:
        """The programmer's model with this candidate's overrides."""
        own = {k: v for k, v in asdict(self).items() if k in ("model", "temperature", "max_tokens")}
        return replace(programmer, **{k: v for k, v in own.items() if v is not None})

    def to_dict(self) -> JSONObject:
        return {k: v for k, v in asdict(self).items() if v is not None}


def candidate_at(candidates: tuple[CandidateRoute, ...], index: int) -> CandidateRoute:
    """Draft ``index``'s entry: the list's, repeated from the start when there are more drafts
    than entries; no entries: the programmer's own model."""
    return candidates[index % len(candidates)] if candidates else CandidateRoute()


@dataclass(frozen=True)
class LLMRoute:
    """The non-secret half of an LLM configuration: where calls go and which models answer.

    A request queued by ``codegen generate`` carries its caller's route, so the daemon that
    runs it calls the caller's endpoint (the key is never part of a route). ``candidates``:
    the caller's ``[llm] candidates``, one entry per draft (their number is the default number
    of drafts), each with its model and endpoint and the name of its key's variable."""

    base_url: str
    default: RoleModel = RoleModel()
    roles: dict[str, RoleModel] = field(default_factory=dict)
    candidates: tuple[CandidateRoute, ...] = ()

    def key_envs(self) -> list[tuple[int, str]]:
        """(candidate, variable) for each candidate naming its key's variable."""
        return [(i, c.api_key_env) for i, c in enumerate(self.candidates) if c.api_key_env]

    def to_dict(self) -> JSONObject:
        return {
            "base_url": self.base_url,
            "default": asdict(self.default),
            "roles": {k: asdict(v) for k, v in sorted(self.roles.items())},
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: JSONObject) -> LLMRoute:
        return cls(
            base_url=str(data["base_url"]),
            default=RoleModel(**data.get("default", {})),
            roles={k: RoleModel(**v) for k, v in (data.get("roles") or {}).items()},
            # A route stored before candidates travelled has none: the runner's own default.
            candidates=tuple(CandidateRoute(**c) for c in data.get("candidates") or []),
        )


# Where the openai SDK sends requests when neither the settings nor OPENAI_BASE_URL say.
SDK_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def resolved_base_url(base_url: str | None = None) -> str:
    """The base URL a client with ``base_url`` (None: the SDK's environment) calls."""
    return str(base_url or os.environ.get("OPENAI_BASE_URL") or SDK_DEFAULT_BASE_URL)


def shown_url(url: str) -> str:
    """``url`` without any user:password part, for reports, metadata and messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
