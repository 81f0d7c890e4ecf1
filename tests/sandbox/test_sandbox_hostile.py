"""Hostile code against both backends. Each case asserts that the attack failed, that a normal
execution still works afterwards and that no container or process is left. Timings are
measured and printed in the terminal summary, never asserted."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import SMALL, assert_clean, assert_still_works, record_timing

from codegen.sandbox import Symlink, open_sandbox
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import cgroup
from codegen.sandbox.protocol import max_result_bytes
from codegen.sandbox.types import ExecResult


def attack(sb: Sandbox, case: str, code: str, files: dict | None = None) -> ExecResult:
    started = time.perf_counter()
    result = sb.run({"attack.py": code, **(files or {})}, ["python3", "attack.py"], SMALL)
    record_timing(sb.backend, case, time.perf_counter() - started, SMALL.timeout_s)
    return result


@pytest.fixture
def sb(sb: Sandbox) -> Iterator[Sandbox]:
    """The conftest's sandbox, checked after every case: still works, nothing left."""
    yield sb
    assert_still_works(sb)
    assert_clean(sb)


def test_fork_bomb(sb: Sandbox) -> None:
    code = (
        "import os, time\n"
        "while True:\n"
        "    try:\n        os.fork()\n"
        "    except OSError:\n        time.sleep(0.01)\n"
    )
    result = attack(sb, "fork bomb", code)
    assert result.timed_out or result.exit_code != 0


def test_memory_bomb(sb: Sandbox) -> None:
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(8 * 1024 * 1024))\n"
    result = attack(sb, "memory bomb", code)
    assert result.exit_code != 0 and not result.timed_out
    # Docker: the cgroup OOM killer; bubblewrap: RLIMIT_AS makes the allocation fail.
    assert result.oom_killed or "MemoryError" in result.stderr, result


EIGHT_CHILDREN = """
import os, time
children = []
for _ in range(8):  # 8 x 40 MB, each far under the 128 MB limit, together far over it
    pid = os.fork()
    if pid == 0:
        block = bytearray(40 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(0.5)
        os._exit(0)
    children.append(pid)
ends = [os.waitpid(pid, 0)[1] for pid in children]
print(sum(os.WIFSIGNALED(end) and os.WTERMSIG(end) == 9 for end in ends))
"""


def test_eight_children_over_the_jobs_memory_are_killed_as_in_one_container(sb: Sandbox) -> None:
    where = cgroup.place()
    if sb.backend != "docker" and isinstance(where, str):
        pytest.skip(f"no memory cgroup for bubblewrap on this host: {where}")
    result = attack(sb, "8 children over memory", EIGHT_CHILDREN)
    assert result.oom_killed and int(result.stdout) >= 1, result
    assert result.memory_limit.startswith(f"{SMALL.memory_mb} MB for the whole job (")
    honest = "block = bytearray(60 << 20)\nblock[::4096] = b'x' * len(block[::4096])\nprint('ok')\n"
    fits = attack(sb, "one process under memory", honest)
    assert fits.stdout == "ok\n" and not fits.oom_killed, fits


def test_cpu_spin_past_the_timeout(sb: Sandbox) -> None:
    result = attack(sb, "cpu spin", "while True:\n    pass\n")
    assert result.timed_out or result.exit_code in (-9, -24)  # SIGKILL, or SIGXCPU (rlimit)
    assert result.exit_code != 0


def test_sleep_past_the_timeout(sb: Sandbox) -> None:
    result = attack(sb, "sleep", "import time\ntime.sleep(60)\n")
    assert result.timed_out and result.exit_code is None


def test_double_forked_setsid_child_is_gone_when_run_returns(sb: Sandbox) -> None:
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            time.sleep(0.05)\n"
        "    os._exit(0)\n"
        "print('parent exits')\n"
    )
    result = attack(sb, "setsid daemon", code)
    assert result.exit_code == 0 and result.stdout == "parent exits\n"
    assert_clean(sb)  # right now, not eventually


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A real TCP server on all host interfaces; the sandbox must never reach it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    accepted: list[str] = []

    def serve() -> None:
        while True:
            try:
                conn, addr = server.accept()
            except OSError:
                return
            accepted.append(addr[0])
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()


