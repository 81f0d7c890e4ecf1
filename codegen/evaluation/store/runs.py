"""One table of every stored evaluation run: what ran (task set, mode, model, candidates,
retriever) and what it scored (pass@1, plus, precision), cost and time. Read from the store's
history (one entry per complete run) joined with each configuration's ``config.json``; used by
``codegen eval list`` and the ``evaluation_runs`` asset."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from codegen.evaluation.store.files import EvalStore, read_object, save_figure
from codegen.json_types import JSONObject, JSONValue

COLUMNS = (
    "date",
    "task_set",
    "mode",
    "model",
    "candidates",
    "retriever",
    "tasks",
    "pass@1",
    "first pass@1",
    "reliability",
    "plus pass@1",
    "precision",
    "tokens",
    "cost_usd",
    "wall_s",
    "config_id",
)

# One run of the table (``COLUMNS``' keys); None where the run's files do not say.
RunRow = TypedDict(
    "RunRow",
    {
        "date": str | None,
        "task_set": str,
        "mode": str | None,
        "model": str | None,
        "candidates": int | None,
        "retriever": str | None,
        "tasks": int | None,
        "pass@1": float | None,
        # Drafts from several models: pass@1 is the learned pick's, this the first pick's,
        # and ``reliability`` the estimates per model (``evaluation.learned``).
        "first pass@1": float | None,
        "reliability": JSONObject | None,
        "plus pass@1": float | None,
        "precision": float | None,
        "tokens": int | None,
        "cost_usd": float | None,
        "wall_s": float | None,
        "config_id": str,
    },
)


def _object(value: JSONValue | None) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _retriever(identity: JSONObject) -> str:
    found = identity.get("retriever") or {}
    if not isinstance(found, dict):
        return str(found)
    return str(found.get("kind") or found.get("name") or "-")


def run_rows(store: EvalStore) -> list[RunRow]:
    """One row per complete run, oldest first."""
    configs: dict[str, JSONObject] = {}
    rows: list[RunRow] = []
    for entry in store.history():
        config_id = str(entry.get("config_id", ""))
        if config_id not in configs:
            configs[config_id] = read_object(store.config_dir(config_id) / "config.json") or {}
        identity = _object(configs[config_id].get("identity"))
        default = _object(identity.get("default"))
        answered = entry.get("models")
        rows.append(
            {
                "date": entry.get("at"),
                "task_set": entry.get("task_set") or "HumanEval",
                "mode": entry.get("mode"),
                # The models that answered (a replay's ``replay:<model>``), else, for runs whose
                # samples do not say, the configured one.
                "model": ", ".join(answered)
                if isinstance(answered, list) and answered
                else default.get("model") or entry.get("label"),
                "candidates": identity.get("candidates"),
                "retriever": _retriever(identity) if identity.get("retriever") else None,
                "tasks": entry.get("tasks"),
                "pass@1": entry.get("pass@1"),
                "first pass@1": entry.get("first pass@1"),
                "reliability": entry.get("reliability"),
                "plus pass@1": entry.get("plus pass@1"),
                "precision": entry.get("precision"),
                "tokens": entry.get("tokens"),
                "cost_usd": entry.get("cost_usd"),
                "wall_s": entry.get("wall_s"),
                "config_id": config_id,
            }
        )
    return rows


def _cell(value: JSONValue) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):  # reliability estimates: model (without endpoint) and p
        return "; ".join(
            f"{str(k).split(' @ ')[0]} {v.get('p')}" if isinstance(v, dict) else str(k)
            for k, v in value.items()
        )
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def runs_markdown(rows: Sequence[RunRow]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def runs_text(rows: Sequence[RunRow]) -> str:
    table = [list(COLUMNS)] + [[_cell(r.get(c)) for c in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in table
    )


def plot_runs(rows: Sequence[RunRow], path: Path) -> Path:
    """PNG: pass@1 (and plus pass@1) of the latest run per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict[str, RunRow] = {}
    for row in rows:
        latest[f"{row['task_set']} {row['mode']} {row['model']} {row['config_id'][-6:]}"] = row
    labels = list(latest)[-30:]
    xs = list(range(len(labels)))
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(xs, [latest[k].get("pass@1") or 0.0 for k in labels], label="pass@1")
    plus = [latest[k].get("plus pass@1") for k in labels]
    if any(v is not None for v in plus):
        ax.scatter(xs, [float("nan") if v is None else v for v in plus], color="C1", label="plus")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass@1")
    ax.set_title("pass@1 per configuration (latest run)")
    ax.set_xticks(xs, [k[:28] for k in labels], rotation=30, ha="right", fontsize=6)
    ax.legend(fontsize=7)
    return save_figure(fig, path)
