"""Kinds of work, as the run tag the queued run coordinator limits
(codegen/orchestration/instance/dagster.yaml).

Every job of the code location carries ``codegen/kind``; dagster.yaml caps how many runs of
each kind run at once, under a global cap, and queues the rest.
"""

from __future__ import annotations

KIND_TAG = "codegen/kind"
KIND_REQUEST = "request"  # one request through the crew (codegen_request, submit_request)
KIND_EVALUATION = "evaluation"  # HumanEval runs and backfills
KIND_CORPUS = "corpus"  # corpus builds, re-indexing, the vector index
KINDS = (KIND_REQUEST, KIND_EVALUATION, KIND_CORPUS)


def kind_tags(kind: str) -> dict[str, str]:
    if kind not in KINDS:
        raise ValueError(f"unknown kind of work {kind!r}; one of {KINDS}")
    return {KIND_TAG: kind}
