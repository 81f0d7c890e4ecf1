"""One tree's side of ``move_unchanged_verdicts``: runs in a subprocess of its own, with
PYTHONPATH set to that tree, executed as text (``python -c``) so that it runs the same against
the older tree, whose benchmarks were flat scripts. It imports nothing from the project at the
top: it names the tree's own modules in the spec it is given.

Each part starts from a fresh CODEGEN_HOME (and DAGSTER_HOME), so neither tree can read the
other's cached scores, executions or model replies: every verdict is the tree's own.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


def fresh_home(part: str) -> Path:
    """A new, empty CODEGEN_HOME (its eval store and caches) for this process."""
    home = Path(tempfile.mkdtemp(prefix=f"move-unchanged-{part}-"))
    (home / "dagster").mkdir()
    os.environ.update({"CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")})
    return home


def fidelity(spec: dict[str, Any]) -> dict[str, Any]:
    """Every recorded sample scored by the tree's ``published_tables.score_file`` (the
    ``--samples-file`` path): per file and task, each sample's [passed, category, message]."""
    home = fresh_home("fidelity")
    published = importlib.import_module(spec["published_tables"])
    from codegen.evaluation.tasks import read_task_file
    from codegen.sandbox import open_sandbox
    from codegen.settings import get_settings

    settings = get_settings()
    workers = spec["workers"]
    settings = settings.model_copy(
        update={"eval": settings.eval.model_copy(update={"workers": workers})}
    )
    box = open_sandbox(spec["backend"], pool_size=workers)
    read_samples = published.read_samples
    verdicts: dict[str, Any] = {}
    try:
        for entry in spec["files"]:
            # MBPP's rows carry their own tests: score against a task file of them, the way
            # mbpp_published does; HumanEval's files against the wheel's tasks (the default).
            tasks = read_task_file(entry["tasks"]) if entry["tasks"] else None
            published.read_samples = functools.partial(read_samples, tasks=tasks)
            _, outcomes, _ = published.score_file(
                settings, box, home, entry["label"], entry["lines"]
            )
            for outcome in outcomes:
                verdicts[f"{entry['label']}|{outcome.key}"] = [
                    [s.passed, s.category, s.message] for s in outcome.scores
                ]
    finally:
        published.read_samples = read_samples
        box.close()
    return verdicts


def classeval(spec: dict[str, Any]) -> dict[str, Any]:
    """The five greedy ClassEval files through the tree's crew by replay (its
    ``classeval_replay_crew.run_crew_config``): per task, the crew's final code and status."""
    home = fresh_home("classeval")
    os.environ.update(
        {"CODEGEN_LLM__CACHE": "false", "CODEGEN_SANDBOX__PACKAGE_SET": spec["package_set"]}
    )
    crew = importlib.import_module(spec["classeval_replay_crew"])
    from codegen.composition import sandbox_image
    from codegen.sandbox import open_sandbox
    from codegen.settings import get_settings

    settings = get_settings().sandbox
    keys = crew.held_out_ids()[: spec["limit"]]
    (config,) = crew.configs(Path(spec["data"]), {"five_greedy"})
    box = open_sandbox(settings.backend, image=sandbox_image(settings), pool_size=2)
    try:
        run = crew.run_crew_config(config, Path(spec["tasks"]), keys, home, spec["workers"], box)
    finally:
        box.close()
    return {k: {"status": run.status.get(k), "code": run.solution.get(k)} for k in keys}


PARTS = {"fidelity": fidelity, "classeval": classeval}


def run_side() -> None:
    """Runs the part the spec on stdin names and prints, as stdout's last line, its records
    and the tree its ``codegen`` was imported from (the proof of which tree ran)."""
    spec = json.loads(sys.stdin.read())
    records = PARTS[spec["part"]](spec)
    tree = str(Path(importlib.import_module("codegen").__file__ or "").parents[1])
    sys.stdout.write("\n" + json.dumps({"tree": tree, "records": records}) + "\n")
