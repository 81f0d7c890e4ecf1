"""``codegen sandbox build|exec`` end to end through the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_support import ensure_docker_image, ensure_rootfs_or_skip

CODEGEN = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"


def codegen(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEGEN, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:"), result.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("VALUE = 42\n")
    (root / "main.py").write_text(
        "import sys\nfrom pkg.mod import VALUE\nprint(VALUE, sys.argv[1:])\n"
    )
    (root / "alias.py").symlink_to("main.py")
    return root


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("bwrap", marks=pytest.mark.bwrap),
    ],
)
def test_exec_prints_the_json_result(project: Path, backend: str) -> None:
    ensure_docker_image() if backend == "docker" else ensure_rootfs_or_skip()
    result = codegen(
        "sandbox",
        "exec",
        "--dir",
        str(project),
        "--timeout",
        "20",
        "--memory",
        "256",
        "--backend",
        backend,
        "--",
        "python3",
        "alias.py",
        "--flag",
        "x",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["exit_code"] == 0 and data["backend"] == backend
    assert data["stdout"] == "42 ['--flag', 'x']\n"
    assert set(data) >= {"exit_code", "timed_out", "oom_killed", "stdout", "stderr", "duration_s"}
    timeout = codegen(
        "sandbox",
        "exec",
        "--dir",
        str(project),
        "--timeout",
        "1",
        "--backend",
        backend,
        "--",
        "python3",
        "-c",
        "import time; time.sleep(30)",
    )
    assert json.loads(timeout.stdout)["timed_out"] is True
    assert timeout.returncode == 124, timeout.stderr  # as timeout(1) says it


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("bwrap", marks=pytest.mark.bwrap),
    ],
)
@pytest.mark.parametrize(
    ("code", "status"),
    [("import sys; print('out'); sys.exit(3)", 3), ("import os; os.kill(os.getpid(), 15)", 143)],
)
def test_exec_exits_with_the_commands_status_as_docker_run_does(
    project: Path, backend: str, code: str, status: int
) -> None:
    ensure_docker_image() if backend == "docker" else ensure_rootfs_or_skip()
    result = codegen(
        "sandbox", "exec", "--dir", str(project), "--backend", backend, "--", "python3", "-c", code
    )
    assert result.returncode == status, result.stderr
    data = json.loads(result.stdout)  # the JSON is printed all the same
    assert data["exit_code"] == (3 if status == 3 else -15) and not data["timed_out"]
    assert data["stdout"] == ("out\n" if status == 3 else "")


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("bwrap", marks=pytest.mark.bwrap),
    ],
)
def test_exec_runs_with_absolute_and_outside_links(
    project: Path, tmp_path: Path, backend: str
) -> None:
    """A real project's links (a virtualenv's python, a linked config) do not block the run."""
    ensure_docker_image() if backend == "docker" else ensure_rootfs_or_skip()
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-CONTENT\n")
    (project / "leak").symlink_to(secret)
    (project / "up").symlink_to("../host-secret.txt")
    (project / "python").symlink_to("/usr/bin/python3")
    code = (
        "import os\n"
        "for name in ('leak', 'up', 'python'):\n"
        "    print(name, os.readlink(name), os.path.exists(name))\n"
        "print(open('leak').read())\n"
    )
    result = codegen(
        "sandbox",
        "exec",
        "--dir",
        str(project),
        "--timeout",
        "20",
        "--backend",
        backend,
        "--",
        "python3",
        "-c",
        code,
    )
    data = json.loads(result.stdout)
    assert result.returncode == data["exit_code"] == 1, result.stderr  # open('leak') failed
    assert "HOST-SECRET-CONTENT" not in data["stdout"] + data["stderr"]
    lines = data["stdout"].splitlines()
    assert lines[:2] == [f"leak {secret} False", "up ../host-secret.txt False"]
    assert lines[2] == "python /usr/bin/python3 True"  # the sandbox's own interpreter
    assert data["exit_code"] != 0 and "FileNotFoundError" in data["stderr"]


def test_exec_errors_are_one_line(project: Path, tmp_path: Path) -> None:
    assert "does not exist" in one_line_error(
        codegen("sandbox", "exec", "--dir", str(tmp_path / "missing"), "--", "true")
    )
    one_line_error(codegen("sandbox", "exec", "--dir", str(project)))  # no command
    one_line_error(codegen("sandbox", "exec", "--dir", str(project), "--timeout", "-1", "--", "x"))


@pytest.mark.docker
def test_unknown_image_is_one_line(project: Path) -> None:
    line = one_line_error(
        codegen(
            "sandbox",
            "exec",
            "--dir",
            str(project),
            "--backend",
            "docker",
            "--",
            "true",
            env={"CODEGEN_SANDBOX__IMAGE": "multiagent-codegen-sandbox:no-such-version"},
        )
    )
    assert "not found; build it with 'codegen sandbox build --offline'" in line


def test_no_backend_is_one_line(project: Path, tmp_path: Path) -> None:
    # No docker daemon at this address and no bwrap on PATH: nothing may run.
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    line = one_line_error(
        codegen(
            "sandbox",
            "exec",
            "--dir",
            str(project),
            "--",
            "true",
            env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock", "PATH": str(empty_bin)},
        )
    )
    assert "no sandbox backend works here" in line


@pytest.mark.docker
def test_build_is_a_no_op_when_the_image_exists() -> None:
    import docker

    tag = ensure_docker_image()
    client = docker.from_env()
    before = client.images.get(tag).id
    result = codegen("sandbox", "build", "--offline")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == tag
    assert "already exists" in result.stderr and "root file system cached" in result.stderr
    assert client.images.get(tag).id == before  # nothing was rebuilt
    client.close()
