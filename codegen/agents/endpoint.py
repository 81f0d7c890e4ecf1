"""Where a request's calls go: the route (base URL and the model of each role, never the key),
the SDK's own default endpoint, and URLs as shown to people (without credentials)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit, urlunsplit

from codegen.json_types import JSONObject


@dataclass(frozen=True)
class RoleModel:
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 4096


@dataclass(frozen=True)
class LLMRoute:
    """The non-secret half of an LLM configuration: where calls go and which models answer.

    A request queued by ``codegen generate`` carries its caller's route, so the daemon that
    runs it calls the caller's endpoint (the key is never part of a route)."""

    base_url: str
    default: RoleModel = RoleModel()
    roles: dict[str, RoleModel] = field(default_factory=dict)

    def to_dict(self) -> JSONObject:
        return {
            "base_url": self.base_url,
            "default": asdict(self.default),
            "roles": {k: asdict(v) for k, v in sorted(self.roles.items())},
        }

    @classmethod
    def from_dict(cls, data: JSONObject) -> LLMRoute:
        return cls(
            base_url=str(data["base_url"]),
            default=RoleModel(**data.get("default", {})),
            roles={k: RoleModel(**v) for k, v in (data.get("roles") or {}).items()},
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
