"""README's "Try it offline" recipe, run as a newcomer runs it, on a fresh home.

The section's ```sh block is read as it stands and each of its lines runs in a shell of its
own (the README says "in three shells"), in the checkout, with only two things changed: the
ports (a free one for the scripted endpoint wherever the block names its port, and
``PORT=<free>`` on ``make run``) and the environment, which is this machine's less every
``CODEGEN_*``, ``DAGSTER_*`` and ``OPENAI_*`` variable, plus a fresh ``CODEGEN_HOME`` and
``CODEGEN_CORPUS__BUILD_ON_FIRST_RUN=false`` (the first corpus build takes minutes). So the
test fails when a documented step does not do what the README says:

- the endpoint line (``... -m codegen.replay.scripted ...``) keeps running and prints what
  its ``# prints ...`` comment says;
- ``make run`` keeps running and serves the UI (its code location loaded, its daemon beating);
- the request line (``... codegen generate ...``) queues on that daemon, passes, and prints
  the report: its status, and the artifacts folder the prose names
  (``.codegen/artifacts/<request id>/``) holding ``report.json`` and the files listed;
- the UI the prose names (``http://127.0.0.1:3000``) shows the request on its run's page, in
  headless Chromium (the request's partition, its text, the run's and the request's status);
- SIGTERM to ``make`` (as the Quick start says) stops it, and nothing is left running.

Any other line of the block runs to completion and must exit 0.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.orchestration.test_ui_browser import dom, free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SECTION = "## Try it offline"
pytestmark = [pytest.mark.browser, pytest.mark.docker, pytest.mark.slow]

UI_START_S = 120.0  # `dagster dev` loads its code location in 30 to 55 s on two cores
REQUEST_S = 180.0
STOP_S = 15.0  # the supervisor's grace period, SIGKILL, and a margin for a loaded machine
LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
DAEMONS = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"


@dataclass
class Recipe:
    """The section's shell lines, each for a shell of its own, and the prose after them."""

    lines: list[str]  # every command line of the block, in its order
    endpoint: str  # starts the scripted endpoint; runs until stopped
    make_run: str  # `make run`; runs until stopped
    request: str  # `codegen generate ...`; runs to its end
    prose: str  # the section after the block


