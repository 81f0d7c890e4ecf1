"""One docker deployment per test session, started with the user's own make target.

The scripted LLM server listens on the Docker bridge's host address (containers cannot reach
the host's loopback); the deployment's containers reach it as ``host.docker.internal``. Each
session gets its own compose project, network, volumes and UI port, all removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codegen.deploy.images import PROJECT_ROOT
from codegen.deploy.stack import Stack, host_address_for_containers
from codegen.replay.scripted import ScriptedOpenAIServer

DEPLOY_TIMEOUT_S = 1500  # a fresh machine builds the images first (pip wheel, docker build)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Deployment:
    stack: Stack
    server: ScriptedOpenAIServer
    project: str

    @property
    def home(self) -> Path:
        return self.stack.home_path()

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.stack.graphql(query, variables)


def make(target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", target],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEPLOY_TIMEOUT_S,
    )


@pytest.fixture(scope="session")
def llm_handler() -> Callable[[str, dict[str, Any]], Any]:
    from codegen.replay.scripted import primes_handler

    return primes_handler


# One stack for this package's tests, brought down when they end: not left idling (and its
# clients polling) through the rest of the session.
@pytest.fixture(scope="package")
def deployment(llm_handler: Callable[[str, dict[str, Any]], Any]) -> Iterator[Deployment]:
    if shutil.which("docker-compose") is None:
        why = "docker-compose is not installed (apt-get install docker-compose)"
        if os.environ.get("CODEGEN_REQUIRE_DOCKER"):  # CI provisions it: a failure there
            pytest.fail(why)
        pytest.skip(why)
    project = f"codegen-test-{uuid.uuid4().hex[:8]}"
    with ScriptedOpenAIServer(handler=llm_handler, host=host_address_for_containers()) as server:
        overrides = {
            "COMPOSE_PROJECT_NAME": project,
            "CODEGEN_UI_PORT": str(free_port()),
            "CODEGEN_HOME_VOLUME": f"{project}-home",
            "OPENAI_BASE_URL": f"http://host.docker.internal:{server.port}/v1",
            "OPENAI_API_KEY": "sk-test-deployment",
            # The stack's first start would otherwise index the standard library, which on
            # two cores starves the load test's thirty requests for minutes.
            "CODEGEN_CORPUS__BUILD_ON_FIRST_RUN": "false",
        }
        stack = Stack(overrides)
        env = {**os.environ, **overrides}
        try:
            up = make("deploy-docker", env)
            assert up.returncode == 0, f"make deploy-docker failed:\n{up.stdout}\n{up.stderr}"
            assert f"Dagster UI: {stack.ui_url}" in up.stdout
            yield Deployment(stack=stack, server=server, project=project)
        finally:
            down = make("deploy-docker-down", {**env, "DEPLOY_DOWN_ARGS": "--volumes"})
            assert down.returncode == 0, down.stderr
