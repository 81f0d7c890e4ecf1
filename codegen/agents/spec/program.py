"""A program in the spec: a module whose contract is how it is run (its input stream, its
arguments, the files it is given), what it writes (stdout lines, a file, the exit code) and
worked examples as runs, rather than (or besides) functions and classes to import.

The comparison a test applies to a run's stdout is part of the spec, so the test designer,
the pick and the suite all judge the same thing: ``exact``; ``trailing_whitespace`` (each
line's trailing whitespace and trailing blank lines ignored: how a plain judge of stdin/stdout
programs compares); ``float`` (as ``trailing_whitespace``, then whitespace-separated tokens
compared one by one, numbers within ``FLOAT_TOLERANCE`` absolute or relative).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Channel = Literal["stdin", "arguments", "files"]
Output = Literal["stdout", "files", "exit_code"]
Comparison = Literal["exact", "trailing_whitespace", "float"]
FLOAT_TOLERANCE = 1e-6


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProgramExample(_Strict):
    """One worked run: ``stdin`` text and ``arguments`` in, ``stdout`` and ``exit_code`` out."""

    stdin: str
    arguments: list[str] = Field(default_factory=list)
    stdout: str
    exit_code: int = 0


class ProgramSpec(_Strict):
    """The program's interface: the command a person types (``logtop``; the module runs as
    ``python solution.py ARGS``), how it reads and writes, and worked runs."""

    name: str = Field(min_length=1)
    usage: str = Field(min_length=1)  # ``logtop FILE [-n N]``; ``median < numbers.txt``
    reads: list[Channel]
    writes: list[Output]
    input_format: str  # the stdin or file format, line by line ("" when it reads none)
    output_format: str
    comparison: Comparison = "trailing_whitespace"
    examples: list[ProgramExample] = Field(default_factory=list)


def normalised(text: str) -> str:
    """``text`` as ``trailing_whitespace`` compares it."""
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def _same_token(expected: str, actual: str) -> bool:
    if expected == actual:
        return True
    try:
        a, b = float(expected), float(actual)
    except ValueError:
        return False
    return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)


def same_output(expected: str, actual: str, comparison: Comparison) -> bool:
    """Whether ``actual`` stdout answers ``expected`` under ``comparison``."""
    if comparison == "exact":
        return expected == actual
    if comparison == "trailing_whitespace":
        return normalised(expected) == normalised(actual)
    wanted, got = expected.split(), actual.split()
    return len(wanted) == len(got) and all(map(_same_token, wanted, got))
