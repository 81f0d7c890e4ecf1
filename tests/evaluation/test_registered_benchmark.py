"""A new benchmark is a loader module and a registration: no asset of its own is written.

The module below is all a two-task benchmark needs; named in ``[eval] benchmarks``, it gets
the same asset family HumanEval has (static partitions, jobs, the canonical self-check), and
a real backfill (``instance_for_test``, runs in their own processes, the real sandbox, a
scripted model on loopback) scores it through the same session as ``codegen eval``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckKey, AssetKey, instance_for_test

from codegen.evaluation import benchmarks
from codegen.orchestration.backfill import drive_backfill, submit_backfill
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.settings import get_settings

pytestmark = pytest.mark.docker
POOLS = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}

TASKS = [
    {
        "task_id": "Demo/add",
        "prompt": 'def add(a: int, b: int) -> int:\n    """Return a + b."""\n',
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    },
    {
        "task_id": "Demo/clamp",
        "prompt": 'def clamp(x: int, lo: int, hi: int) -> int:\n    """x limited to [lo, hi]."""\n',
        "entry_point": "clamp",
        "canonical_solution": "    return max(lo, min(x, hi))\n",
        "test": "def check(candidate):\n    assert candidate(5, 0, 3) == 3\n",
    },
]
# The whole of a new benchmark: where its tasks come from, and one registration.
LOADER = """
from pathlib import Path

from codegen.evaluation.benchmarks import Benchmark, register
from codegen.evaluation.tasks import read_task_file

DATA = Path(__file__).with_name("demo.jsonl")
register(Benchmark("demo", lambda: read_task_file(DATA, name="Demo"), references_pass=True))
"""


def model(role: str, body: dict[str, Any]) -> Any:
    """Solves add, gets clamp wrong (its own test passes, the hidden one does not)."""
    name = "clamp" if "clamp" in json.dumps(body) else "add"
    if role == "analyzer":
        function = {"name": name, "signature": f"{name}(*args)", "description": name}
        return {
            "purpose": name,
            "functions": [function],
            "behaviours": [name],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    if role == "test_designer":
        return f"```python\nfrom solution import {name}\n\n\ndef test_it():\n    assert {name}\n```"
    if role == "programmer":
        if name == "add":
            return "```python\ndef add(a, b):\n    return a + b\n```"
        return "```python\ndef clamp(x, lo, hi):\n    return x\n```"
    if role == "reviewer":
        return "APPROVED"
    return f"# {name}\n"


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The loader module on the path of this process and of the runs, named in settings."""
    (tmp_path / "demo.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    (tmp_path / "demo_bench.py").write_text(LOADER)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{path}" if path else str(tmp_path))
    monkeypatch.setenv("CODEGEN_EVAL__BENCHMARKS", '["demo_bench"]')
    get_settings.cache_clear()
    yield
    benchmarks.unregister("demo")


def test_a_registered_two_task_set_runs_as_a_backfill(
    demo: None, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegen.orchestration.definitions import build_definitions

    defs = build_definitions()
    keys = ["Demo-add", "Demo-clamp"]
    for name in ("demo_samples", "demo_scores", "demo_canonical", "demo_file_scores"):
        assert defs.resolve_assets_def(AssetKey(name)).partitions_def.get_partition_keys() == keys
    assert defs.resolve_job_def("demo_crew_job") is not None
    selection = ["demo_canonical", "demo_samples", "demo_scores", "demo_summary"]
    with ScriptedOpenAIServer(handler=model) as server:
        # The runs execute in other processes: they find the endpoint in the environment.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-registered-benchmark-0123456789")
        with instance_for_test(overrides=POOLS) as instance:
            backfill_id = submit_backfill(
                instance, defs, [AssetKey(k) for k in selection], keys, title="demo"
            )
            progress = drive_backfill(instance, backfill_id, timeout_s=400)
            assert progress.status == "COMPLETED_SUCCESS" and not progress.runs_failed
            for name in selection[:3]:
                assert set(instance.get_materialized_partitions(AssetKey(name))) == set(keys)
            event = instance.get_latest_materialization_event(AssetKey("demo_summary"))
            assert event is not None and event.asset_materialization is not None
            summary = {k: v.value for k, v in event.asset_materialization.metadata.items()}
            [check] = instance.event_log_storage.get_asset_check_execution_history(
                AssetCheckKey(AssetKey("demo_summary"), "canonical_verified"), limit=1
            )
    # The crew solved add and not clamp; both references pass, so the self-check does.
    assert summary["pass@1"] == 0.5 and summary["crew_tasks_scored"] == 2
    assert summary["canonical_passed"] == 2
    assert summary["task_set"] == "Demo"
    assert check.event.dagster_event.event_specific_data.passed is True
    tasks = {r.headers.get("x-codegen-task") for r in server.requests if r.method == "POST"}
    assert tasks == {"Demo/add", "Demo/clamp"}
