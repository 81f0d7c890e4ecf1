"""A refused `codegen generate` (nothing stored, nothing run) says why in one plain line and
exits 2, the status exits.py gives refusals, whatever refused it: a daemon without this
shell's key, or a daemon that holds a key this shell does not.

The daemon is its heartbeats and its published environment, written into a real instance
and home as a serving daemon writes them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dagster._daemon.types import DaemonHeartbeat

from codegen.orchestration.cli import main
from codegen.orchestration.cli.exits import REFUSED_EXIT
from codegen.orchestration.instance import configured_instance
from codegen.requests.route import KEY_ENV, publish_daemon_environment
from codegen.requests.store import RequestStore
from codegen.settings import get_settings

pytestmark = pytest.mark.dagster_instance  # CI runs these again on Postgres


@pytest.mark.parametrize(
    ("daemon_key", "shell_key", "said"),
    [
        (None, "sk-shell", "has no OPENAI_API_KEY and this shell has one"),
        ("sk-daemon", None, "has an OPENAI_API_KEY and this shell has none"),
        ("sk-daemon", "sk-shell", "has a different OPENAI_API_KEY from this shell's"),
    ],
)
def test_a_daemon_without_this_shells_key_is_refused_the_request_with_exit_2(
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    daemon_key: str | None,
    shell_key: str | None,
    said: str,
) -> None:
    instance = configured_instance(get_settings())
    try:
        for kind in ("SENSOR", "QUEUED_RUN_COORDINATOR"):
            instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), kind, "daemon", None))
    finally:
        instance.dispose()
    # The daemon publishes its endpoint and key hash from its own environment.
    monkeypatch.delenv(KEY_ENV, raising=False)
    if daemon_key:
        monkeypatch.setenv(KEY_ENV, daemon_key)
    publish_daemon_environment(isolated_home, "http://a.example/v1")
    monkeypatch.delenv(KEY_ENV, raising=False)
    if shell_key:
        monkeypatch.setenv(KEY_ENV, shell_key)
    # The daemon's own endpoint: one it sends its key to, so the keys are what differ.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://a.example/v1")
    assert main(["generate", "Write f().", "--launch", "queue"]) == REFUSED_EXIT == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"codegen: error: the daemon serving this instance (endpoint http://a.example/v1) {said} "
        "(endpoint http://a.example/v1): restart `make run` with this shell's environment, or "
        "run the request here with --launch here"
    )
    assert not RequestStore(isolated_home / "requests").all()  # nothing was queued


def test_eval_refuses_a_candidate_whose_key_variable_is_unset_with_exit_2(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated_home / "codegen.toml").write_text(
        '[llm]\ncandidates = [{model = "a"}, {model = "b", api_key_env = "CODEGEN_TEST_UNSET"}]\n'
    )
    get_settings.cache_clear()
    monkeypatch.delenv("CODEGEN_TEST_UNSET", raising=False)
    assert main(["eval", "humaneval", "--limit", "1"]) == REFUSED_EXIT
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "codegen: error: [llm] candidates[1] takes its key from CODEGEN_TEST_UNSET "
        "(api_key_env), which is not set in this environment"
    )
