"""The one exit-code rule (`codegen/orchestration/cli/exits.py`), its refusals through the real
command line: every command, given a file (or a flag, or a port) it cannot use, exits 2 with
one line on stderr and no traceback, before doing anything. A missing file, a malformed task
or samples file, a recording that does not parse, a busy port and a `codegen.toml` that is
not TOML all exited 1 before.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from codegen.orchestration.cli import cli
from codegen.replay.recording import Entry, write_recording


@dataclass(frozen=True, eq=False)  # by identity: a key of the module's results
class Case:
    command: str  # the leaf command it refuses: "eval tasks", "replay serve", ...
    args: tuple[str, ...]  # {name} stands for the fixture's file of that name
    says: str  # part of the one line
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.command}: {self.says}"


CASES = [
    Case("eval tasks", ("eval", "tasks", "{missing}", "--canonical"), "cannot read"),
    Case("eval tasks", ("eval", "tasks", "{not_json}", "--canonical"), "not valid JSON"),
    Case("eval mbpp", ("eval", "mbpp", "--tasks", "{no_fields}", "--canonical"), "is missing"),
    Case("eval apps", ("eval", "apps", "--tasks", "{missing}", "--canonical"), "cannot read"),
    Case(
        "eval classeval",
        ("eval", "classeval", "--tasks", "{numbers}", "--canonical"),
        "expected a JSON object",
    ),
    Case("eval humaneval", ("eval", "humaneval", "--plus", "{missing}"), "cannot read"),
    Case("eval humaneval", ("eval", "humaneval", "--samples-file", "{not_json}"), "not valid JSON"),
    Case("eval humaneval", ("eval", "humaneval", "--record", "{folder}"), "is a directory"),
    Case("eval list", ("eval", "list", "extra"), "unexpected extra argument"),
    Case("replay serve", ("replay", "serve", "{missing}"), "cannot read"),
    Case("replay serve", ("replay", "serve", "{not_json}"), "not valid JSON"),
    Case(
        "replay serve",
        ("replay", "serve", "{recording}", "--port", "{busy_port}"),
        "cannot listen on 127.0.0.1:{busy_port}",
    ),
    Case(
        "replay serve",
        ("replay", "serve", "{recording}", "--port", "0", "--log", "{under_a_file}"),
        "is not a directory",
    ),
    Case(
        "replay import",
        ("replay", "import", "--format", "human-eval", "{not_json}", "{out}"),
        "not valid JSON",
    ),
    Case(
        "replay import",
        ("replay", "import", "--format", "human-eval", "{samples}", "{under_a_file}"),
        "is not a directory",
    ),
    Case("generate", ("generate", "@{missing}"), "cannot read"),
    Case("generate", ("generate", "Write f().", "--record", "{folder}"), "is a directory"),
    Case("review", ("review", "req-0123456789abcdef", "--approve"), "unknown request"),
    Case("requests", ("requests", "--status", "bogus"), "Invalid value for '--status'"),
    Case("search", ("search", "split a string"), "empty or missing"),
    # Every command reads the settings file first.
    Case("info", ("info",), "is not valid TOML", env={"CODEGEN_CONFIG": "{not_toml}"}),
    Case("corpus build", ("corpus", "build", "--local", "{missing}"), "not a directory"),
    Case("sandbox build", ("sandbox", "build", "--package-set", "nope"), "'nope' is not one of"),
    Case("sandbox exec", ("sandbox", "exec", "--dir", "{missing}", "--", "true"), "not exist"),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The files (and a port) the cases name; the port is held by a listener meanwhile."""
    tmp_path = tmp_path_factory.mktemp("inputs")
    (tmp_path / "not.json").write_text("{not json\n")
    (tmp_path / "no-fields.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "numbers.json").write_text("[1, 2]\n")
    (tmp_path / "codegen.toml").write_text("this is = = not toml\n")
    (tmp_path / "a-file").write_text("plain\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "samples.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "  pass"}\n')
    write_recording(
        tmp_path / "recording.jsonl", [Entry("programmer", "t1", None, 1, "x = 1")], "test"
    )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield {
            "home": str(tmp_path / "home"),
            "missing": str(tmp_path / "missing.jsonl"),
            "not_json": str(tmp_path / "not.json"),
            "no_fields": str(tmp_path / "no-fields.jsonl"),
            "numbers": str(tmp_path / "numbers.json"),
            "not_toml": str(tmp_path / "codegen.toml"),
            "folder": str(tmp_path / "folder"),
            "under_a_file": str(tmp_path / "a-file" / "out.jsonl"),
            "samples": str(tmp_path / "samples.jsonl"),
            "recording": str(tmp_path / "recording.jsonl"),
            "out": str(tmp_path / "out.jsonl"),
            "busy_port": str(listener.getsockname()[1]),
        }


def refuse(case: Case, inputs: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A fresh home, as conftest's isolated_home gives each test (this runs before any test).
    home = Path(inputs["home"]) / str(CASES.index(case))
    (home / "dagster_home").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_POSTGRES_URL"}
    env.update(
        CODEGEN_HOME=str(home),
        CODEGEN_ENV="local",
        CODEGEN_CONFIG=str(home / "codegen.toml"),
        DAGSTER_HOME=str(home / "dagster_home"),
    )
    env.update({k: v.format(**inputs) for k, v in case.env.items()})
    return subprocess.run(
        [sys.executable, "-m", "codegen", *(a.format(**inputs) for a in case.args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture(scope="module")
def refused(inputs: dict[str, str]) -> dict[Case, subprocess.CompletedProcess[str]]:
    """Every case's command, run side by side (each is a new interpreter: about 0.5 s)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        return dict(zip(CASES, pool.map(lambda c: refuse(c, inputs), CASES), strict=True))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_with_exit_2_and_one_line(
    case: Case, inputs: dict[str, str], refused: dict[Case, subprocess.CompletedProcess[str]]
) -> None:
    result = refused[case]
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("codegen: error: "), result.stderr
    assert case.says.format(**inputs) in lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert not Path(inputs["out"]).exists()  # refused: nothing written


def leaf_commands(group: click.Group, ctx: click.Context, prefix: str = "") -> Iterator[str]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from leaf_commands(command, ctx, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}"


def test_every_command_has_a_refusal_case() -> None:
    with click.Context(cli) as ctx:
        commands = set(leaf_commands(cli, ctx))
    assert commands == {c.command for c in CASES}
