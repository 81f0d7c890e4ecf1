"""The shape of the request assets: partitions, parallel branches, code versions from prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions

from codegen.agents import prompts
from codegen.agents.artifacts import write_artifact
from codegen.agents.report import Verification, write_report
from codegen.agents.steps import STEPS, upstream
from codegen.assets import codegen
from codegen.orchestration.definitions import build_definitions


def test_request_assets_are_partitioned_by_opaque_request_ids() -> None:
    defs = build_definitions()
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    names = ["request_spec", "test_suite", "retrieved_context", "solution_code", "documentation"]
    for name in names:
        node = graph.get(AssetKey(name))
        assert node.partitions_def == codegen.requests_partitions, name
    assert codegen.requests_partitions.name == "requests"
    checks = {k.name: k for k in graph.asset_check_keys}
    assert {"solution_passes_tests", "solution_bandit"} <= set(checks)
    job = defs.resolve_job_def("codegen_request")
    assert job.partitions_def == codegen.requests_partitions
    assert defs.resolve_sensor_def("inbox_sensor").job_name == "codegen_request"


def test_programmer_draft_does_not_wait_for_the_test_designer() -> None:
    # The draft needs only the spec and the context, so the multiprocess executor runs it
    # side by side with test_suite; only the refinement op needs the tests.
    assert set(codegen.programmer_draft.ins) == {"request_spec", "retrieved_context"}
    assert "test_suite" in codegen.refine_solution.ins
    upstream = codegen.solution_code.keys_by_input_name
    assert upstream["test_suite"] == AssetKey("test_suite")


def test_prompt_changes_change_code_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    assert codegen.request_spec.code_versions_by_key[AssetKey("request_spec")] == (
        codegen.SPEC_VERSION
    )
    assert codegen.test_suite.code_versions_by_key[AssetKey("test_suite")] == (
        codegen.TESTS_VERSION
    )
    assert codegen.solution_code.code_versions_by_key[AssetKey("solution_code")] == (
        codegen.CODE_VERSION
    )
    assert codegen.documentation.code_versions_by_key[AssetKey("documentation")] == (
        codegen.DOCS_VERSION
    )
    before = prompts.prompt_version("test_designer")
    monkeypatch.setitem(
        prompts.ROLE_PROMPTS, "test_designer", (prompts.TEST_DESIGNER_SYSTEM + " Be terse.",)
    )
    assert prompts.prompt_version("test_designer") != before
    assert prompts.prompt_version("programmer", "reviewer") == codegen.CODE_VERSION


def test_a_failed_verification_rerun_downgrades_a_passed_report(tmp_path: Path) -> None:
    folder = tmp_path / "req-0123456789abcdef"
    write_artifact(folder, "report.json", {"status": "passed", "reason": "all 3 tests pass"})
    write_report(folder, verification=Verification(False, 2, 3))
    report = json.loads((folder / "report.json").read_text())
    assert report["status"] == "failed_tests"
    assert report["reason"] == "the verification re-run failed: 2 of 3 tests passed"
    assert report["verification"] == {"passed": False, "tests_passed": 2, "tests_total": 3}


def test_the_assets_run_the_crew_steps_in_their_order() -> None:
    # One definition of the sequence: each asset or op runs one step of agents.crew.STEPS,
    # and its inputs are the steps that step needs (so Dagster orders them the same way).
    runs = {
        "request_spec": "spec",
        "test_suite": "tests",
        "retrieved_context": "context",
        "programmer_draft": "draft",
        "refine_solution": "solution",
        "human_review": "review",
        "documentation": "docs",
    }
    inputs = {
        "request_spec": set(),
        "test_suite": set(codegen.test_suite.keys_by_input_name),
        "retrieved_context": set(codegen.retrieved_context.keys_by_input_name),
        "programmer_draft": set(codegen.programmer_draft.ins),
        "refine_solution": set(codegen.refine_solution.ins) - {"draft"} | {"programmer_draft"},
        "human_review": set(codegen.human_review.keys_by_input_name),
        "documentation": set(codegen.documentation.keys_by_input_name),
    }
    producer = {v: k for k, v in runs.items()}
    for step in STEPS:
        node = producer[step.name]
        needed = {producer[n] for n in step.needs}
        # solution_code (the graph) stands for refine_solution downstream.
        have = {"refine_solution" if i == "solution_code" else i for i in inputs[node]}
        # An input's state holds its own step and everything upstream of it.
        reach = {producer[u] for h in have for u in upstream(runs[h])} | have
        assert needed <= reach, (step.name, needed, have)
        assert have <= {producer[u] for u in upstream(step.name)}, (step.name, have)


def test_the_state_holds_one_result_field_per_step_in_the_steps_order() -> None:
    from codegen.agents.state import STEP_FIELDS

    assert tuple(step.name for step in STEPS) == STEP_FIELDS
