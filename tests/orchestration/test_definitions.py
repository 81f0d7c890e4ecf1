from __future__ import annotations

import json
from pathlib import Path

from dagster import AssetKey, Definitions, instance_for_test, materialize

from codegen.assets.corpus import raw_documents
from codegen.assets.resources import SettingsResource
from codegen.orchestration.definitions import build_definitions


def test_definitions_load_and_validate() -> None:
    defs = build_definitions()
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert AssetKey("raw_documents") in graph.get_all_asset_keys()


def test_raw_documents_reads_a_local_tree(tmp_path: Path, isolated_home: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text('def f():\n    """Say hi."""\n    return "hi"\n')
    (src / "pkg" / "blob.py").write_bytes(b"\x00\x01binary")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00")
    (isolated_home / "codegen.toml").write_text(f'[corpus]\nlocal_paths = ["{src}"]\n')

    with instance_for_test() as instance:
        result = materialize(
            [raw_documents],
            partition_key="local",
            instance=instance,
            resources={"settings": SettingsResource()},
        )
    assert result.success
    [mat] = result.asset_materializations_for_node("raw_documents")
    assert mat.metadata["documents"].value == 1
    assert mat.metadata["skipped"].value == {"binary": 1}
    lines = (isolated_home / "corpus" / "raw" / "local.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    assert doc["title"] == "pkg/mod.py" and doc["language"] == "python"


def test_resources_follow_the_environment(monkeypatch, isolated_home: Path) -> None:
    from dagster import FilesystemIOManager
    from dagster_gcp import GCSPickleIOManager

    from codegen.orchestration.resources import io_manager_for
    from codegen.settings import Settings

    local = io_manager_for(Settings())
    assert isinstance(local, FilesystemIOManager)
    assert local.base_dir == str(isolated_home / "storage")

    monkeypatch.setenv("CODEGEN_ENV", "production")
    monkeypatch.setenv("CODEGEN_STORAGE__GCS_BUCKET", "codegen-assets")
    production = io_manager_for(Settings())
    assert isinstance(production, GCSPickleIOManager)
    assert production.gcs_bucket == "codegen-assets"

    # Production without a bucket keeps the local IO manager rather than failing at load.
    monkeypatch.delenv("CODEGEN_STORAGE__GCS_BUCKET")
    assert isinstance(io_manager_for(Settings()), FilesystemIOManager)
