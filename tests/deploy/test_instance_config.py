"""The docker deployment's instance file: the shared one plus the deployment's sections."""

from __future__ import annotations

from pathlib import Path

import yaml
from dagster._core.instance.config import dagster_instance_config

from codegen.deploy.images import SHARED_INSTANCE, instance_yaml


def test_the_merged_instance_file_is_valid_and_keeps_the_shared_sections(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text(instance_yaml())
    config, _ = dagster_instance_config(str(tmp_path))  # raises on a schema violation

    assert config["run_launcher"]["class"] == "DockerRunLauncher"
    assert config["run_launcher"]["config"]["network"] == {"env": "CODEGEN_DOCKER_NETWORK"}
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert "DAGSTER_POSTGRES_URL" in config["run_launcher"]["config"]["env_vars"]
    assert config["run_retries"]["retry_on_asset_or_op_failure"] is False
    # Everything the shared file sets that the deployment does not replace is kept as is.
    shared = yaml.safe_load(SHARED_INSTANCE.read_text())
    for key in set(shared) - {"run_launcher"}:
        assert config[key] == shared[key], key
    assert not {"run_storage", "event_log_storage", "schedule_storage"} & set(config)
