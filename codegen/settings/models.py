"""The settings object: its tables, where it is read from (``CODEGEN_*`` variables, then the
TOML file that ``config_file`` names, then the defaults), and the data directory's locations."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from pydantic import Field, PrivateAttr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from codegen.settings.sections import (
    CorpusSettings,
    EvalSettings,
    LLMSettings,
    RetrievalSettings,
    ReviewSettings,
    SandboxSettings,
    StorageSettings,
)

if TYPE_CHECKING:  # nothing of the package at run time (tests/test_wiring.py)
    from codegen.json_types import JSONObject

# The checkout this package lives in (editable install) holds pyproject.toml; an installed
# wheel has no project root, so the working directory stands in.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]
PROJECT_ROOT = _PACKAGE_PARENT if (_PACKAGE_PARENT / "pyproject.toml").exists() else Path.cwd()


class Environment(StrEnum):
    LOCAL = "local"
    PRODUCTION = "production"


def default_home() -> Path:
    return Path(os.environ.get("CODEGEN_HOME") or PROJECT_ROOT / ".codegen").resolve()


def user_cache_dir() -> Path:
    """This machine user's cache, shared by every CODEGEN_HOME: $XDG_CACHE_HOME/multiagent-codegen
    (``~/.cache/multiagent-codegen``)."""
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "multiagent-codegen"


ENV_PREFIX = "CODEGEN_"
ENV_DELIMITER = "__"  # CODEGEN_<SECTION>__<KEY>: the separator that makes a variable a setting


# A table as read, before it is checked: the file's (TOML: dates too, so not JSON) or the
# setting variables' (nested by their ``__`` path, JSON decoded).
Table: TypeAlias = Mapping[str, object]


@dataclass(frozen=True)
class Given:
    """What the settings were read from: the file's tables and the setting variables."""

    file: Path
    file_values: Table
    variables: Mapping[tuple[str, ...], str]  # a setting's path -> the variable that gives it


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=ENV_DELIMITER, extra="forbid"
    )

    home: Path = Field(default_factory=default_home)
    env: Environment = Environment.LOCAL
    llm: LLMSettings = LLMSettings()
    sandbox: SandboxSettings = SandboxSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    corpus: CorpusSettings = CorpusSettings()
    eval: EvalSettings = EvalSettings()
    storage: StorageSettings = StorageSettings()
    review: ReviewSettings = ReviewSettings()

    # What load_settings read them from (None: built some other way), for setting_origins.
    _given: Given | None = PrivateAttr(default=None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, config_file()))

    # Derived locations, all under the data directory.
    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @property
    def corpus_dir(self) -> Path:
        return self.home / "corpus"

    @property
    def index_uri(self) -> str:
        return self.retrieval.lancedb_uri or str(self.home / "index")

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def model_cache_dir(self) -> Path:
        return Path(self.retrieval.model_cache_dir or user_cache_dir())

    @property
    def eval_dir(self) -> Path:
        return self.home / "eval"

    @property
    def inbox_dir(self) -> Path:
        return self.home / "inbox"

    @property
    def requests_dir(self) -> Path:
        # Request text and options, stored apart from the opaque partition key.
        return self.home / "requests"

    def public_dict(self) -> JSONObject:
        """Settings safe to show or store (they never hold a secret)."""
        return self.model_dump(mode="json")


def config_file() -> Path:
    explicit = os.environ.get("CODEGEN_CONFIG")
    if explicit:
        return Path(explicit)
    in_home = default_home() / "codegen.toml"
    return in_home if in_home.exists() else PROJECT_ROOT / "codegen.toml"
