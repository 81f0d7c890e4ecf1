"""Through the real CLI, in its own process, on the offline scripted endpoint: a class request
answered with primes ends ``off_target`` (exit 7) everywhere a status shows (the outcome, its
``--json``, report.json, ``codegen requests``, the UI's checks); a request the spec ends
(``off_target``, ``missing_dependency``) streams the steps after it as skipped, with why, and
its sandbox check says it did not run rather than failing as if tests had run. No sandbox
is needed: nothing runs after the spec."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance

from codegen.json_types import JSONObject
from codegen.replay.scripted import CANNED, PRIMES_SPEC, ScriptedOpenAIServer, primes_handler

pytestmark = pytest.mark.dagster_instance

LRU_REQUEST = "Write a class LRUCache(capacity) with get(key) and put(key, value)."
SKIPPED = "skipped (the request ended at request_spec: {status})"


def generate(server: ScriptedOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def checks(run_id: str) -> dict[str, tuple[bool, AssetCheckSeverity, str]]:
    instance = DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        found = [
            e.dagster_event.event_specific_data
            for e in instance.all_logs(run_id)
            if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
    finally:
        instance.dispose()
    return {c.check_name: (c.passed, c.severity, c.description or "") for c in found}


def skipped_in_the_ui(asset: str) -> object:
    """The ``skipped`` metadata of the asset's latest materialization (None: not skipped)."""
    instance = DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        [record] = instance.fetch_materializations(AssetKey(asset), limit=1).records
    finally:
        instance.dispose()
    assert record.asset_materialization is not None
    value = record.asset_materialization.metadata.get("skipped")
    return getattr(value, "value", value)


def assert_skipped_after_the_spec(stderr: str, status: str) -> None:
    lines = [line.strip() for line in stderr.splitlines()]
    assert "request_spec: done" in lines, lines
    for step in ("test_suite", "solution_code", "solution_code_solution_passes_tests"):
        assert f"{step}: {SKIPPED.format(status=status)}" in lines, lines
    assert not any(line.endswith(": started") and "request_spec" not in line for line in lines)
    assert not any("FAILED" in line for line in lines), lines


def test_a_class_request_answered_with_primes_ends_off_target_exit_7(isolated_home: Path) -> None:
    with ScriptedOpenAIServer(handler=CANNED["primes"]) as server:
        proc = generate(server, "generate", LRU_REQUEST, "--json")
        text = generate(server, "requests")
        roles = {r.role for r in server.requests}
    assert proc.returncode == 7, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "off_target"
    assert "the request asks for `LRUCache`, `get`, `put`" in out["reason"]
    assert "its one script answers primes_up_to" in out["reason"]
    assert out["warnings"] == []  # the reason says it once
    assert set(out["artifacts"]) == {"spec.json", "report.json"}
    report = json.loads(Path(out["artifacts"]["report.json"]).read_text())
    assert (report["status"], report["reason"]) == ("off_target", out["reason"])
    assert roles == {"analyzer"}
    assert_skipped_after_the_spec(proc.stderr, "off_target")
    assert f"{out['request_id']}  off_target  " in text.stdout, text.stdout

    found = checks(out["run_id"])
    passed, severity, description = found["spec_fits_request"]
    assert not passed and severity is AssetCheckSeverity.ERROR  # red in the UI
    assert description == f"off_target: {out['reason']}"
    passed, severity, description = found["solution_passes_tests"]
    assert not passed and severity is AssetCheckSeverity.WARN
    assert description.startswith("not run: the request ended at its spec")
    assert skipped_in_the_ui("request_spec") is None
    for asset in ("test_suite", "solution_code", "documentation"):
        assert skipped_in_the_ui(asset) == "the request ended at request_spec (off_target)"


def needs_requests(role: str, body: JSONObject) -> object:
    if role != "analyzer":
        return primes_handler(role, body)
    spec = copy.deepcopy(PRIMES_SPEC)
    spec["dependencies"] = ["requests"]
    return spec


def test_a_missing_dependency_streams_skipped_steps_and_a_check_that_did_not_run(
    isolated_home: Path,
) -> None:
    with ScriptedOpenAIServer(handler=needs_requests) as server:
        proc = generate(server, "generate", "Write primes_up_to(n) with requests.")
    assert proc.returncode == 6, proc.stderr
    assert "status     missing_dependency: the spec needs requests" in proc.stdout
    assert "           report.json" in proc.stdout.splitlines()
    assert_skipped_after_the_spec(proc.stderr, "missing_dependency")
