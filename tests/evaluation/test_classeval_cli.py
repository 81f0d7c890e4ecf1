"""``codegen eval classeval`` as users run it (the console script's main(), in this process):
the reference solutions with ``--canonical`` and an authors'-shape replies file with
``--samples-file``, on the three stdlib-only fixture tasks (data/classeval_tasks.json).

The command switches the sandbox to the 'classeval' package set, whose image CI does not
build. These fixtures import nothing outside the standard library, so the tests replace that
switch (``evaluate._shape_sandbox``) with one that keeps the default set, and check that
the command asked for it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, instance_for_test

from codegen.orchestration.cli import main
from codegen.settings import Settings, get_settings

pytestmark = pytest.mark.docker
TASKS = Path(__file__).parent / "data" / "classeval_tasks.json"


@pytest.fixture
def switched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The package-set switch, kept at the default set; the sets it was asked to leave."""
    asked: list[str] = []

    def keep_default(settings: Settings, shape: object) -> Settings:
        asked.append(settings.sandbox.package_set)
        return settings

    monkeypatch.setattr("codegen.orchestration.cli.evaluate._shape_sandbox", keep_default)
    return asked


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["eval", "classeval", "--tasks", str(TASKS), *args])
    out, err = capsys.readouterr()
    return code, out, err


def replies(path: Path) -> Path:
    """The authors' replies shape: Counter's reply wrong (increment ignores its step), the
    other two right (one unfenced after prose, one fenced)."""
    tasks = {t["task_id"]: t for t in json.loads(TASKS.read_text())}
    wrong = tasks["ClassEval_T0"]["solution_code"].replace("+= step", "+= 1")
    assert wrong != tasks["ClassEval_T0"]["solution_code"]
    rows = [
        {"task_id": "ClassEval_T0", "predict": [f"```python\n{wrong}```"]},
        {
            "task_id": "ClassEval_T1",
            "predict": ["Here it is.\n" + tasks["ClassEval_T1"]["solution_code"]],
        },
        {
            "task_id": "ClassEval_T2",
            "predict": [f"```python\n{tasks['ClassEval_T2']['solution_code']}```"],
        },
    ]
    path.write_text(json.dumps(rows))
    return path


def live_dict_failed(figures: dict[str, Any]) -> int:
    """1 when Inventory's live-dict test class failed, else 0. Its test mutates the dict a
    method returned: it passes because isolation mirrors the alias back (no verdict is decided
    in the candidate's process)."""
    return int(any(f["test_class"] == "InventoryTestGetItems" for f in figures["failures"]))


