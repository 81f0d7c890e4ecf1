from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CODEGEN = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEGEN, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_help_lists_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: codegen" in result.stdout
    assert "info" in result.stdout


@pytest.mark.parametrize(
    "args",
    [("no-such-command",), ("--no-such-option",), ("info", "--bogus"), ("info", "extra-arg")],
)
def test_bad_input_is_one_line_without_traceback(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:"), result.stderr


def test_malformed_config_file_is_one_line(isolated_home: Path) -> None:
    (isolated_home / "codegen.toml").write_text("this is = = not toml\n")
    result = run_cli("info")
    assert result.returncode == 2  # refused: bad input, as every bad setting
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:"), result.stderr
    assert f"{isolated_home / 'codegen.toml'} is not valid TOML" in lines[0], lines


def test_info_json_reflects_env_over_file(isolated_home: Path) -> None:
    (isolated_home / "codegen.toml").write_text('[sandbox]\nbackend = "docker"\npool_size = 5\n')
    result = run_cli("info", "--json", env={"CODEGEN_SANDBOX__BACKEND": "bwrap"})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["settings"]["sandbox"]["backend"] == "bwrap"  # env wins
    assert data["settings"]["sandbox"]["pool_size"] == 5  # file beats default
    assert data["settings"]["home"] == str(isolated_home)
    assert data["config_file"] == str(isolated_home / "codegen.toml")
    assert data["config_file_exists"] is True
    # Where each effective value came from: the variable, the file, or the default.
    sources = data["setting_sources"]
    assert sources["sandbox.backend"] == {
        "source": "environment",
        "from": "CODEGEN_SANDBOX__BACKEND",
    }
    assert sources["sandbox.pool_size"] == {
        "source": "file",
        "from": str(isolated_home / "codegen.toml"),
    }
    assert sources["sandbox.isolation"] == {"source": "default", "from": None}
    assert sources["home"] == {"source": "environment", "from": "CODEGEN_HOME"}
    assert set(sources) >= {"llm.default.model", "llm.max_rounds", "review.mode"}


def test_info_says_the_endpoint_the_daemon_and_the_index(isolated_home: Path) -> None:
    result = run_cli(
        "info",
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "CODEGEN_LLM__DEFAULT__MODEL": "qwen"},
    )
    assert result.returncode == 0, result.stderr
    assert "not found" in result.stdout.splitlines()[0]  # no codegen.toml in this home
    assert "http://127.0.0.1:9/v1 (default qwen)" in result.stdout
    assert "daemon        none serves this instance" in result.stdout
    assert "index         none: no index to search" in result.stdout


@pytest.mark.parametrize(("args", "code"), [(["--version"], 0), (["no-such-command"], 2)])
def test_the_console_script_runs_exit_handlers_and_keeps_the_exit_status(
    args: list[str], code: int
) -> None:
    # run() skips the interpreter's teardown, not the handlers (the sandboxes close in one).
    script = (
        "import atexit, sys\n"
        "from codegen.orchestration.cli import run\n"
        "atexit.register(lambda: print('exit handler ran', flush=True))\n"
        f"sys.argv = ['codegen', *{args!r}]\n"
        "run()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.rstrip().endswith("exit handler ran")
    if code == 0:
        assert "codegen, version" in proc.stdout  # printed before the exit, not lost
    else:
        assert proc.stderr.startswith("codegen: error: No such command")


@pytest.mark.parametrize("first_call", [True, False])
def test_the_console_script_collects_again_after_the_first_model_call_or_the_pause(
    first_call: bool,
) -> None:
    # In its own process: the collector's state is the whole interpreter's.
    script = (
        "import gc, time\n"
        "from codegen.agents.llm import first_call_started\n"
        "from codegen.orchestration import cli\n"
        f"cli.STARTUP_GC_PAUSE_S = {60 if first_call else 0.2}\n"
        "cli.pause_gc_during_startup()\n"
        "print(gc.isenabled())\n"
        f"{'first_call_started.set()' if first_call else 'pass'}\n"
        "deadline = time.monotonic() + 30\n"
        "while not gc.isenabled() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]