def read_recipe() -> Recipe:
    text = README.read_text()
    assert SECTION in text, f"README.md has no {SECTION!r} section"
    section = text[text.index(SECTION) + len(SECTION) :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    assert "```sh\n" in section, f"{SECTION}: no ```sh block"
    start = section.index("```sh\n") + len("```sh\n")
    end = section.index("```", start)
    joined = section[start:end].replace("\\\n", " ")  # continued lines are one command
    lines = [line.strip() for line in joined.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]

    def only(what: str, pattern: str) -> str:
        found = [line for line in lines if re.search(pattern, line)]
        assert len(found) == 1, f"{SECTION}: expected one {what} line, found {found}"
        return found[0]

    return Recipe(
        lines,
        endpoint=only("scripted endpoint", r"-m codegen\.replay\.scripted\b"),
        make_run=only("`make run`", r"(^|[;&|]\s*)make run\b"),
        request=only("`codegen generate`", r"\bcodegen generate\b"),
        prose=section[end:],
    )


def newcomer_env(home: Path) -> dict[str, str]:
    """This machine's environment as a newcomer's shell has it, on a fresh home."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CODEGEN_", "DAGSTER_", "OPENAI_"))
    }
    env["CODEGEN_HOME"] = str(home)
    env["CODEGEN_CORPUS__BUILD_ON_FIRST_RUN"] = "false"
    return env


def with_home(home: Path) -> list[int]:
    """Processes (other than this one) started with ``home`` as their CODEGEN_HOME."""
    marker = f"CODEGEN_HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "(gone)"
    return raw.replace(b"\0", b" ").decode(errors="replace")[:200]


def descendants(pid: int) -> list[int]:
    """``pid``'s children, their children, and so on."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [child for child, p in parents.items() if p == parent]
        found += kids
        todo += kids
    return found


def make_pid(shell: subprocess.Popen[str]) -> int:
    """The `make` the shell line started (the shell itself where it exec'd make)."""
    for pid in [shell.pid, *descendants(shell.pid)]:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "make":
                return pid
    raise AssertionError(f"no make process under the shell: {command_line(shell.pid)}")


class Shell:
    """One line of the recipe running in a shell of its own, its output collected."""

    def __init__(self, line: str, env: dict[str, str]) -> None:
        # SIGTERM and SIGINT at their defaults, as a terminal's shell has them (a test run
        # started in the background inherits them ignored; make would then ignore them too).
        self.proc = subprocess.Popen(
            ["env", "--default-signal=TERM,INT", "bash", "-c", line],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        assert self.proc.stdout is not None
        stdout = self.proc.stdout  # drained all along: a full pipe would block the writers
        self.reader = threading.Thread(target=lambda: self.lines.extend(stdout), daemon=True)
        self.reader.start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def running(self, what: str) -> None:
        assert self.proc.poll() is None, f"{what} exited {self.proc.returncode}:\n{self.output}"


def graphql(base: str, query: str) -> dict:
    return requests.post(f"{base}/graphql", json={"query": query}, timeout=10).json()["data"]


def ui_ready(base: str) -> bool:
    """The UI answers, its code location is loaded, and its daemon's sensors and run queue
    beat (what `codegen generate` needs to queue a request on it)."""
    try:
        entries = graphql(base, LOCATIONS)["workspaceOrError"]["locationEntries"]
        statuses = graphql(base, DAEMONS)["instance"]["daemonHealth"]["allDaemonStatuses"]
    except (requests.RequestException, KeyError, TypeError, ValueError):
        return False
    healthy = {s["daemonType"] for s in statuses if s["healthy"]}
    loaded = bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)
    return loaded and {"SENSOR", "QUEUED_RUN_COORDINATOR"} <= healthy


def stop(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def gone_within(seconds: float, pids: list[int]) -> list[int]:
    """Those of ``pids`` still alive after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and not zombie(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class Walk:
    """The recipe's lines run in the block's order, on one fresh home, each step checked."""

    def __init__(self, recipe: Recipe, home: Path) -> None:
        self.recipe, self.home = recipe, home
        self.env = newcomer_env(home)
        self.ui_port, self.endpoint_port = free_port(), free_port()
        # The endpoint's port, as the block names it, is the one substituted everywhere.
        named = re.search(r"--port\s+(\d+)", recipe.endpoint)
        assert named, f"{SECTION}: the endpoint line names no --port: {recipe.endpoint}"
        self.readme_port = named.group(1)
        # What the prose names: the UI's address and the artifacts folder.
        assert re.search(r"http://127\.0\.0\.1:\d+", recipe.prose), (
            f"{SECTION}: the prose after the block names no UI address"
        )
        folder = re.search(r"`\.codegen/(artifacts/<request id>)/?`", recipe.prose)
        assert folder, f"{SECTION}: the prose names no .codegen/artifacts/<request id>/ folder"
        self.folder = folder.group(1)
        self.base = f"http://127.0.0.1:{self.ui_port}"
        self.endpoint: Shell | None = None
        self.server: Shell | None = None
        self.run_id = self.request_id = ""
        self.timings: dict[str, float] = {}

    def ported(self, line: str) -> str:
        line = re.sub(rf"--port\s+{self.readme_port}\b", f"--port {self.endpoint_port}", line)
        return re.sub(rf"(?<=:){self.readme_port}\b", str(self.endpoint_port), line)

    def run(self, line: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line], cwd=ROOT, env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip

    def step(self, line: str) -> None:
        began = time.monotonic()
        if line == self.recipe.endpoint:
            what = "the endpoint"
            self.start_endpoint()
        elif line == self.recipe.make_run:
            what = "make run to a UI with its daemon"
            self.start_make_run()
        elif line == self.recipe.request:
            what = "the request"
            self.make_request()
        else:  # e.g. `make venv`
            what = line
            done = self.run(self.ported(line), 300)
            assert done.returncode == 0, f"{line}: exit {done.returncode}\n{done.stderr[-2000:]}"
        self.timings[what] = time.monotonic() - began

    def start_endpoint(self) -> None:
        """Shell 1: the scripted endpoint prints the variable its comment promises."""
        line, _, comment = self.ported(self.recipe.endpoint).partition("#")
        self.endpoint = endpoint = Shell(line, self.env)
        deadline = time.monotonic() + 30
        while "OPENAI_BASE_URL=" not in endpoint.output:
            endpoint.running("the scripted endpoint")
            assert time.monotonic() < deadline, f"the endpoint printed: {endpoint.output}"
            time.sleep(0.1)
        said = re.search(r"OPENAI_BASE_URL=\S+", endpoint.output)
        assert said and said.group(0) == f"OPENAI_BASE_URL=http://127.0.0.1:{self.endpoint_port}/v1"
        if comment.strip().startswith("prints"):
            promised = comment.strip().removeprefix("prints").strip()
            assert promised in endpoint.output, (promised, endpoint.output)

    def start_make_run(self) -> None:
        """Shell 2: `make run`, until the UI answers with its code location and daemon."""
        line = re.sub(
            r"\bmake run\b(\s+PORT=\S+)?", f"make run PORT={self.ui_port}", self.recipe.make_run
        )
        self.server = server = Shell(self.ported(line), self.env)
        deadline = time.monotonic() + UI_START_S
        while not ui_ready(self.base):
            server.running("make run")
            assert time.monotonic() < deadline, f"no UI in {UI_START_S} s:\n{server.output[-3000:]}"
            time.sleep(1)

    def make_request(self) -> None:
        """Shell 3: the request queues on make run's daemon, passes, prints its report."""
        assert self.server is not None, f"{SECTION}: the request comes before `make run`"
        line = self.ported(self.recipe.request)
        done = self.run(line, REQUEST_S)
        said = f"{line}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
        assert done.returncode == 0, said
        assert "queued for the daemon's run queue" in done.stderr, said
        request_id = re.search(r"^request\s+(\S+)$", done.stdout, re.M)
        run_id = re.search(r"run ([0-9a-f-]{36}): success", done.stderr)
        assert request_id and run_id, said
        self.request_id, self.run_id = request_id.group(1), run_id.group(1)
        assert re.search(r"^status\s+passed: ", done.stdout, re.M), said
        artifacts = self.home / self.folder.replace("<request id>", self.request_id)
        listed = re.search(r"^artifacts\s+(\S+)\n((?:\s{11}\S+\n)*)", done.stdout, re.M)
        assert listed and Path(listed.group(1)) == artifacts, said
        files = listed.group(2).split()
        assert {"solution.py", "test_solution.py"} <= set(files), said
        # The folder holds what the CLI listed, and the report itself.
        for name in {*files, "report.json"}:
            assert (artifacts / name).is_file(), (name, sorted(artifacts.iterdir()))
        report = json.loads((artifacts / "report.json").read_text())
        assert report["request_id"] == self.request_id and report["status"] == "passed"

    def check_ui(self) -> None:
        """The UI shows the request: its run's page (launched by the inbox sensor for the
        request's partition) with the request's text and status, in headless Chromium."""
        args = shlex.split(self.recipe.request.split("codegen generate", 1)[1])
        words = html.escape(next(a for a in args if not a.startswith("-"))[:40], quote=False)
        began = time.monotonic()
        page = dom(f"{self.base}/runs/{self.run_id}")
        self.timings["its run page in Chromium"] = time.monotonic() - began
        seen = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))  # the page's text
        assert f"partition: {self.request_id}" in seen, seen[-3000:]
        assert words in seen and "Success" in seen, seen[-3000:]  # its text; the run's status
        assert re.search(r"\bstatus passed\b", seen), seen[-3000:]  # the request's status

    def stop_all(self) -> None:
        """SIGTERM to make (the Quick start: "a SIGTERM to `make` stops all of it"), then
        Ctrl-C in the endpoint's shell: nothing of the recipe is left running."""
        assert self.server is not None and self.endpoint is not None
        began = time.monotonic()
        endpoint = {self.endpoint.proc.pid, *descendants(self.endpoint.proc.pid)}
        stop(make_pid(self.server.proc), signal.SIGTERM)
        left = gone_within(STOP_S, [p for p in with_home(self.home) if p not in endpoint])
        assert not left, "left running after SIGTERM to make: " + "; ".join(
            f"{p} {command_line(p)}" for p in left
        )
        self.server.proc.wait(timeout=5)
        self.timings["make run stopped"] = time.monotonic() - began
        stop(-self.endpoint.proc.pid, signal.SIGINT)
        left = gone_within(STOP_S, with_home(self.home))
        assert not left, "; ".join(f"{p} {command_line(p)}" for p in left)

    def clean_up(self) -> None:
        for shell in (self.endpoint, self.server):
            if shell is not None and shell.proc.poll() is None:
                stop(-shell.proc.pid, signal.SIGKILL)
        for pid in with_home(self.home):
            stop(pid, signal.SIGKILL)


def test_the_readme_offline_recipe_end_to_end_on_a_fresh_home(tmp_path: Path) -> None:
    started = time.monotonic()
    recipe = read_recipe()
    walk = Walk(recipe, tmp_path / "checkout-home" / ".codegen")
    try:
        for line in recipe.lines:
            walk.step(line)
        assert walk.endpoint and walk.server, f"{SECTION}: no endpoint or no `make run`"
        walk.check_ui()
        walk.stop_all()
    finally:
        walk.clean_up()
        shown = ", ".join(f"{k!r} {v:.1f} s" for k, v in walk.timings.items())
        print(f"newcomer recipe: {time.monotonic() - started:.1f} s in all ({shown})")
