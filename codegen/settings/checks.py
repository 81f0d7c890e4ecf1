"""Strict settings: the file and the ``CODEGEN_<SECTION>__<KEY>`` variables are each checked on
their own before the settings are built, so a problem names its place (the file, or the
variable), the key and why, with the nearest valid name for a typo; ``BadSettings`` holds them
all in one line. ``CODEGEN_*`` variables without the ``__`` separator are not settings
(CODEGEN_CONFIG, CODEGEN_REQUIRE_*, ...), except ``CODEGEN_HOME`` and ``CODEGEN_ENV``."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_settings import EnvSettingsSource
from pydantic_settings.exceptions import SettingsError

from codegen.settings.models import ENV_DELIMITER, ENV_PREFIX, Given, Settings, Table
from codegen.settings.wording import label, nearest, reason


class BadSettings(ValueError):
    """The configuration cannot be used: one line naming each bad key and why."""


def _sections() -> dict[str, type[BaseModel]]:
    """The top-level tables: [llm], [sandbox], ..."""
    return {
        name: field.annotation
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }


def setting_variables() -> dict[tuple[str, ...], str]:
    """The environment's setting variables by the setting's path: every ``CODEGEN_<SECTION>__
    <KEY>`` (known or not), and ``CODEGEN_HOME`` / ``CODEGEN_ENV`` (the top-level settings).
    Any other ``CODEGEN_*`` (CODEGEN_CONFIG, CODEGEN_REQUIRE_DOCKER, ...) is not a setting."""
    out: dict[tuple[str, ...], str] = {}
    for name in os.environ:
        upper = name.upper()  # pydantic-settings reads these names case-insensitively
        if not upper.startswith(ENV_PREFIX):
            continue
        path = tuple(upper.removeprefix(ENV_PREFIX).lower().split(ENV_DELIMITER))
        if len(path) > 1 or path[0] in Settings.model_fields:
            out[path] = name
    return out


def read_file(path: Path) -> Table:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadSettings(f"bad settings: cannot read {path} ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:  # says where (line, column), never the text
        raise BadSettings(f"bad settings: {path} is not valid TOML: {exc}") from None


def variable_values() -> Table:
    """The setting variables as Settings() reads them (nested, JSON decoded)."""
    try:
        return EnvSettingsSource(Settings)()
    except SettingsError as exc:  # a list or table that is not JSON; it names the section
        raise BadSettings(f"bad settings: {exc}") from None


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """Validates one top-level key on its own (a section, home, env)."""
    field = Settings.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[field.annotation, *field.metadata])


def _names_at(path: tuple[str, ...]) -> list[str]:
    """The valid keys of the table at ``path``: a section's fields, or a dict's Literal keys
    (the roles of [llm.agents])."""
    tp: Any = Settings
    for part in path:
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return []
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    if get_origin(tp) is dict and get_origin(get_args(tp)[0]) is Literal:
        return [str(a) for a in get_args(get_args(tp)[0])]
    return []


@dataclass(frozen=True)
class _Source:
    """One place settings come from, as a problem names it: the file, or the variables."""

    file: Path | None  # None: the environment
    variables: Mapping[tuple[str, ...], str]

    def where(self, path: tuple[str, ...]) -> str:
        if self.file is not None:
            return f"of {self.file}"
        for var_path, name in self.variables.items():
            if path[: len(var_path)] == var_path or var_path[: len(path)] == path:
                return f"from {name}"
        return "from the environment"

    def hint(
        self, table: tuple[str, ...], name: str, known: Iterable[str], quote: Callable[[str], str]
    ) -> str:
        """The nearest valid name: the key (``quote``d) in the file, the whole variable in the
        environment (the rest of a longer variable's path kept)."""
        if self.file is not None:
            return nearest(name, known, quote=quote)
        rest = next(
            (p[len(table) + 1 :] for p in self.variables if p[: len(table) + 1] == (*table, name)),
            (),
        )

        def variable(key: str) -> str:
            return ENV_PREFIX + ENV_DELIMITER.join((*table, key, *rest)).upper()

        return nearest(name, known, quote=variable)

    def unknown(self, table: tuple[str, ...], name: str, *, is_table: bool = False) -> str:
        """An unknown section or key, with the nearest valid name."""
        where = self.where((*table, name))
        if table:
            hint = self.hint(table, name, _names_at(table), repr)
            return f"unknown key {name!r} in [{'.'.join(table)}] {where} ({hint})"
        if is_table or self.file is None:
            hint = self.hint((), name, _sections(), lambda section: f"[{section}]")
            where = where if self.file is None else f"in {self.file}"
            return f"unknown section [{name}] {where} ({hint})"
        # A key at the top of the file that belongs in a section: say which.
        owners = [s for s, model in _sections().items() if name in model.model_fields]
        hint = (
            f"did you mean [{owners[0]}] {name}?"
            if owners
            else self.hint((), name, Settings.model_fields, repr)
        )
        return f"unknown key {name!r} at the top {where} ({hint})"

    def problems(self, values: Table) -> list[str]:
        """Each key of ``values`` checked on its own: unknown names, types, ranges."""
        out: list[str] = []
        for key, value in values.items():
            if key not in Settings.model_fields:
                out.append(self.unknown((), key, is_table=isinstance(value, dict)))
                continue
            try:
                _adapter(key).validate_python(value)
            except ValidationError as exc:
                out += [self._problem((key, *e["loc"]), e["type"], e["msg"]) for e in exc.errors()]
        return out

    def _problem(self, loc: tuple[str | int, ...], kind: str, msg: str) -> str:
        path = tuple(str(p) for p in loc if not isinstance(p, int) and p != "[key]")
        if kind == "extra_forbidden":
            return self.unknown(path[:-1], path[-1])
        if loc[-1] == "[key]":  # a dict keyed by names ([llm.agents]): not one of them
            return self.unknown(path[:-1], path[-1])
        why = reason(msg)
        # An entry's own problem names its index: [llm] candidates[1] of ...: unknown key ...
        index, sep, rest = why.partition(": ") if why.startswith("[") else ("", "", why)
        return f"{label(loc)}{index} {self.where(path)}: {rest if sep else why}"


def check(given: Given, variable_settings: Table) -> None:
    """BadSettings naming every problem of the file and the variables, each on its own."""
    env = _Source(None, given.variables)
    problems = _Source(given.file, {}).problems(given.file_values)
    problems += [
        env.unknown((), path[0])
        for path in given.variables
        if len(path) > 1 and path[0] not in _sections()
    ]
    problems += env.problems(variable_settings)
    if problems:
        raise BadSettings("bad settings: " + "; ".join(problems))
