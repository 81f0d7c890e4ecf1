"""The spec of a request's module: the analyzer's strict model and its JSON schema, the
outline a person is shown with the suite's results per function and method, and the warnings
when the request's names and the spec's disagree (or the ending when it has none of them)."""

from codegen.agents.spec.names import name_warnings, off_target
from codegen.agents.spec.outline import CONSTRUCTOR, MethodResult, method_results, module_outline
from codegen.agents.spec.program import (
    FLOAT_TOLERANCE,
    Comparison,
    ProgramExample,
    ProgramSpec,
    same_output,
)
from codegen.agents.spec.schema import SPEC_JSON_SCHEMA, Analysis, ClassSpec, Example, Spec

__all__ = [
    "CONSTRUCTOR",
    "FLOAT_TOLERANCE",
    "SPEC_JSON_SCHEMA",
    "Analysis",
    "ClassSpec",
    "Comparison",
    "Example",
    "MethodResult",
    "ProgramExample",
    "ProgramSpec",
    "Spec",
    "method_results",
    "module_outline",
    "name_warnings",
    "off_target",
    "same_output",
]
