"""Load and faults against a running docker deployment: many requests at once, then kills.

Requests arrive two ways at the same time: ``codegen generate`` in one-off containers of the
code service (``docker-compose run``: the service's image, volumes, network and instance) and
files dropped into ``$CODEGEN_HOME/inbox``. While they run, the driver can SIGKILL the daemon's
container and start it again, and SIGKILL one run's container (run monitoring marks that run
failed; the instance's run retries launch it again). Throughout, it samples the run queue over
GraphQL. The outcome names every request with its report and its runs, so a caller can check
that none was lost or run twice. Used by ``tests/deploy/test_load_and_faults.py`` and
``benchmarks/deploy_load.py``.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from codegen.deploy.images import DeployError
from codegen.deploy.load_records import (
    EVENTS_QUERY,
    RUNS_QUERY,
    CliOutcome,
    EventsData,
    Fault,
    GenerateSummary,
    LoadResult,
    QueueSample,
    RequestOutcome,
    RequestReport,
    Run,
    RunsData,
)
from codegen.deploy.stack import Stack

FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}
IN_FLIGHT = {"STARTING", "STARTED", "CANCELING"}
SANDBOX_LABEL = "multiagent-codegen.sandbox"
SANDBOX_OWNER_LABEL = "multiagent-codegen.sandbox.owner"


def _tags(run: Run) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def _docker(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise DeployError(f"docker {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


class LoadDriver:
    """Submits requests to ``stack`` whose CODEGEN_HOME the host sees at ``home``."""

    def __init__(self, stack: Stack, home: Path) -> None:
        self.stack, self.home = stack, home
        self.samples: list[QueueSample] = []
        self.faults: list[Fault] = []
        self.hosts: set[str] = set()  # hostnames of every container a request ran in
        self._cli: list[tuple[subprocess.Popen[str], str]] = []
        self._inbox_names: list[str] = []
        self._t0 = time.monotonic()
        # Requests the deployment already held (another test's, an earlier load's): neither
        # counted as this load's reports nor reported as strays.
        self._earlier = set(self._all_reports())

    # -- submitting -------------------------------------------------------------------------
    def submit_cli(self, text: str) -> None:
        cmd = self.stack.compose_command("run", "--rm", "--no-deps", "-T", "code")
        proc = subprocess.Popen(
            [*cmd, "codegen", "generate", text, "--json"],
            env=self.stack.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._cli.append((proc, text))

    def abandon_cli(self) -> None:
        """Stop the CLI clients still waiting (a load that failed midway must not leave them
        polling; the stack's teardown removes their containers)."""
        for proc, _ in self._cli:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def drop_inbox(self, name: str, text: str) -> None:
        inbox = self.home / "inbox"
        inbox.mkdir(parents=True, exist_ok=True)
        partial = inbox / f"{name}.part"  # the inbox leaves *.part alone until the rename
        partial.write_text(text)
        partial.rename(inbox / name)
        self._inbox_names.append(name)

    # -- observing --------------------------------------------------------------------------
    def runs(self) -> list[Run]:
        data = cast(RunsData, self.stack.graphql(RUNS_QUERY))["runsOrError"]
        if data["__typename"] != "Runs":
            raise DeployError(f"runs query failed: {data}")
        return [r for r in data["results"] if r["jobName"] != "__ASSET_JOB"]

    def sample(self) -> list[Run]:
        runs = self.runs()
        self.samples.append(
            QueueSample(
                t=round(time.monotonic() - self._t0, 1),
                queued=sum(r["status"] == "QUEUED" for r in runs),
                in_flight=sum(r["status"] in IN_FLIGHT for r in runs),
            )
        )
        for run in runs:
            cid = _tags(run).get("docker/container_id")
            if cid:
                self.hosts.add(cid[:12])  # a container's hostname is its short id
        project = self.stack.setting("COMPOSE_PROJECT_NAME")
        oneoffs = _docker(
            "ps", "-q", "--filter", f"label=com.docker.compose.project={project}",
            "--filter", "label=com.docker.compose.oneoff=True", check=False,
        )  # fmt: skip
        self.hosts.update(oneoffs.split())
        return runs

    def reports(self) -> dict[str, RequestReport]:
        """report.json of each request made since this driver started, by request id."""
        return {k: v for k, v in self._all_reports().items() if k not in self._earlier}

    def _all_reports(self) -> dict[str, RequestReport]:
        out = {}
        for path in (self.home / "artifacts").glob("*/report.json"):
            try:
                report = json.loads(path.read_text())
            except ValueError:
                continue  # being written
            if isinstance(report, dict):
                out[path.parent.name] = cast(RequestReport, report)
        return out

    def wait(
        self,
        until: Callable[[list[Run]], bool],
        timeout_s: float,
        what: str,
        interval_s: float = 1.0,
    ) -> list[Run]:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                runs = self.sample()
            except Exception:  # the webserver may be busy; the next sample counts
                runs = []
            if runs and until(runs):
                return runs
            if time.monotonic() > deadline:
                raise DeployError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            time.sleep(interval_s)

    # -- faults -----------------------------------------------------------------------------
    def kill_daemon(self, down_s: float = 5.0) -> None:
        """SIGKILL the daemon's container (no chance to clean up), then start it again."""
        cid = self.stack.container_id("daemon")
        _docker("kill", "--signal", "KILL", cid)
        self.faults.append(Fault(fault="daemon SIGKILL", t=self._elapsed()))
        time.sleep(down_s)
        if _docker("inspect", "-f", "{{.State.Running}}", cid) != "true":
            _docker("start", cid)
        self.faults.append(Fault(fault="daemon restarted", t=self._elapsed()))

    def kill_run_container(self, run: Run) -> None:
        cid = _tags(run)["docker/container_id"]
        _docker("kill", "--signal", "KILL", cid)
        self.faults.append(
            Fault(fault="run container SIGKILL", t=self._elapsed(), run_id=run["runId"])
        )

    def _elapsed(self) -> float:
        return round(time.monotonic() - self._t0, 1)

    # -- results ----------------------------------------------------------------------------
    def finish(self, timeout_s: float) -> list[CliOutcome]:
        """Waits for every CLI process: (exit status, its JSON summary or None, stderr)."""
        out = []
        for proc, _ in self._cli:
            try:
                stdout, stderr = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            try:
                parsed = json.loads(stdout) if stdout.strip() else None
            except ValueError:
                parsed = None
            summary = cast(GenerateSummary, parsed) if isinstance(parsed, dict) else None
            out.append(CliOutcome(proc.returncode, summary, stderr[-2000:]))
        return out

    def unretried_failures(self, runs: list[Run]) -> dict[str, list[str]]:
        parents = {_tags(r).get("dagster/parent_run_id") for r in runs}
        out: dict[str, list[str]] = {}
        for run in runs:
            if run["status"] == "FAILURE" and run["runId"] not in parents:
                try:
                    answer = self.stack.graphql(EVENTS_QUERY, {"runId": run["runId"]})
                    data = cast(EventsData, answer)["logsForRun"]
                    events = [e.get("message", "") for e in data.get("events", [])]
                except Exception as exc:  # diagnostics only
                    events = [f"(events unavailable: {exc})"]
                out[run["runId"]] = [e for e in events if e][-15:]
        if out:
            try:
                daemon = self.stack.container_id("daemon")
            except DeployError as exc:  # diagnostics must not hide the failure they explain
                out["daemon log"] = [f"(unavailable: {exc})"]
                return out
            logs = subprocess.run(
                ["docker", "logs", "--tail", "400", daemon], capture_output=True, text=True
            )
            lines = (logs.stdout + logs.stderr).splitlines()
            out["daemon log"] = [
                line
                for line in lines
                if any(w in line for w in ("etry", "Traceback", "rror", "cursor"))
            ][-30:]
        return out

    def result(self, cli: list[CliOutcome]) -> LoadResult:
        runs = self.runs()
        reports = self.reports()
        by_partition: dict[str, list[Run]] = {}
        for run in runs:
            part = _tags(run).get("dagster/partition")
            if part:
                by_partition.setdefault(part, []).append(run)
        outcomes = []
        processed = self.home / "inbox" / "processed"
        for name in self._inbox_names:
            hits = sorted(processed.glob(f"*__{name}"))
            rid = hits[0].name.split("__", 1)[0] if hits else f"(lost: {name})"
            outcomes.append(
                RequestOutcome(rid, "inbox", reports.get(rid), by_partition.get(rid, []))
            )
        for code, summary, _ in cli:
            rid = (summary or {}).get("request_id", "(no summary)")
            outcomes.append(
                RequestOutcome(rid, "cli", reports.get(rid), by_partition.get(rid, []), code)
            )
        return LoadResult(
            wall_s=time.monotonic() - self._t0,
            outcomes=outcomes,
            samples=self.samples,
            faults=self.faults,
            container_hosts=set(self.hosts),
            unretried=self.unretried_failures(runs),
            stray_reports=sorted(set(reports) - {o.request_id for o in outcomes}),
        )


def run_load(
    stack: Stack,
    home: Path,
    *,
    cli_requests: int = 10,
    inbox_requests: int = 20,
    faults: bool = True,
    timeout_s: float = 1200.0,
) -> tuple[LoadResult, list[CliOutcome]]:
    """Submit everything at once, inject the faults mid-way, wait until every request ends."""
    driver = LoadDriver(stack, home)
    total = cli_requests + inbox_requests
    for i in range(inbox_requests):
        driver.drop_inbox(f"load-{i:02d}.txt", f"Write primes_up_to(n), variant {i} (inbox).")
    for i in range(cli_requests):
        driver.submit_cli(f"Write primes_up_to(n), variant {i} (cli).")
    cli: list[CliOutcome] = []
    waiter = threading.Thread(target=lambda: cli.extend(driver.finish(timeout_s)), daemon=True)
    waiter.start()
    try:
        _inject_and_wait(driver, total, faults, timeout_s)
    except BaseException:
        driver.abandon_cli()
        raise
    waiter.join(timeout=timeout_s)
    return driver.result(cli), cli


def _inject_and_wait(driver: LoadDriver, total: int, faults: bool, timeout_s: float) -> None:
    """Inject the faults mid-way (when asked), then wait until every request has ended."""
    if faults:
        # One run's container dies while it works (after its run has started).
        runs = driver.wait(
            lambda rs: any(
                r["status"] == "STARTED" and "docker/container_id" in _tags(r) for r in rs
            ),
            timeout_s / 2,
            "a run started in a container",
        )
        victim = next(
            r for r in runs if r["status"] == "STARTED" and "docker/container_id" in _tags(r)
        )
        time.sleep(3)  # into its steps, past the container's start
        driver.kill_run_container(victim)
        # The daemon dies once a third of the requests have ended.
        driver.wait(
            lambda _: len(driver.reports()) >= total // 3, timeout_s / 2, "a third of the reports"
        )
        driver.kill_daemon()
    driver.wait(
        lambda rs: (
            len(driver.reports()) >= total and not any(r["status"] not in FINISHED for r in rs)
        ),
        timeout_s,
        f"all {total} reports and every run finished",
        interval_s=2.0,
    )


def leftover_containers(hosts: set[str], settle_s: float = 60.0) -> list[str]:
    """Containers of ``hosts`` (run and one-off containers) and sandbox containers they own
    that still exist once ``settle_s`` has passed: Docker removes an auto-removed container
    only after its process has exited, which can be seconds after Dagster records the run as
    finished, so a check made at once would race that removal."""
    deadline = time.monotonic() + settle_s
    while True:
        left = _containers_of(hosts)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1.0)


def _containers_of(hosts: set[str]) -> list[str]:
    sandboxes = _docker(
        "ps", "-a", "--filter", f"label={SANDBOX_LABEL}",
        "--format", f'{{{{.ID}}}} {{{{.Label "{SANDBOX_OWNER_LABEL}"}}}}',
    ).split("\n")  # fmt: skip
    owned = [
        line.split()[0]
        for line in sandboxes
        if len(line.split()) == 2 and line.split()[1].partition(":")[0] in hosts
    ]
    own = _docker("ps", "-aq", *[f"--filter=id={h}" for h in hosts]).split() if hosts else []
    return owned + own
