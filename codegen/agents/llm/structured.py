"""How each endpoint and model takes a JSON request: Structured Outputs first, then
json_object with the schema in the prompt, then plain text; remembered per endpoint and model."""

from __future__ import annotations

import contextlib
import json
import threading
from enum import StrEnum
from pathlib import Path

from codegen.durable import atomic_write_text
from codegen.json_types import JSONObject


class StructuredMode(StrEnum):
    """How a server is asked for JSON, best first (docs/architecture.md, "LLM endpoint")."""

    JSON_SCHEMA = "json_schema"  # Structured Outputs, strict
    JSON_OBJECT = "json_object"  # JSON mode, the schema in the prompt
    PROMPT = "prompt"  # plain prompting, the schema in the prompt, tolerant parsing

    def fallback(self) -> StructuredMode | None:
        order = list(StructuredMode)
        index = order.index(self)
        return order[index + 1] if index + 1 < len(order) else None


def structured_modes_file(cache_dir: Path) -> Path:
    """Where the working modes are kept under the platform's cache directory."""
    return Path(cache_dir) / "llm-structured-outputs.json"


class StructuredModes:
    """The working ``StructuredMode`` per endpoint and model, kept in a small JSON file so
    that later processes (and ``codegen info``) know it without probing again."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(endpoint: str, model: str) -> str:
        return f"{endpoint} {model}"

    def all(self) -> dict[str, str]:
        with self._lock:
            return {**self._read(), **self._known}

    def get(self, endpoint: str, model: str) -> StructuredMode:
        value = self.all().get(self.key(endpoint, model))
        try:
            return StructuredMode(value) if value else StructuredMode.JSON_SCHEMA
        except ValueError:
            return StructuredMode.JSON_SCHEMA

    def set(self, endpoint: str, model: str, mode: StructuredMode) -> None:
        with self._lock:
            self._known[self.key(endpoint, model)] = mode.value
            if self.path is None:
                return
            merged = {**self._read(), **self._known}
            with contextlib.suppress(OSError):  # a read-only home must not fail the request
                atomic_write_text(self.path, json.dumps(merged, indent=2, sort_keys=True))

    def _read(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def structured_request(
    mode: StructuredMode, messages: list[dict[str, str]], name: str, schema: JSONObject
) -> tuple[list[dict[str, str]], JSONObject | None]:
    """The messages and ``response_format`` that ask for ``schema`` in ``mode``."""
    if mode is StructuredMode.JSON_SCHEMA:
        fmt: JSONObject = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
        return messages, fmt
    note = SCHEMA_IN_PROMPT.format(schema=json.dumps(schema, sort_keys=True))
    first, *rest = messages
    with_schema = [{**first, "content": f"{first['content']}\n\n{note}"}, *rest]
    plain: JSONObject | None = (
        {"type": "json_object"} if mode is StructuredMode.JSON_OBJECT else None
    )
    return with_schema, plain


SCHEMA_IN_PROMPT = """\
Reply with one JSON object and nothing else (no prose, no code fence). It must match this \
JSON Schema:
{schema}"""
