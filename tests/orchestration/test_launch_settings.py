"""The operator's settings are not run config (issue 46, finding 4).

Every resource of the code location is built from the deployment's settings and served with a
config schema of no fields: a launch (the launchpad, a backfill, a sensor's run request) that
sets one of their fields is refused by Dagster before the run starts, in one line naming the
field. What a launch may still choose: a request's documented options (the submit job's op
config) and, for an evaluation, one of the deployment's named package sets (the backfill's run
tag). The only way a request names another endpoint is its stored route, followed only when the
process that runs it has no key to send.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dagster import (
    DagsterInstance,
    DagsterInvalidConfigError,
    Definitions,
    Failure,
    instance_for_test,
    validate_run_config,
)

from codegen.agents.llm import LLMRoute
from codegen.assets.codegen import REQUEST_ASSETS
from codegen.assets.evaluation_family import _run_sandbox
from codegen.assets.resources import SandboxResource, recording_here
from codegen.evaluation.classeval.figures import CLASSEVAL_SHAPE
from codegen.evaluation.session import PACKAGE_SET_TAG
from codegen.orchestration.definitions import build_definitions
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.requests.store import RequestStore

KEY = "sk-operator-canary-9182"
ELSEWHERE = "http://attacker.invalid/v1"

# (resource key, a field of it, a value a launch might try): each setting finding 4 lists.
OVERRIDES = [
    ("llm", "base_url", ELSEWHERE),
    ("llm", "candidates", [{"base_url": ELSEWHERE, "api_key_env": "GITHUB_TOKEN"}]),
    ("llm", "allowed_base_urls", [ELSEWHERE]),
    ("llm", "reliability_file", "/tmp/elsewhere.json"),
    ("sandbox", "memory_mb", 65536),
    ("sandbox", "pids", 100000),
    ("sandbox", "timeout_s", 86400.0),
    ("sandbox", "image", "attacker/image:latest"),
    ("sandbox", "backend", "bwrap-host"),
    ("settings", "home", "/tmp/elsewhere"),
    ("vector_index", "home", "/tmp/elsewhere"),
    ("retriever", "embedder", "openai"),
    ("io_manager", "base_dir", "/tmp/elsewhere"),
]


def refusals(job_def: Any, run_config: dict[str, Any]) -> list[str]:
    """Dagster's reasons for refusing ``run_config`` on the job (none: accepted)."""
    try:
        validate_run_config(job_def, run_config)
    except DagsterInvalidConfigError as exc:
        return [error.message for error in exc.errors]
    return []


@pytest.fixture
def defs() -> Definitions:
    return build_definitions()  # the code location, from this test's own home


@pytest.mark.parametrize(("key", "field", "value"), OVERRIDES, ids=lambda v: str(v)[:20])
def test_a_launch_setting_an_operator_setting_is_refused_naming_it(
    defs: Definitions, key: str, field: str, value: object
) -> None:
    run_config = {"resources": {key: {"config": {field: value}}}}
    jobs = [defs.resolve_job_def(name) for name in ("codegen_request", "submit_request_job")]
    jobs += [j for j in defs.resolve_all_job_defs() if j.name.endswith("_canonical_job")][:1]
    for job_def in jobs:
        [why] = refusals(job_def, run_config)
        assert "\n" not in why and f'"{field}"' in why and f"resources:{key}:config" in why, why


def test_a_request_option_still_travels_as_run_config(
    defs: Definitions, isolated_home: Path, tmp_path: Path
) -> None:
    job_def = defs.resolve_job_def("submit_request_job")
    options = {"request": "Write is_palindrome(s).", "max_rounds": 4, "review": "human"}
    ops = {"ops": {"submit_request": {"config": options}}}
    with instance_for_test() as instance:
        result = job_def.execute_in_process(run_config=ops, instance=instance)
        stored = RequestStore(isolated_home / "requests").get(
            result.output_for_node("submit_request")
        )
        assert stored.options == {"max_rounds": 4, "review": "human"}
        # The same launch also re-rooting the home is refused before anything is stored.
        elsewhere = tmp_path / "elsewhere"
        with pytest.raises(DagsterInvalidConfigError, match='"home"'):
            job_def.execute_in_process(
                run_config={**ops, "resources": {"settings": {"config": {"home": str(elsewhere)}}}},
                instance=instance,
            )
    assert not elsewhere.exists() and len(RequestStore(isolated_home / "requests").all()) == 1


def run_with_tags(tags: dict[str, str]) -> Any:
    return SimpleNamespace(run=SimpleNamespace(tags=tags))


