"""The shape of what docs/results.md says of one stored JSON file: a title, what the run
measured, and its figures as rows (``results_descriptions``, ``results_pick_descriptions``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One figure: its label, its key path in the JSON, and the same run's baseline if any."""

    label: str
    key: str
    baseline_label: str = ""
    baseline_key: str = ""


@dataclass(frozen=True)
class Description:
    title: str
    module: str  # what runs it today: python -m MODULE
    what: str
    rows: tuple[Row, ...]
