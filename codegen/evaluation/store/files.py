"""Evaluation results on disk under ``$CODEGEN_HOME/eval/``.

Layout (one directory per evaluation configuration, so runs with different models or sample
counts never mix and a finished task is found again by its key):

    eval/<config_id>/config.json          what the configuration is (never a secret)
    eval/<config_id>/samples/<task>.json  generated candidates + crew status, tokens, cost
    eval/<config_id>/scores/<task>.json   hidden-test verdicts for those candidates
    eval/verdicts/<ab>/<digest>.json      a verdict: code, problem, harness, limits, environment
    eval/history.jsonl                    one line per summary, for comparing runs
    eval/history.png                      pass@1 and cost per solved task across runs

Every write is atomic (temp file + rename), so an interrupted run never leaves a half file
and never loses the previous result.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from codegen.durable import atomic_write_text
from codegen.evaluation.store.records import ConfigDoc, HistoryEntry, SamplesDoc, ScoresDoc
from codegen.json_types import JSONObject, JSONValue


def digest(obj: JSONValue) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def write_json_atomic(path: Path, data: JSONValue) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))


def read_json(path: Path) -> JSONValue | None:
    """The stored document, or None when absent or unreadable (then it is recomputed)."""
    try:
        data: JSONValue = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data


def read_object(path: Path) -> JSONObject | None:
    """The stored JSON object, or None when absent, unreadable or not an object."""
    data = read_json(path)
    return data if isinstance(data, dict) else None


class EvalStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def config_dir(self, config_id: str) -> Path:
        return self.root / config_id

    def samples_path(self, config_id: str, key: str) -> Path:
        return self.config_dir(config_id) / "samples" / f"{key}.json"

    def scores_path(self, config_id: str, key: str) -> Path:
        return self.config_dir(config_id) / "scores" / f"{key}.json"

    @property
    def history_path(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def plot_path(self) -> Path:
        return self.root / "history.png"

    def save_config(self, config_id: str, config: ConfigDoc) -> None:
        path = self.config_dir(config_id) / "config.json"
        if read_json(path) != config:
            write_json_atomic(path, cast(JSONObject, config))

    def load_samples(self, config_id: str, key: str) -> SamplesDoc | None:
        found = read_object(self.samples_path(config_id, key))
        if not found or not isinstance(found.get("candidates"), list):
            return None
        return cast(SamplesDoc, found)

    def save_samples(self, config_id: str, key: str, data: SamplesDoc) -> None:
        write_json_atomic(self.samples_path(config_id, key), cast(JSONObject, data))

    def load_scores(self, config_id: str, key: str) -> ScoresDoc | None:
        found = read_object(self.scores_path(config_id, key))
        if not found or not isinstance(found.get("scores"), list):
            return None
        return cast(ScoresDoc, found)

    def save_scores(self, config_id: str, key: str, data: ScoresDoc) -> None:
        write_json_atomic(self.scores_path(config_id, key), cast(JSONObject, data))

    def verdict_path(self, key: str) -> Path:
        return self.root / "verdicts" / key[:2] / f"{key}.json"

    def load_verdict(self, key: str) -> JSONObject | None:
        return read_object(self.verdict_path(key))

    def save_verdict(self, key: str, data: JSONObject) -> None:
        write_json_atomic(self.verdict_path(key), data)

    def append_history(self, entry: HistoryEntry) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with self.history_path.open("a+b") as fh:
            # A line torn by a crash has no newline: start a fresh line so this entry survives.
            fh.seek(0, os.SEEK_END)
            torn = False
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
            fh.write((b"\n" if torn else b"") + json.dumps(entry, sort_keys=True).encode() + b"\n")

    def history(self) -> list[HistoryEntry]:
        if not self.history_path.exists():
            return []
        entries: list[HistoryEntry] = []
        for line in self.history_path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line from a crash must not hide the other runs
            if isinstance(entry, dict):
                entries.append(cast(HistoryEntry, entry))
        return entries


def save_figure(fig: Figure, path: Path) -> Path:
    """Write a matplotlib figure to ``path`` as PNG, atomically (a reader never sees half a
    picture), and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=80)
    plt.close(fig)
    tmp.replace(path)
    return path
