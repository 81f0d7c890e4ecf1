"""A benchmark's task shape as one object: how its tasks are read, asked, scored and reported.

HumanEval-like functions (``FUNCTION``: HumanEval, MBPP, HumanEval+, any JSONL task file) and
ClassEval's classes are shapes; a problem names its own (``Problem.shape``). A shape carries
what differs between them: the reader of its own task file format (claimed by its text),
the request the crew gets, the scorer and its version (part of every verdict's key), the
figures a report adds under the shape's name (and how they are printed and shown as Dagster
metadata), an alternative samples file format and the sandbox package set its tests need.
``codegen.evaluation.shapes`` registers them; a new shape is its own module and one
registration there (or a ``register_shape`` call in a module named in ``[eval] benchmarks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codegen.evaluation.humaneval import FUNCTION, Problem, public_request
from codegen.json_types import JSONObject

if TYPE_CHECKING:
    from codegen.evaluation.scoring import SampleScore
    from codegen.sandbox.api import Sandbox
    from codegen.sandbox.types import Limits

# Verdicts for candidate modules of one problem (None: no code), one per module, in order.
Scorer = Callable[["Sandbox", Problem, list[str | None], "Limits"], list["SampleScore"]]
# The shape's figures over each scored problem's verdicts (``figures(scored)``); a shape that
# reads its samples file's own verdicts (``read_verdicts``) is given them too, by task key
# (``figures(scored, recorded)``; empty for the crew's runs).
Figures = Callable[..., JSONObject]
# A task file's text and path -> its problems by key, in file order (raises BadInput).
FileReader = Callable[[str, Path], dict[str, Problem]]
# A samples file's text, path and the task set's problems -> modules by key and a digest.
RepliesReader = Callable[[str, Path, Mapping[str, Problem]], tuple[dict[str, list[str]], str]]
# The same file's own verdicts by task key, where its format carries them (raises ValueError).
VerdictsReader = Callable[[str, Path, Mapping[str, Problem]], dict[str, bool]]


def _as_is(figures: JSONObject) -> JSONObject:
    return figures


@dataclass(frozen=True)
class TaskShape:
    name: str  # what ``Problem.shape`` says; the report's and the metadata's key for figures
    title: str  # what messages call it
    request: Callable[[Problem], str] = public_request  # the crew's request, public part only
    # Its own task file format: ``claims_file(text)`` says a file is one, ``read_file`` reads it.
    claims_file: Callable[[str], bool] | None = None
    read_file: FileReader | None = None
    # Its own samples file format beside the JSONL one (claimed by its text too).
    claims_replies: Callable[[str], bool] | None = None
    read_replies: RepliesReader | None = None
    read_verdicts: VerdictsReader | None = None  # handed to ``figures`` beside ours
    score: Scorer | None = None  # None: the function scorer (hidden test, HumanEval+ inputs)
    scoring_version: str = ""  # its scorer's; part of every verdict's key when set
    figures: Figures | None = None  # reported under ``name`` (``--json``, metadata)
    describe: Callable[[JSONObject, bool], list[str]] | None = None  # text lines; all failures?
    metadata: Callable[[JSONObject], JSONObject] = _as_is  # the figures as Dagster shows them
    package_set: str | None = None  # the sandbox package set its tests need (None: any)

    def summary(
        self, scored: Sequence[tuple[Problem, list[SampleScore]]], recorded: Mapping[str, bool]
    ) -> JSONObject:
        """Its figures (``figures`` is set); the samples file's own verdicts only to a shape
        that reads them, so a shape's ``figures(scored)`` of one argument still works."""
        assert self.figures is not None
        if self.read_verdicts is None:
            return self.figures(scored)
        return self.figures(scored, recorded)


FUNCTION_SHAPE = TaskShape(FUNCTION, "function")
