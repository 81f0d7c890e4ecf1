"""Both backends, real: results, pytest reports from JUnit XML, threads, the reset guarantee."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

import pytest
from sandbox_support import ROOMY, assert_clean

from codegen.sandbox import Symlink, UnsafePathError
from codegen.sandbox.api import Sandbox

SOLUTION = "def add(a, b):\n    return a + b\n"
TESTS_10 = "from solution import add\n\n" + "".join(
    f"def test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n\n" for i in range(10)
)


def test_run_returns_exit_code_streams_and_files(sb: Sandbox) -> None:
    files = {
        "main.py": "import sys, helper\nprint(helper.X)\nprint('oops', file=sys.stderr)\n"
        "sys.exit(3)\n",
        "helper.py": "X = open('data/in.txt').read().strip()\n",
        "data/in.txt": b"from a file\n",
        "alias.py": Symlink("helper.py"),
    }
    result = sb.run(files, ["python3", "main.py"])
    assert result.exit_code == 3
    assert result.stdout == "from a file\n"
    assert result.stderr == "oops\n"
    assert not result.timed_out and not result.truncated and not result.oom_killed
    assert result.backend == sb.backend
    link = sb.run(files, ["python3", "-c", "import os; print(os.readlink('alias.py'))"])
    assert link.stdout == "helper.py\n"


def test_unsafe_paths_are_refused_before_running(sb: Sandbox) -> None:
    with pytest.raises(UnsafePathError):
        sb.run({"../escape.py": "x"}, ["true"])
    with pytest.raises(ValueError):
        sb.run({}, [])
    with pytest.raises(ValueError, match="positive"):
        sb.run({}, ["true"], dataclasses.replace(ROOMY, timeout_s=0))


def test_missing_program_is_a_result_not_a_crash(sb: Sandbox) -> None:
    result = sb.run({}, ["no-such-program"])
    assert result.exit_code == 127
    assert "cannot execute" in result.stderr


def test_run_pytest_reports_each_test_from_junit(sb: Sandbox) -> None:
    tests = (
        "import pytest\nfrom solution import add\n\n"
        "def test_ok():\n    assert add(1, 2) == 3\n\n"
        "def test_wrong():\n    assert add(1, 2) == 4, 'sums differ'\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n\n"
        "class TestGroup:\n    def test_in_class(self):\n        assert add(0, 0) == 0\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture boom')\n\n"
        "def test_error(broken):\n    pass\n"
    )
    report = sb.run_pytest(SOLUTION, tests, ROOMY)
    outcomes = {t.name: t.outcome for t in report.tests}
    assert outcomes == {
        "test_solution.py::test_ok": "passed",
        "test_solution.py::test_wrong": "failed",
        "test_solution.py::test_skip": "skipped",
        "test_solution.py::TestGroup::test_in_class": "passed",
        "test_solution.py::test_error": "error",
    }
    wrong = next(t for t in report.tests if t.name.endswith("test_wrong"))
    assert "sums differ" in wrong.message
    assert "assert 3 == 4" in wrong.details
    assert (report.total, report.passed, report.failed) == (5, 2, 2)
    assert not report.ok and not report.collection_errors
    assert report.exec_result is not None and report.exec_result.exit_code == 1


def test_run_pytest_all_pass_and_collection_errors(sb: Sandbox) -> None:
    report = sb.run_pytest(SOLUTION, TESTS_10, ROOMY)
    assert report.ok and report.passed == 10
    broken = sb.run_pytest("def add(a, b) return a\n", TESTS_10, ROOMY)
    assert not broken.ok and broken.total == 0
    assert broken.collection_errors and "SyntaxError" in broken.collection_errors[0]


def test_run_pytest_timeout_gives_no_report_but_a_reason(sb: Sandbox) -> None:
    slow = "import time\ndef add(a, b):\n    time.sleep(30)\n"
    report = sb.run_pytest(slow, TESTS_10, dataclasses.replace(ROOMY, timeout_s=1.5))
    assert report.exec_result is not None and report.exec_result.timed_out
    assert not report.ok and "timed out" in report.collection_errors[0]


def test_threads_share_one_sandbox(sb: Sandbox) -> None:
    def job(i: int) -> str:
        return sb.run({"n.py": f"print({i} * {i})\n"}, ["python3", "n.py"]).stdout

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(job, range(12)))
    assert outputs == [f"{i * i}\n" for i in range(12)]


def test_nothing_survives_from_one_execution_to_the_next(sb: Sandbox) -> None:
    plant = (
        "import os, subprocess, ctypes\n"
        "open('left.txt', 'w').write('x')\n"
        "open('/tmp/left.txt', 'w').write('x')\n"
        "os.makedirs('locked/inner'); os.chmod('locked', 0)\n"
        "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "libc = ctypes.CDLL(None)\n"
        "print(libc.shmget(0x1234, 4096, 0o1600))\n"  # IPC_CREAT | 0600
        "os.environ['PLANTED'] = '1'\n"
    )
    planted = sb.run({"plant.py": plant}, ["python3", "plant.py"])
    assert planted.exit_code == 0, planted
    probe = (
        "import os\n"
        "print(sorted(os.listdir('.')), sorted(os.listdir('/tmp')))\n"
        "print([open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[0].decode()\n"
        "       for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()])\n"
        "print(open('/proc/sysvipc/shm').read().count('\\n') - 1)\n"
        "print('PLANTED' in os.environ)\n"
    )
    for _ in range(3):  # every pooled container must be clean, whichever one we get
        seen = sb.run({"probe.py": probe}, ["python3", "probe.py"])
        lines = seen.stdout.splitlines()
        assert lines[0] == "['probe.py'] []", seen
        # Only the sandbox's own processes (PID 1 and the runner); the sleep is gone.
        assert "sleep" not in lines[1] and lines[1].count("'") <= 4, lines[1]
        assert lines[2] == "0" and lines[3] == "False"
    assert_clean(sb)


def test_strict_isolation_uses_a_fresh_sandbox(sb: Sandbox) -> None:
    from codegen.sandbox import open_sandbox

    strict = open_sandbox(sb.backend, isolation="strict")
    probe = ["python3", "-c", "import os; print(os.stat('/proc/1').st_ctime_ns)"]
    try:
        pid1_start_times = {strict.run({}, probe).stdout.strip() for _ in range(2)}
    finally:
        strict.close()
    assert len(pid1_start_times) == 2
    assert_clean(sb)


@pytest.mark.docker
def test_leftover_containers_of_a_dead_process_are_removed(docker_sandbox: Sandbox) -> None:
    from codegen.sandbox.backends.docker import LABEL, OWNER_LABEL, reap_leftovers

    api = docker_sandbox.client.api  # type: ignore[attr-defined]
    import socket

    dead = f"{socket.gethostname()}:999999:0"
    cid = api.create_container(
        docker_sandbox.image,  # type: ignore[attr-defined]
        command=["true"],
        labels={LABEL: "1", OWNER_LABEL: dead},
    )["Id"]
    assert reap_leftovers(docker_sandbox.client) >= 1  # type: ignore[attr-defined]
    assert not api.containers(all=True, filters={"id": cid})


@pytest.mark.docker
def test_a_container_created_but_never_started_is_removed_once_abandoned(
    docker_sandbox: Sandbox,
) -> None:
    """A run container killed between create and start leaves its sandbox container
    created on a host nobody else is: the reaper removes it once no creator can still start
    it, and not before."""
    from codegen.sandbox.backends.docker import LABEL, OWNER_LABEL, reap_leftovers

    client = docker_sandbox.client  # type: ignore[attr-defined]
    cid = client.api.create_container(
        docker_sandbox.image,  # type: ignore[attr-defined]
        command=["true"],
        labels={LABEL: "1", OWNER_LABEL: "a-killed-run-container:1:0"},
    )["Id"]
    try:
        reap_leftovers(client)  # fresh, and another host's: left alone
        assert client.api.containers(all=True, filters={"id": cid})
        # Older than a short bound, not -1: another test's container, between its create and
        # its start right now, must not count as abandoned.
        time.sleep(6)
        reap_leftovers(client, abandoned_after_s=5.0)
        assert not client.api.containers(all=True, filters={"id": cid})
    finally:
        if client.api.containers(all=True, filters={"id": cid}):  # a failed assertion above
            client.api.remove_container(cid, force=True)


def test_unknown_backend_is_a_clear_error() -> None:
    from codegen.sandbox import SandboxUnavailable, open_sandbox

    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend"):
        open_sandbox("podman")


@pytest.mark.docker
def test_unknown_image_is_a_clear_error() -> None:
    from codegen.sandbox import SandboxUnavailable, open_sandbox

    with pytest.raises(SandboxUnavailable, match="not found; build it") as info:
        open_sandbox("docker", image="multiagent-codegen-sandbox:does-not-exist")
    assert "\n" not in str(info.value)


CRASHER = """
import json, sys, time
from codegen.sandbox import open_sandbox
sb = open_sandbox(sys.argv[1], pool_size=2)
sb.run({}, ["true"])
if sb.backend == "docker":
    print(json.dumps([box.cid for box in sb._idle]))
