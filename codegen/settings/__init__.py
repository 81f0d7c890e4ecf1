"""The one way to configure the platform.

Precedence, highest first: environment variables (``CODEGEN_*``, nested keys joined
with ``__``, e.g. ``CODEGEN_SANDBOX__BACKEND=bwrap``), then the TOML file named by
``CODEGEN_CONFIG`` (default ``$CODEGEN_HOME/codegen.toml``, else ``codegen.toml`` in the
project root), then the defaults (each table's, in ``sections.py``).

The LLM endpoint and key are deliberately *not* settings of ours: the ``openai`` SDK reads
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` itself, so the key never lands in a config object
that could be logged or stored. ``llm.base_url`` exists only to override the SDK's variable.
A programmer candidate on another endpoint names the *variable* that holds its key
(``api_key_env``), never the key.

Settings are strict: an unknown section or key, a value of the wrong type or out of range, in
the file or in a ``CODEGEN_<SECTION>__<KEY>`` variable, raises ``BadSettings``: one line naming
the file or the variable, the key and why (with the nearest valid name for a typo), never the
value given (it may be a key pasted into the wrong place). ``CODEGEN_*`` variables without the
``__`` separator are not settings (CODEGEN_CONFIG, CODEGEN_REQUIRE_*, ...), except the two
top-level ones, ``CODEGEN_HOME`` and ``CODEGEN_ENV``. ``setting_origins`` says where each
effective value came from.

This module is the package's face: import from ``codegen.settings``. Inside, ``sections`` holds
the tables, ``ranges`` the ranges they share with requests and flags, ``models`` the settings
object and where it is read from, ``checks`` the strict checking, ``wording`` how a problem is
put, ``origins`` where each value came from.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from codegen.settings.checks import (
    BadSettings,
    check,
    read_file,
    setting_variables,
    variable_values,
)
from codegen.settings.models import (
    ENV_DELIMITER,
    ENV_PREFIX,
    PROJECT_ROOT,
    Environment,
    Given,
    Settings,
    config_file,
    default_home,
    user_cache_dir,
)
from codegen.settings.origins import Origin, setting_origins
from codegen.settings.ranges import (
    DRAFTS,
    ROUNDS,
    SAMPLES,
    TOKEN_BUDGET,
    TOP_K,
    USD_BUDGET,
    WORKERS,
    bounds_of,
)
from codegen.settings.sections import (
    AgentModel,
    AgentRole,
    BlogSourceSettings,
    CandidateModel,
    ContextSettings,
    CorpusSettings,
    DocsSourceSettings,
    EvalSettings,
    GitHubSourceSettings,
    LLMSettings,
    RetrievalSettings,
    ReviewSettings,
    SandboxSettings,
    Section,
    StackOverflowSourceSettings,
    StorageSettings,
    parse_candidates,
)
from codegen.settings.wording import describe

__all__ = [
    "DRAFTS",
    "ENV_DELIMITER",
    "ENV_PREFIX",
    "PROJECT_ROOT",
    "ROUNDS",
    "SAMPLES",
    "TOKEN_BUDGET",
    "TOP_K",
    "USD_BUDGET",
    "WORKERS",
    "AgentModel",
    "AgentRole",
    "BadSettings",
    "BlogSourceSettings",
    "CandidateModel",
    "ContextSettings",
    "CorpusSettings",
    "DocsSourceSettings",
    "Environment",
    "EvalSettings",
    "GitHubSourceSettings",
    "Given",
    "LLMSettings",
    "Origin",
    "RetrievalSettings",
    "ReviewSettings",
    "SandboxSettings",
    "Section",
    "Settings",
    "StackOverflowSourceSettings",
    "StorageSettings",
    "bounds_of",
    "config_file",
    "default_dagster_home",
    "default_home",
    "describe",
    "get_settings",
    "load_settings",
    "parse_candidates",
    "setting_origins",
    "setting_variables",
    "user_cache_dir",
]


def load_settings() -> Settings:
    """The settings as configured now; BadSettings says, in one line, what is wrong."""
    file = config_file()
    given = Given(file, read_file(file), setting_variables())
    check(given, variable_values())
    try:
        settings = Settings()
    except ValidationError as exc:  # the two together; each alone was fine
        raise BadSettings(f"bad settings ({file}, CODEGEN_*): {describe(exc)}") from None
    except SettingsError as exc:
        raise BadSettings(f"bad settings ({file}, CODEGEN_*): {exc}") from None
    settings._given = given
    return settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()


def default_dagster_home(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).home / "dagster_home"
