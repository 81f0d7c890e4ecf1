"""The shape of what docs/results.md says of one stored JSON file: a title, what the run
measured, and its figures as rows (``results_descriptions``, ``results_pick_descriptions``)."""

from __future__ import annotations

from dataclasses import dataclass

# MapCoder's six APPS runs, each its file's name's start (benchmarks.scoring.apps_plain scores
# them alone, benchmarks.crew.apps_replay_crew runs each through the crew).
MAPCODER_APPS_RUNS = (
    "ChatGPT-Direct",
    "ChatGPT-CoT",
    "ChatGPT-Analogical",
    "ChatGPT-SelfPlanning",
    "ChatGPT-MapCoder-3-5",
    "GPT4-Turbo-Direct",
)


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
