"""The README's inbox command works exactly as written on a fresh home, once the code location
has loaded (as `make run` loads it): the file lands in the inbox and the sensor asks for its run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dagster import SensorResult, build_sensor_context, instance_for_test

import codegen.settings as config
from codegen.assets.resources import SettingsResource
from codegen.orchestration.launch import build_inbox_sensor, codegen_request_job
from codegen.requests.store import RequestStore

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(section: str) -> list[str]:
    """The shell lines of the first ```sh block after ``section``'s heading."""
    text = README.read_text()
    after = text[text.index(f"## {section}") :]
    block = after[after.index("```sh\n") + 6 :]
    return [line for line in block[: block.index("```")].splitlines() if line.strip()]


def test_the_readme_inbox_command_works_on_a_fresh_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [command] = [line for line in readme_block("Generating code") if "inbox sensor" in line]
    checkout = tmp_path / "checkout"  # the README's paths are relative to the checkout
    checkout.mkdir()
    home = checkout / ".codegen"
    monkeypatch.setenv("CODEGEN_HOME", str(home))
    config.get_settings.cache_clear()
    from codegen.orchestration.definitions import build_definitions

    build_definitions()  # what `make run`'s code server does on start
    done = subprocess.run(
        ["bash", "-c", command], cwd=checkout, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    with instance_for_test() as instance:
        sensor = build_inbox_sensor(codegen_request_job)
        result = sensor(
            build_sensor_context(instance=instance, resources={"settings": SettingsResource()})
        )
    assert isinstance(result, SensorResult)
    [run] = result.run_requests or []
    stored = RequestStore(home / "requests").get(run.partition_key)
    assert stored.text == "Write is_palindrome(s)."
    assert run.tags["codegen/request"] == "Write is_palindrome(s)."