else:
    print(json.dumps([box.proc.pid for box in sb._idle]))
sys.stdout.flush()
time.sleep(600)
"""


def test_a_crashed_owner_leaves_nothing_behind(sb: Sandbox) -> None:
    """SIGKILL the owning process: its containers remove themselves (stdin closes, the
    supervisor exits, auto-remove), its bwrap sandboxes die with their parent thread."""
    import json
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER, sb.backend], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        handles = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert handles, "the crasher started no sandbox"

    def left() -> list[object]:
        if sb.backend == "docker":
            api = sb.client.api  # type: ignore[attr-defined]
            return [c for c in handles if api.containers(all=True, filters={"id": c})]
        return [pid for pid in handles if _alive_bwrap(pid)]

    for _ in range(300):  # a bounded wait for the kernel and the daemon, not a timing claim
        if not left():
            break
        time.sleep(0.1)
    assert not left(), f"left behind by a crashed owner: {left()}"


def _alive_bwrap(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return state not in ("Z", "X") and b"bwrap" in fh.read()
    except OSError:
        return False


def test_unsafe_host_only_by_name_and_still_limited() -> None:
    """The opt-in bare-host mode: named unsafe, fresh per execution, timeout and rlimits."""
    from codegen.sandbox import open_sandbox

    with open_sandbox(
        "bwrap", allow_unsafe_host=True, default_limits=dataclasses.replace(ROOMY, timeout_s=1.5)
    ) as box:
        if box.backend != "unsafe-host":  # bwrap works here, so it is never chosen
            assert box.backend == "bwrap"
            from codegen.sandbox.backends.bwrap import BwrapSandbox

            box = BwrapSandbox(unsafe_host=True, default_limits=box.default_limits)
        ok = box.run({"a.py": "import os; print(os.path.exists('a.py'))"}, ["python3", "a.py"])
        assert ok.exit_code == 0 and ok.stdout == "True\n" and ok.backend == "unsafe-host"
        slow = box.run({}, ["python3", "-c", "import time; time.sleep(30)"])
        assert slow.timed_out
        # Its work dir is on the host, so a link there could reach host files: refused.
        for target in ("/etc/passwd", "../outside"):
            with pytest.raises(UnsafePathError, match=r"absolute|outside"):
                box.run({"leak": Symlink(target)}, ["cat", "leak"])
        box.close()
