"""The analyzer's spec as the JSON a scripted or derived reply carries (``agents.spec.Spec``)."""

from __future__ import annotations

from typing import TypedDict


class FunctionSpecJSON(TypedDict):
    name: str
    signature: str
    description: str


class ExampleJSON(TypedDict):
    call: str
    expected: str


class SpecJSON(TypedDict):
    purpose: str
    functions: list[FunctionSpecJSON]
    behaviours: list[str]
    edge_cases: list[str]
    examples: list[ExampleJSON]
    constraints: list[str]
