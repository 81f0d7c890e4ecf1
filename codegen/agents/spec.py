"""The Requirements Analyzer's spec: a strict pydantic model and the JSON schema the analyzer
asks for with Structured Outputs."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from codegen.json_types import JSONObject, JSONValue


# -- the analyzer's output ----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionSpec(_Strict):
    name: str = Field(min_length=1)
    signature: str = Field(min_length=1)
    description: str


class Example(_Strict):
    call: str = Field(min_length=1)
    expected: str


class Spec(_Strict):
    purpose: str = Field(min_length=1)
    functions: list[FunctionSpec] = Field(min_length=1)
    behaviours: list[str]
    edge_cases: list[str]
    examples: list[Example]
    constraints: list[str]


def _strict_schema(model: type[BaseModel]) -> JSONObject:
    """Pydantic's schema, reshaped for OpenAI strict mode: every property required, no extras,
    no keywords strict mode rejects (minLength, titles)."""

    def fix(node: JSONValue) -> JSONValue:
        if isinstance(node, dict):
            node = {
                k: fix(v) for k, v in node.items() if k not in ("title", "minLength", "minItems")
            }
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            return node
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    schema = fix(model.model_json_schema())
    assert isinstance(schema, dict)  # a model's schema is an object
    return schema


SPEC_JSON_SCHEMA: JSONObject = _strict_schema(Spec)


@dataclass(frozen=True)
class Analysis:
    """The analyzer's spec, and how the server was asked for it (``StructuredMode`` value)."""

    spec: Spec
    structured_outputs: str
