"""Reading what models send: code, tests and JSON out of replies as real models write them
(reasoning, fences or none, prompt echoes), a class's methods merged from several blocks, and
the repairs that make a code reply runnable; a program (top-level statements kept) for a spec
with one."""

from codegen.agents.replies.extract import (
    RESPONSE_MARKERS,
    AgentOutputError,
    ParsedCode,
    extract_json,
    extract_module,
    extract_tests,
    strip_reasoning,
)
from codegen.agents.replies.program import extract_program
from codegen.agents.replies.repair import parse_python

__all__ = [
    "RESPONSE_MARKERS",
    "AgentOutputError",
    "ParsedCode",
    "extract_json",
    "extract_module",
    "extract_program",
    "extract_tests",
    "parse_python",
    "strip_reasoning",
]
