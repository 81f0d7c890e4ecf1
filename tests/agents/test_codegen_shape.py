"""The shape of the request assets: partitions, parallel branches, code versions from prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions

from codegen.agents import prompts
from codegen.agents.artifacts import write_artifact
from codegen.agents.report import Verification, write_report
from codegen.agents.spec import SPEC_JSON_SCHEMA
from codegen.agents.steps import STEPS, step_named, upstream
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
    # The draft needs only the spec and the context, so the executor runs it side by side
    # with test_suite; only the refinement needs the tests.
    draft = codegen.REQUEST_ASSETS["draft"].keys_by_input_name
    assert set(draft.values()) == {AssetKey("request_spec"), AssetKey("retrieved_context")}
    upstream = codegen.REQUEST_ASSETS["solution"].keys_by_input_name
    assert upstream["test_suite"] == AssetKey("test_suite")


def test_prompt_changes_change_code_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each asset's code version is its step's: a hash of its roles' prompts (as before steps
    # carried them: the same values, so no stored asset turns stale by the move).
    schema = json.dumps(SPEC_JSON_SCHEMA, sort_keys=True)
    expected = {
        "request_spec": ("spec", prompts.prompt_version("analyzer", extra=schema)),
        "test_suite": ("tests", prompts.prompt_version("test_designer")),
        "retrieved_context": ("context", "1"),
        "solution_code": ("solution", prompts.prompt_version("programmer", "reviewer")),
        "documentation": ("docs", prompts.prompt_version("documenter")),
    }
    for asset, (step, version) in expected.items():
        assert codegen.REQUEST_ASSETS[step].code_versions_by_key[AssetKey(asset)] == version
        assert step_named(step).code_version == version
    before = prompts.prompt_version("test_designer")
    monkeypatch.setitem(
        prompts.ROLE_PROMPTS, "test_designer", (prompts.TEST_DESIGNER_SYSTEM + " Be terse.",)
    )
    assert prompts.prompt_version("test_designer") != before
    assert prompts.prompt_version("programmer", "reviewer") == step_named("solution").code_version


def test_a_failed_verification_rerun_downgrades_a_passed_report(tmp_path: Path) -> None:
    folder = tmp_path / "req-0123456789abcdef"
    write_artifact(folder, "report.json", {"status": "passed", "reason": "all 3 tests pass"})
    write_report(folder, verification=Verification(False, 2, 3))
    report = json.loads((folder / "report.json").read_text())  # the file's keys, as ever
    assert report["status"] == "failed_tests"
    assert report["reason"] == "the verification re-run failed: 2 of 3 tests passed"
    assert report["verification"] == {"passed": False, "tests_passed": 2, "tests_total": 3}


def test_the_assets_run_the_crew_steps_in_their_order() -> None:
    # One definition of the sequence: each asset runs one step of STEPS, and reads the
    # results of every step upstream of it (so Dagster orders them the same way).
    assert list(codegen.REQUEST_ASSETS) == [step.name for step in STEPS]
    for step in STEPS:
        inputs = set(codegen.REQUEST_ASSETS[step.name].keys_by_input_name.values())
        assert inputs == {AssetKey(codegen.asset_name(n)) for n in upstream(step.name)}


def test_a_step_added_to_the_steps_gets_its_asset_without_an_edit_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codegen.agents import steps as steps_module
    from codegen.agents.state import StepResult

    def audit(crew: steps_module.Crew, state: object, meter: object) -> StepResult:
        return StepResult()

    audit_step = steps_module.Step("audit", ("docs",), audit, StepResult, "auditing the docs")
    extended = (*STEPS, audit_step)
    monkeypatch.setattr(steps_module, "STEPS", extended)
    built = codegen.build_request_assets(extended)
    assert list(built) == [*(s.name for s in STEPS), "audit"]
    audit_asset = built["audit"]
    assert audit_asset.key == AssetKey("audit")  # a step the table does not list: its name
    # It reads every step upstream of it, as the others do.
    assert set(audit_asset.keys_by_input_name.values()) == {
        AssetKey(codegen.asset_name(n)) for n in upstream("audit")
    }
    assert AssetKey("documentation") in set(audit_asset.keys_by_input_name.values())
    from codegen.orchestration.resources import resources_for
    from codegen.settings import get_settings

    resources = resources_for(get_settings())
    Definitions.validate_loadable(Definitions(assets=list(built.values()), resources=resources))


def test_the_state_holds_one_result_field_per_step_in_the_steps_order() -> None:
    from codegen.agents.state import STEP_FIELDS

    assert tuple(step.name for step in STEPS) == STEP_FIELDS
