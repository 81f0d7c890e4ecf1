"""A sandbox backend is one registered ``BackendKind``: a toy one, defined and registered here
and nowhere else, is accepted by the settings, listed by ``codegen info`` and the CLI's
``--backend``, refused names list it, and ``open_sandbox`` and ``codegen sandbox exec`` run it.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

# Imported before the toy registers, as any earlier test in the worker may have: the CLI
# must still list a backend registered after it was loaded.
import codegen.orchestration.cli.sandbox  # noqa: F401
from codegen.orchestration.cli import main
from codegen.sandbox import (
    BackendKind,
    ExecResult,
    Limits,
    OpenRequest,
    backend_names,
    open_sandbox,
    register,
)
from codegen.sandbox import (
    TestReport as Report,
)
from codegen.sandbox.backends import own_pid_namespace, unregister
from codegen.settings import get_settings


class HostDirSandbox:
    """Runs each command on the host in a fresh temp dir: no isolation (a test's toy)."""

    backend = "toy"
    environment = "host"

    def __init__(self, request: OpenRequest) -> None:
        self.kind = TOY
        self.default_limits = request.default_limits or Limits()

    def run(
        self, files: Mapping[str, str | bytes], command: list[str], limits: Limits | None = None
    ) -> ExecResult:
        limits = limits or self.default_limits
        with tempfile.TemporaryDirectory() as work:
            for name, content in files.items():
                data = content.encode() if isinstance(content, str) else content
                (Path(work) / name).write_bytes(data)
            done = subprocess.run(
                command, cwd=work, capture_output=True, text=True, timeout=limits.timeout_s
            )
        return ExecResult(
            exit_code=done.returncode,
            timed_out=False,
            oom_killed=False,
            stdout=done.stdout,
            stderr=done.stderr,
            truncated=False,
            duration_s=0.0,
            backend=self.backend,
        )

    def run_pytest(
        self, solution_source: str, test_source: str, limits: Limits | None = None
    ) -> Report:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> HostDirSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


TOY = BackendKind(
    name="toy", open=HostDirSandbox, own_pid_namespace=False, environment="'host'", in_auto=False
)


@pytest.fixture
def toy() -> Iterator[BackendKind]:
    register(TOY)
    get_settings.cache_clear()
    yield TOY
    unregister(TOY)
    get_settings.cache_clear()


def test_a_registered_backend_is_listed_chosen_and_opened(
    toy: BackendKind, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert backend_names()[-1] == "toy"
    monkeypatch.setenv("CODEGEN_SANDBOX__BACKEND", "no-such-box")
    assert main(["info"]) == 2
    refusal = capsys.readouterr().err
    assert "[sandbox] backend from CODEGEN_SANDBOX__BACKEND" in refusal and "'toy'" in refusal
    get_settings.cache_clear()

    monkeypatch.setenv("CODEGEN_SANDBOX__BACKEND", "toy")
    assert main(["info"]) == 0
    shown = capsys.readouterr().out
    assert "sandbox       toy (" in shown and "backends auto, docker, bwrap, toy" in shown

    with open_sandbox("toy") as box:
        assert box.run({"a.txt": "hi"}, ["cat", "a.txt"]).stdout == "hi"
        assert not own_pid_namespace(box)  # read from its kind, never from its name

    here = Path(tempfile.mkdtemp())
    (here / "a.txt").write_text("from the dir")
    assert main(["sandbox", "exec", "--backend", "toy", "--dir", str(here), "cat", "a.txt"]) == 0
    assert json.loads(capsys.readouterr().out)["stdout"] == "from the dir"


def test_an_unregistered_backend_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(Exception, match=r"choose one of auto, docker, bwrap$"):
        open_sandbox("toy")
