"""The Requirements Analyzer's spec: a strict pydantic model and the JSON schema the analyzer
asks for with Structured Outputs.

A spec describes one module: free functions and/or classes (constructor, public attributes,
methods), a program (how it is run, what it writes, worked runs: ``spec.program``), module
constants, and the third-party distributions it needs. The parts a request does not have are
empty lists (``program``: null), so strict mode (every property required) still holds; a
reply in an older shape parses too, its missing parts empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codegen.agents.spec.program import ProgramSpec
from codegen.json_types import JSONObject, JSONValue


# -- the analyzer's output ----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionSpec(_Strict):
    """A free function, or a method of a class (its signature with ``self``)."""

    name: str = Field(min_length=1)
    signature: str = Field(min_length=1)
    description: str


class AttributeSpec(_Strict):
    """A public attribute of a class's instances."""

    name: str = Field(min_length=1)
    type: str
    description: str


class ClassSpec(_Strict):
    name: str = Field(min_length=1)
    description: str
    constructor: str = Field(min_length=1)  # the ``__init__`` signature, with ``self``
    attributes: list[AttributeSpec] = Field(default_factory=list)
    methods: list[FunctionSpec] = Field(default_factory=list)


class ConstantSpec(_Strict):
    name: str = Field(min_length=1)
    value: str  # as Python source
    description: str


class Example(_Strict):
    """``setup`` statements run first (``c = LRUCache(2)``, ``c.put(1, 1)``), then ``call``
    (``c.get(1)``) must give ``expected`` (``1``): a single call has no setup."""

    setup: list[str] = Field(default_factory=list)
    call: str = Field(min_length=1)
    expected: str


class Spec(_Strict):
    purpose: str = Field(min_length=1)
    functions: list[FunctionSpec] = Field(default_factory=list)
    classes: list[ClassSpec] = Field(default_factory=list)
    program: ProgramSpec | None = None
    constants: list[ConstantSpec] = Field(default_factory=list)
    # Third-party distribution names (``pandas``, ``python-docx``); the standard library is not
    # listed.
    dependencies: list[str] = Field(default_factory=list)
    behaviours: list[str]
    edge_cases: list[str]
    examples: list[Example]
    constraints: list[str]

    @model_validator(mode="after")
    def _defines_something(self) -> Spec:
        if not self.functions and not self.classes and self.program is None:
            raise ValueError("the spec defines no function, no class and no program")
        return self

    def names(self) -> list[str]:
        """Every public name the module defines: functions, classes, constants."""
        parts = [*self.functions, *self.classes, *self.constants]
        return [p.name for p in parts]

    def shown(self) -> JSONObject:
        """The spec as the agents are shown it: parts a request does not have are left out, so
        a function-only spec reads as it always did (recorded replies still match it)."""
        data = self.model_dump(mode="json")
        for key in ("classes", "program", "constants", "dependencies"):
            if not data[key]:
                del data[key]
        examples = data["examples"]
        assert isinstance(examples, list)  # the model's own dump
        for example in examples:
            assert isinstance(example, dict)
            if not example["setup"]:
                del example["setup"]
        return data


def _strict_schema(model: type[BaseModel]) -> JSONObject:
    """Pydantic's schema, reshaped for OpenAI strict mode: every property required, no extras,
    no keywords strict mode rejects (minLength, titles, defaults)."""

    def fix(node: JSONValue) -> JSONValue:
        if isinstance(node, dict):
            dropped = ("title", "minLength", "minItems", "default")
            node = {k: fix(v) for k, v in node.items() if k not in dropped}
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