def _host_addresses() -> list[str]:
    addrs = {"127.0.0.1"}
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("203.0.113.1", 9))  # UDP connect sends nothing; it picks a route
        addrs.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    try:
        import docker

        client = docker.from_env(timeout=10)
        gateway = client.api.inspect_network("bridge")["IPAM"]["Config"][0]["Gateway"]
        addrs.add(gateway)
        client.close()
    except Exception:
        addrs.add("172.17.0.1")
    return sorted(addrs)


def test_network_host_bridge_internet_and_dns_are_unreachable(
    sb: Sandbox, listener: tuple[int, list[str]]
) -> None:
    port, accepted = listener
    targets = [(a, port) for a in _host_addresses()] + [("1.1.1.1", 53), ("8.8.8.8", 443)]
    # The control: from the host the listener answers on every one of its addresses.
    for addr, p in targets[:-2]:
        with socket.create_connection((addr, p), timeout=2):
            pass
    control = len(targets) - 2
    for _ in range(100):
        if len(accepted) >= control:
            break
        time.sleep(0.02)
    assert len(accepted) == control
    code = (
        "import json, socket\n"
        f"targets = {targets!r}\n"
        "out = {}\n"
        "for host, port in targets:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=1).close()\n"
        "        out[f'{host}:{port}'] = 'CONNECTED'\n"
        "    except OSError as exc:\n"
        "        out[f'{host}:{port}'] = type(exc).__name__\n"
        "try:\n"
        "    out['dns'] = str(socket.getaddrinfo('deb.debian.org', 80)[0][4])\n"
        "except OSError as exc:\n"
        "    out['dns'] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    result = attack(sb, "network + dns", code)
    seen = json.loads(result.stdout)
    assert "CONNECTED" not in seen.values(), seen
    assert seen["dns"] in ("gaierror", "OSError"), seen
    time.sleep(0.2)
    assert len(accepted) == control, "the sandbox reached the host listener"


def test_host_secrets_are_absent(sb: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("GITHUB_TOKEN", canary)
    code = (
        "import os\n"
        "print(dict(os.environ))\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "        except OSError as exc:\n"
        "            print(pid, type(exc).__name__)\n"
    )
    # Pooled sandboxes predate the variables; a fresh one proves that starting copies nothing.
    target = open_sandbox(sb.backend, isolation="strict", default_limits=SMALL)
    try:
        result = attack(target, "secrets in env", code)
    finally:
        target.close()
    assert result.exit_code == 0, result
    assert canary not in result.stdout + result.stderr
    assert "OPENAI_API_KEY" not in result.stdout and "GITHUB_TOKEN" not in result.stdout


@pytest.fixture
def host_canary() -> Iterator[Path]:
    path = Path("/tmp") / f"codegen-canary-{uuid.uuid4().hex}"
    path.write_text("HOST-SECRET-CONTENT\n")
    os.chmod(path, 0o644)  # readable by anyone on the host: only isolation protects it
    yield path
    path.unlink()


def test_host_file_by_absolute_path_and_through_links(sb: Sandbox, host_canary: Path) -> None:
    code = (
        "import os\n"
        f"paths = [{str(host_canary)!r}, 'runtime-link']\n"
        f"os.symlink({str(host_canary)!r}, 'runtime-link')\n"
        "for p in paths:\n"
        "    try:\n"
        "        print(p, open(p).read().strip())\n"
        "    except OSError as exc:\n"
        "        print(p, type(exc).__name__)\n"
    )
    result = attack(sb, "host file read", code)
    assert "HOST-SECRET-CONTENT" not in result.stdout, result.stdout
    assert f"{host_canary} FileNotFoundError" in result.stdout
    assert "runtime-link FileNotFoundError" in result.stdout


def test_copied_in_links_are_kept_and_lead_nowhere_on_the_host(
    sb: Sandbox, host_canary: Path
) -> None:
    """Links in the copied-in dir arrive as links, verbatim; none reaches a host file."""
    links = {
        "secret": str(host_canary),  # absolute, to a host file readable by anyone
        "outside": "../../../../../.." + str(host_canary),  # relative, climbing out
        "root": "/",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self": "self",
        "inside": "pkg/data.txt",
    }
    code = (
        "import json, os\n"
        f"names = {sorted(links)!r}\n"
        f"via_root = 'root' + {str(host_canary)!r}\n"
        "out = {}\n"
        "for name in [*names, via_root]:\n"
        "    try:\n"
        "        out[name] = [os.readlink(name) if os.path.islink(name) else None,"
        " open(name).read()]\n"
        "    except OSError as exc:\n"
        "        out[name] = [os.readlink(name) if os.path.islink(name) else None,"
        " type(exc).__name__ + ':' + str(exc.errno)]\n"
        "print(json.dumps(out))\n"
    )
    files = {name: Symlink(target) for name, target in links.items()}
    files["pkg/data.txt"] = "INSIDE-CONTENT\n"
    result = attack(sb, "copied-in links", code, files)
    assert result.exit_code == 0, result
    assert "HOST-SECRET-CONTENT" not in result.stdout + result.stderr
    seen = json.loads(result.stdout)
    for name, target in links.items():
        assert seen[name][0] == target, (name, seen[name])  # copied as a link, not followed
    assert seen["secret"][1] == "FileNotFoundError:2"
    assert seen["outside"][1] == "FileNotFoundError:2"
    assert seen["root" + str(host_canary)][1] == "FileNotFoundError:2"
    assert seen["root"][1].startswith("IsADirectoryError")  # the sandbox's own root
    for loop in ("loop_a", "loop_b", "self"):
        assert seen[loop][1] == "OSError:40", seen[loop]  # ELOOP
    assert seen["inside"][1] == "INSIDE-CONTENT\n"


def test_writing_outside_the_work_dir(sb: Sandbox) -> None:
    name = f"codegen-escape-{uuid.uuid4().hex}"
    targets = [f"/{name}", f"/etc/{name}", f"/usr/{name}", f"/var/{name}", f"/root/{name}"]
    code = (
        f"targets = {targets!r}\n"
        "for t in targets:\n"
        "    try:\n"
        "        open(t, 'w').write('x')\n"
        "        print(t, 'WROTE')\n"
        "    except OSError as exc:\n"
        "        print(t, type(exc).__name__)\n"
    )
    result = attack(sb, "write outside", code)
    assert "WROTE" not in result.stdout, result.stdout
    assert len(result.stdout.splitlines()) == len(targets)
    for target in targets:
        assert not os.path.exists(target)  # and nothing landed on the host either


def test_filling_the_disk(sb: Sandbox) -> None:
    code = (
        "import errno\n"
        "written = 0\n"
        "try:\n"
        "    with open('fill.bin', 'wb') as fh:\n"
        "        while True:\n"
        "            fh.write(b'\\0' * (1 << 20))\n"
        "            written += 1\n"
        "except OSError as exc:\n"
        "    print('stopped', errno.errorcode.get(exc.errno), written)\n"
    )
    result = attack(sb, "fill disk", code)
    assert result.stdout.startswith("stopped"), result
    reason, written = result.stdout.split()[1:]
    assert reason in ("ENOSPC", "EFBIG") and int(written) <= SMALL.workdir_mb


def test_stdout_flood_is_capped_while_streaming(sb: Sandbox) -> None:
    code = (
        "import sys\n"
        "chunk = b'x' * (1 << 20)\n"
        "for _ in range(100):\n"
        "    sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.flush()\n"
        "print('done', file=sys.stderr)\n"
    )
    result = attack(sb, "100 MB stdout flood", code)
    assert result.exit_code == 0, result.stderr
    assert result.truncated
    assert len(result.stdout) == SMALL.max_output_bytes
    assert result.stderr == "done\n"  # the flood was drained to the end, not cut short


def test_control_characters_to_the_cap_come_back_exactly_in_a_result_of_4_3_their_size(
    sb: Sandbox,
) -> None:
    # In JSON each one was six bytes: a 20 MiB cap let one result take 240 MiB of the host.
    code = "import os\nfor _ in range(4):\n    os.write(1, bytes(range(32)) * 8192)\n"
    result = attack(sb, "control character flood", code)
    assert result.truncated and result.stdout == "".join(map(chr, range(32))) * 6250
    assert max_result_bytes(SMALL) < 3 * SMALL.max_output_bytes


@pytest.mark.parametrize("target", ["1", "-1"])
def test_kill_pid_1_and_everything(sb: Sandbox, target: str) -> None:
    code = f"import os, signal, time\nos.kill({target}, signal.SIGKILL)\ntime.sleep(0.5)\n"
    result = attack(sb, f"kill -9 {target}", code)
    # kill -9 1 is ignored (init); kill -9 -1 may take the runner down: either way the host
    # gets an answer, and the fixture proves the sandbox is clean and still works.
    assert result.exit_code is not None or result.stderr.startswith("sandbox:")
