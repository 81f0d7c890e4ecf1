"""Where each effective setting came from (its variable, the file, or the default): what
``codegen info`` shows beside each value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from codegen.settings.checks import read_file, setting_variables
from codegen.settings.models import Given, Settings, Table, config_file


@dataclass(frozen=True)
class Origin:
    """Where one effective setting came from."""

    source: Literal["environment", "file", "default"]
    name: str | None = None  # the variable, or the file's path; None for a default

    def to_dict(self) -> dict[str, str | None]:
        return {"source": self.source, "from": self.name}


def _leaves(value: object, path: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """The path of each value that is not a table (a list, an empty table, a number...)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    else:
        yield path


def _holds(values: Table, path: tuple[str, ...]) -> bool:
    """Whether ``values`` (a source's nested tables) give the setting at ``path``."""
    node: object = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def setting_origins(settings: Settings) -> dict[str, Origin]:
    """Where each effective setting (``llm.max_rounds``, ``llm.default.model``, ...) came from:
    its variable, the file, or the default. Settings not made by load_settings are read as
    the environment and file are now."""
    given = settings._given or Given(config_file(), read_file(config_file()), setting_variables())
    out: dict[str, Origin] = {}
    for path in _leaves(settings.model_dump(mode="json")):
        variable = next((name for p, name in given.variables.items() if path[: len(p)] == p), None)
        if variable is not None:
            out[".".join(path)] = Origin("environment", variable)
        elif _holds(given.file_values, path):
            out[".".join(path)] = Origin("file", str(given.file))
        else:
            out[".".join(path)] = Origin("default")
    return out