def test_canonical_and_a_replies_file_through_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], switched: list[str]
) -> None:
    code, out, err = run(capsys, "--canonical", "--json")
    assert code == 0, err
    assert switched == ["default"]  # the command asked for the classeval set
    canonical = json.loads(out)["classeval"]
    lost = live_dict_failed(canonical)
    assert lost == 0  # Inventory's live dict is mirrored across the boundary, decided isolated
    assert canonical["verdicts_isolated"] == canonical["verdicts"] == 7
    assert sum(canonical["verdicts_by_fence"].values()) == 7
    assert canonical["class_success"] == {"pass@1": pytest.approx((3 - lost) / 3, abs=1e-4)}
    assert len(canonical["failures"]) == lost

    code, out, err = run(capsys, "--canonical")
    assert code == 0, err
    assert f"classes solved {3 - lost}/3; verdicts decided isolated 7/7; fence: " in out

    code, out, err = run(capsys, "--samples-file", str(replies(tmp_path / "r.json")), "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    figures = result["classeval"]
    assert live_dict_failed(figures) == lost
    assert figures["class_success"] == {"pass@1": pytest.approx((2 - lost) / 3, abs=1e-4)}
    assert figures["class_partial_success"] == {"pass@1": pytest.approx((2 - lost) / 3, abs=1e-4)}
    assert figures["method_success"] == {"pass@1": pytest.approx((5 - lost) / 6, abs=1e-4)}
    # increment: 1 of 2 passes
    assert figures["method_partial_success"] == {"pass@1": pytest.approx((6 - lost) / 6, abs=1e-4)}
    assert figures["test_class_success"] == {"pass@1": pytest.approx((5 - lost) / 7, abs=1e-4)}
    assert (figures["classes"], figures["classes_solved"], figures["verdicts"]) == (3, 2 - lost, 7)
    assert result["pass_at_k"] == {"pass@1": pytest.approx((2 - lost) / 3, abs=1e-4)}
    reasons = {f["test_class"]: (f["result"], f["reason"]) for f in figures["failures"]}
    failing_tasks = {"ClassEval_T0"} | ({"ClassEval_T2"} if lost else set())
    assert {f["task"] for f in figures["failures"]} == failing_tasks
    assert reasons["CounterTestIncrement"][0] == "partial_success"
    assert "test_increment_step" in reasons["CounterTestIncrement"][1]
    assert "AssertionError: 6 != 8" in reasons["CounterTestIncrement"][1]
    assert reasons["CounterTestMain"][0] == "fail" and len(reasons) == 2 + lost

    # The same file as text (every verdict now cached): the figures and each failing class.
    code, out, err = run(capsys, "--samples-file", str(tmp_path / "r.json"))
    assert code == 0, err
    assert f"class success: pass@1 = {(2 - lost) / 3:.4f}" in out
    assert f"method success: pass@1 = {(5 - lost) / 6:.4f}" in out
    assert f"classes solved {2 - lost}/3;" in out
    assert "  ClassEval_T0 #0 CounterTestIncrement: partial_success: 1 of 2 tests fail" in out
    assert "  ClassEval_T0 #0 CounterTestMain: fail: 1 of 1 tests fail" in out
    assert switched == ["default"] * 4


@pytest.fixture
def instance(monkeypatch: pytest.MonkeyPatch) -> Iterator[DagsterInstance]:
    """A fresh test instance, which `codegen eval --backfill` submits to."""
    pools = {"concurrency": {"pools": {"default_limit": 2, "granularity": "op"}}}
    with instance_for_test(overrides=pools) as found:
        monkeypatch.setattr(
            "codegen.orchestration.cli.evaluate.configured_instance", lambda settings: found
        )
        yield found


def summary_of(instance: DagsterInstance, key: str) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(AssetKey(key))
    assert event is not None and event.asset_materialization is not None, key
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_a_backfill_scores_under_the_commands_package_set(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    instance: DagsterInstance,
) -> None:
    """The runs' own settings name a package set with no image ('none'): they score under
    the set the command chose (the default, here) because the backfill carries it."""
    monkeypatch.setenv("CODEGEN_SANDBOX__PACKAGE_SET", "none")
    get_settings.cache_clear()

    def default_set(settings: Settings, shape: object) -> Settings:
        sandbox = settings.sandbox.model_copy(update={"package_set": "default"})
        return settings.model_copy(update={"sandbox": sandbox})

    monkeypatch.setattr("codegen.orchestration.cli.evaluate._shape_sandbox", default_set)
    code, out, err = run(capsys, "--canonical", "--backfill", "--json")
    assert code == 0, err
    result = json.loads(out[out.find("{") :])  # the driven daemon logs to the captured stdout
    assert result["backfill_status"] == "COMPLETED_SUCCESS"
    lost = live_dict_failed(result["classeval"])
    assert lost == 0
    assert result["classeval"]["class_success"] == {
        "pass@1": pytest.approx((3 - lost) / 3, abs=1e-4)
    }
    digest = result["task_set"]["digest"]
    tasks = {f"{digest}:ClassEval_T{i}" for i in range(3)}
    assert set(instance.get_materialized_partitions(AssetKey("task_set_canonical"))) == tasks
    summary = summary_of(instance, "task_set_summary")
    assert summary["canonical_classeval"]["class_success"] == result["classeval"]["class_success"]
    assert summary["canonical_classeval"]["classes_solved"] == 3 - lost

    replies_file = str(replies(tmp_path / "r.json"))
    code, out, err = run(capsys, "--samples-file", replies_file, "--backfill", "--json")
    assert code == 0, err
    result = json.loads(out[out.find("{") :])
    assert result["classeval"]["class_success"] == {
        "pass@1": pytest.approx((2 - lost) / 3, abs=1e-4)
    }
    file_summary = summary_of(instance, "task_set_file_summary")
    assert file_summary["classeval"]["class_success"] == result["classeval"]["class_success"]
    assert file_summary["classeval"]["method_success"] == {
        "pass@1": pytest.approx((5 - lost) / 6, abs=1e-4)
    }


def test_a_missing_image_names_the_command_that_builds_it_and_that_command_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the classeval image the command prints the one build command it needs (the
    default set's command built the wrong image); run as printed, that command builds the
    very tag the evaluation looked for, with the classeval set. (The real build takes
    minutes and CI does not make this image: build_image is recorded, not run.)"""
    from codegen.sandbox.image import package_set

    missing = "multiagent-codegen-sandbox:no-such-version"
    env = {**os.environ, "CODEGEN_SANDBOX__IMAGE": missing, "CODEGEN_SANDBOX__BACKEND": "docker"}
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegen",
            "eval",
            "classeval",
            "--tasks",
            str(TASKS),
            "--canonical",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ran.returncode != 0 and "Traceback" not in ran.stderr, ran.stderr
    said = re.search(r"sandbox image '([^']+)' not found; build it with '([^']+)'", ran.stderr)
    assert said is not None, ran.stderr
    assert said.group(1) == missing
    printed = shlex.split(said.group(2))
    assert printed == ["codegen", "sandbox", "build", "--offline", "--package-set", "classeval"]

    built: list[tuple[str, tuple[str, ...], bool]] = []

    def build_image(tag: str, *, offline: bool, packages: Any, **_: Any) -> str:
        built.append((tag, packages.requirements, offline))
        return tag

    monkeypatch.setattr("codegen.sandbox.image.build_image", build_image)
    monkeypatch.setenv("CODEGEN_SANDBOX__IMAGE", missing)  # the same shell as the message's
    get_settings.cache_clear()
    assert main(printed[1:]) == 0, capsys.readouterr().err
    assert built == [(missing, package_set("classeval").requirements, True)]
