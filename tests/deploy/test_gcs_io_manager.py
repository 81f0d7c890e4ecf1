"""The production IO manager (dagster-gcp) against a GCS emulator on loopback.

The emulator (``gcp-storage-emulator``) speaks the GCS JSON API; the real
``google-cloud-storage`` client reaches it through ``STORAGE_EMULATOR_HOST``, exactly as it
would reach a real bucket. A request's upstream assets are materialized into the bucket by one
run; a second run materializes ``documentation`` alone, so its inputs can only come back
out of the bucket.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, instance_for_test, materialize

from codegen.agents.state import SolutionResult
from codegen.assets import codegen
from codegen.assets.resources import (
    LLMResource,
    RetrieverResource,
    SandboxResource,
    SettingsResource,
)
from codegen.orchestration.resources import fixed_io_manager, io_manager_for
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.requests.store import RequestStore
from codegen.settings import get_settings

pytestmark = pytest.mark.docker  # solution_code runs the tests in the sandbox

BUCKET = "codegen-assets"
PREFIX = "prod"
UPSTREAM = [codegen.REQUEST_ASSETS[step] for step in ("spec", "tests", "context", "draft")]
UPSTREAM_KEYS = [
    "request_spec",
    "test_suite",
    "retrieved_context",
    "solution_draft",
    "solution_code",
    "human_review",
]


@pytest.fixture
def gcs_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from gcp_storage_emulator.server import create_server

    server = create_server("127.0.0.1", 0, in_memory=True, default_bucket=BUCKET)
    server.start()
    # Bound to port 0 (a free one); the emulator exposes the chosen port only on its httpd.
    port = server._api._httpd.server_address[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    yield endpoint
    server.stop()


def test_request_asset_values_round_trip_through_the_bucket(
    gcs_emulator: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster_gcp import GCSPickleIOManager
    from google.cloud import storage

    monkeypatch.setenv("CODEGEN_ENV", "production")
    monkeypatch.setenv("CODEGEN_STORAGE__GCS_BUCKET", BUCKET)
    monkeypatch.setenv("CODEGEN_STORAGE__GCS_PREFIX", PREFIX)
    get_settings.cache_clear()
    io_manager = io_manager_for(get_settings())
    assert isinstance(io_manager, GCSPickleIOManager)  # the production choice, not a stand-in

    with ScriptedOpenAIServer(handler=primes_handler) as server, instance_for_test() as instance:
        resources = {
            "settings": SettingsResource(),
            "llm": LLMResource(base_url=server.base_url, cache_dir=None, max_retries=1),
            "sandbox": SandboxResource(backend="docker", pool_size=1, timeout_s=20),
            "retriever": RetrieverResource(),
            # As the code location serves it: fixed to the settings, no run config.
            "io_manager": fixed_io_manager(io_manager),
        }
        req = RequestStore(isolated_home / "requests").add("Write primes_up_to(n).", {})
        instance.add_dynamic_partitions("requests", [req.id])
        everything = list(codegen.REQUEST_ASSETS.values())

        first = materialize(
            everything,
            selection=UPSTREAM_KEYS,
            partition_key=req.id,
            instance=instance,
            resources=resources,
        )
        assert first.success

        client = storage.Client()  # the real client; STORAGE_EMULATOR_HOST points it here
        stored = {b.name for b in client.list_blobs(BUCKET, prefix=f"{PREFIX}/")}
        # One object per asset and partition, each holding only its own step's result.
        assert stored == {f"{PREFIX}/{key}/{req.id}" for key in UPSTREAM_KEYS}
        blob = client.bucket(BUCKET).blob(f"{PREFIX}/solution_code/{req.id}")
        solution = pickle.loads(blob.download_as_bytes())  # the refinement's result
        assert isinstance(solution, SolutionResult)
        assert solution.ended is None and "def primes_up_to" in solution.code
        assert solution.report.passed == solution.report.total > 0

        # A fresh run of the last asset alone: every input is read back from the bucket.
        calls_before = len(server.requests)
        second = materialize(
            everything,
            selection=["documentation"],
            partition_key=req.id,
            instance=instance,
            resources=resources,
        )
        assert second.success
        assert [r.role for r in server.requests[calls_before:]] == ["documenter"]
        docs = pickle.loads(
            client.bucket(BUCKET).blob(f"{PREFIX}/documentation/{req.id}").download_as_bytes()
        )
        assert "# primes_up_to" in docs.docs  # its inputs were read back, not recomputed
        [event] = [
            e
            for e in second.get_asset_materialization_events()
            if e.asset_key == AssetKey("documentation")
        ]
        assert event.materialization.metadata["status"].value == "passed"