def test_a_backfill_tag_chooses_among_the_named_package_sets_only() -> None:
    settings_built = SandboxResource(backend="docker", memory_mb=512, pool_size=1)
    # ClassEval's backfill names its set; every other setting stays the deployment's.
    wanted = CLASSEVAL_SHAPE.package_set
    assert wanted is not None
    chosen = _run_sandbox(run_with_tags({PACKAGE_SET_TAG: wanted}), settings_built)  # type: ignore[arg-type]
    assert chosen.package_set == wanted
    assert chosen.model_dump(exclude={"package_set"}) == settings_built.model_dump(
        exclude={"package_set"}
    )
    assert _run_sandbox(run_with_tags({}), settings_built) is settings_built  # type: ignore[arg-type]
    # A set the deployment does not name: the run fails in one line naming the tag.
    with pytest.raises(Failure) as refused:
        _run_sandbox(run_with_tags({PACKAGE_SET_TAG: "attacker-set"}), settings_built)  # type: ignore[arg-type]
    why = refused.value.description or ""
    assert "\n" not in why and PACKAGE_SET_TAG in why and "attacker-set" in why, why


def spec_step(
    defs: Definitions,
    instance: DagsterInstance,
    request_id: str,
    run_config: dict[str, Any],
    tags: dict[str, str] | None = None,
) -> tuple[bool, str, dict[str, Any]]:
    """The request job's first step, as the code location runs it: (success, failure, the
    step's ``endpoints`` metadata)."""
    job_def = defs.resolve_job_def("codegen_request")
    instance.add_dynamic_partitions("requests", [request_id])
    result = job_def.execute_in_process(
        run_config=run_config,
        instance=instance,
        partition_key=request_id,
        asset_selection=[REQUEST_ASSETS["spec"].key],
        tags=tags,
        raise_on_error=False,
    )
    failures = " ".join(
        e.step_failure_data.user_failure_data.description or ""
        for e in result.get_step_failure_events()
        if e.step_failure_data.user_failure_data is not None
    )
    materialized = result.asset_materializations_for_node(REQUEST_ASSETS["spec"].node_def.name)
    endpoints = materialized[0].metadata["endpoints"].value if materialized else {}
    return result.success, failures, endpoints  # type: ignore[return-value]


def test_another_endpoint_only_by_a_route_and_only_with_no_key_to_send(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        ScriptedOpenAIServer(handler=primes_handler) as own,
        ScriptedOpenAIServer(handler=primes_handler) as foreign,
        instance_for_test() as instance,
    ):
        monkeypatch.setenv("CODEGEN_LLM__BASE_URL", own.base_url)
        monkeypatch.setenv("CODEGEN_LLM__MAX_RETRIES", "0")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        defs = build_definitions()
        store = RequestStore(isolated_home / "requests")
        plain = store.add("Write primes_up_to(n).", {}, state="queued")  # a launchpad request

        # A launch re-routing the endpoint is refused before the run: the key goes nowhere.
        with pytest.raises(DagsterInvalidConfigError, match='"base_url"'):
            spec_step(
                defs,
                instance,
                plain.id,
                {"resources": {"llm": {"config": {"base_url": foreign.base_url}}}},
            )
        assert foreign.requests == [] and own.requests == []

        # A stored route naming the other endpoint, with a key in the process: refused too.
        routed = store.add(
            "Write primes_up_to(n).", {}, state="queued", route=LLMRoute(foreign.base_url).to_dict()
        )
        ok, why, _ = spec_step(defs, instance, routed.id, {})
        assert not ok and why.startswith("refused:") and "\n" not in why and KEY not in why
        assert foreign.requests == [] and own.requests == []

        # No key anywhere in the process: the route is followed, with no Authorization header,
        # and the step's metadata says where its calls went.
        monkeypatch.delenv("OPENAI_API_KEY")
        ok, why, endpoints = spec_step(defs, instance, routed.id, {})
        assert ok, why
        assert [r.role for r in foreign.requests] == ["analyzer"] and own.requests == []
        assert all("authorization" not in r.headers for r in foreign.requests)
        assert endpoints["analyzer"]["base_url"] == foreign.base_url

        # And the launchpad's request, with the key back, calls the settings' own endpoint.
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        ok, why, endpoints = spec_step(defs, instance, plain.id, {})
        assert ok, why
        assert {r.headers.get("authorization") for r in own.requests} == {f"Bearer {KEY}"}
        assert endpoints["analyzer"]["base_url"] == own.base_url


def test_a_launch_tag_cannot_name_a_file_to_record_to(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--record`` is the CLI's, for the run in its own process; a launch's tag names no file
    the run would write its replies to."""
    target = tmp_path / "launch-chose-this.jsonl"
    with (
        ScriptedOpenAIServer(handler=primes_handler) as own,
        instance_for_test() as instance,
    ):
        monkeypatch.setenv("CODEGEN_LLM__BASE_URL", own.base_url)
        defs = build_definitions()
        store = RequestStore(isolated_home / "requests")
        tagged = store.add("Write primes_up_to(n).", {}, state="queued")
        ok, why, _ = spec_step(defs, instance, tagged.id, {}, {"codegen/record": str(target)})
        assert ok, why
        assert not target.exists()
        # The CLI's own run records where --record says.
        recorded = store.add("Write primes_up_to(n).", {}, state="queued")
        with recording_here(recorded.id, target):
            ok, why, _ = spec_step(defs, instance, recorded.id, {})
        assert ok, why
        assert target.exists()
