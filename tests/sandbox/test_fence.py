"""The file fence (``codegen/sandbox/inside/fence.py``) around a candidate's process, on this
host and in both backends: after ``enter(its folder)`` a process writes only its folder and
reads only what a program needs (not the test, the driver's folder, another sample's); and
drafts of a shared-input run (``call_functions``) never find each other's source or output, or
the driver's token, however they look: files, the stack, the garbage collector, /proc, their
own memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.sandbox import protocol
from codegen.sandbox.api import Sandbox
from codegen.sandbox.calls import call_function, call_functions
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files, inside_source

# Run as a script beside fence.py, in what stands for a driver's folder: it lays out the
# driver's files and another sample's, enters the fence around its own folder, then tries.
PROBE = r"""
import importlib.util, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import fence

mine, other = os.path.join(here, "mine"), os.path.join(here, "other-sample")
os.makedirs(mine)
os.makedirs(other)
with open(os.path.join(here, "test_solution.py"), "w") as fh:
    fh.write("def test_it(): pass\n")
with open(os.path.join(other, "solution.py"), "w") as fh:
    fh.write("def f(): return 1\n")
has_numpy = importlib.util.find_spec("numpy") is not None
os.chdir(mine)
report = {"fence": fence.enter(mine)}


def attempt(name, action):
    try:
        action()
        report[name] = "allowed"
    except Exception as exc:
        report[name] = "refused: " + type(exc).__name__


def write(path):
    with open(path, "w") as fh:
        fh.write("planted")


def read(path, mode="r"):
    with open(path, mode) as fh:
        return fh.read(16)


attempt("read the test", lambda: read(os.path.join(here, "test_solution.py")))
attempt("list the driver's folder", lambda: os.listdir(here))
attempt("read another sample", lambda: read(os.path.join(other, "solution.py")))
attempt("plant __init__.py beside the test", lambda: write(os.path.join(here, "__init__.py")))
attempt("plant a module in another sample", lambda: write(os.path.join(other, "json.py")))
attempt("write /tmp", lambda: write(f"/tmp/planted-{os.getpid()}"))
attempt("read another process", lambda: read(f"/proc/{os.getppid()}/cmdline"))
attempt("write its own folder", lambda: write(os.path.join(mine, "scratch.txt")))
attempt("read its own folder", lambda: read(os.path.join(mine, "scratch.txt")))
attempt("import json, decimal", lambda: (__import__("json"), __import__("decimal").Decimal(1)))
attempt("zoneinfo", lambda: __import__("zoneinfo").ZoneInfo("Europe/Paris"))
attempt("read /proc/self", lambda: read("/proc/self/status"))
attempt("read /dev/urandom", lambda: read("/dev/urandom", "rb"))
attempt("write /dev/null", lambda: write("/dev/null"))
attempt("read /etc/localtime", lambda: read("/etc/localtime", "rb"))
if has_numpy:
    attempt("import numpy", lambda: __import__("numpy").arange(3).sum())
print(json.dumps(report))
"""
REFUSED = (
    "read the test",
    "list the driver's folder",
    "read another sample",
    "plant __init__.py beside the test",
    "plant a module in another sample",
    "write /tmp",
    "read another process",
)
ALLOWED = (
    "write its own folder",
    "read its own folder",
    "import json, decimal",
    "zoneinfo",
    "read /proc/self",
    "read /dev/urandom",
    "write /dev/null",
    "read /etc/localtime",
)


def check_fenced(report: dict[str, str]) -> None:
    fence = protocol.kernel_fence()
    if not fence.startswith("landlock"):
        assert report["fence"] == fence  # nothing to enforce with: said so, nothing else
        pytest.skip(f"this kernel has no Landlock ({fence})")
    assert report["fence"] == fence, report
    assert {k: report[k] for k in REFUSED} == {k: "refused: PermissionError" for k in REFUSED}
    assert {k: report[k] for k in ALLOWED} == {k: "allowed" for k in ALLOWED}
    assert report.get("import numpy", "allowed") == "allowed"


def test_the_fence_on_this_host(tmp_path: Path) -> None:
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "fence.py").write_text(inside_source("fence.py"))
    (driver / "probe.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, "-s", "-B", "probe.py"],
        cwd=driver,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    check_fenced(json.loads(done.stdout.splitlines()[-1]))
    assert not (driver / "__init__.py").exists()


def test_the_fence_in_the_sandbox(sb: Sandbox) -> None:
    files = {"probe.py": PROBE, "fence.py": inside_source("fence.py")}
    result = sb.run(files, ["python3", "-s", "-P", "-B", "probe.py"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert "import numpy" in report  # the package set's site dir is readable
    check_fenced(report)


def test_every_driver_ships_the_fence() -> None:
    for driver in ("call_driver.py", "score_driver.py", "pytest_driver.py"):
        assert driver_files(driver)["fence.py"] == inside_source("fence.py")
    assert DRIVER_COMMAND[-1] == "driver.py"


TOKEN = "0f1e2d3c4b5a6978" * 2
# A draft with a source and an output another could copy; neither text appears whole in the
# snooping draft's own source (so it cannot find itself).
SIBLING = '# SIBLING_SOURCE_MARK9\ndef f(x):\n    return "SIBLING_OUTPUT_" + "MARK9"\n'
SNOOP = r'''
import ctypes, gc, os, sys

HEADS = {
    b"SIBLING_": (b"SOURCE_MARK9", b"OUTPUT_MARK9"),
    b"0f1e2d3c4b5a6978": (b"0f1e2d3c4b5a6978",),
}


def hits(data):
    found = set()
    for head, tails in HEADS.items():
        at = data.find(head)
        while at >= 0:
            if data[at + len(head) : at + len(head) + 16].startswith(tails):
                found.add(head.decode())
            at = data.find(head, at + 1)
    return found


def memory():
    """This process's own heap, as a draft with ctypes could read it."""
    found, scanned = set(), 0
    with open("/proc/self/maps") as fh:
        regions = [line.split() for line in fh.read().splitlines()]
    for parts in regions:
        if parts[1] != "rw-p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        start, end = (int(a, 16) for a in parts[0].split("-"))
        for at in range(start, end, 1 << 20):
            chunk = ctypes.string_at(at, min((1 << 20) + 32, end - at))
            scanned += len(chunk)
            found |= hits(chunk)
    return found, scanned


def values(value, depth=0):
    """Every str and bytes in a value, as bytes."""
    if depth > 6:
        return
    if isinstance(value, str):
        yield value.encode("utf-8", "replace")
    elif isinstance(value, bytes | bytearray):
        yield bytes(value)
    elif isinstance(value, dict):
        for item in value.items():
            yield from values(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from values(item, depth + 1)


def f(x):
    found, scanned = memory()
    where = {name: "memory" for name in found}
    frame = sys._getframe()
    while frame is not None:
        for data in values(dict(frame.f_locals)):
            where.update({name: "stack" for name in hits(data)})
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict | list | tuple):
            for data in values(obj, 5):
                where.update({name: "gc" for name in hits(data)})
    places = []
    for pid in (os.getppid(), 1):
        places += [f"/proc/{pid}/{name}" for name in ("cmdline", "environ")]
    for top in ("/work", "/tmp"):
        try:
            for root, _dirs, names in os.walk(top):
                places += [os.path.join(root, name) for name in names]
        except OSError:
            pass
    for path in places:
        try:
            with open(path, "rb") as fh:
                where.update({name: path for name in hits(fh.read())})
        except OSError:
            pass
    return [sorted(where.items()), scanned > 0, x]
'''


def without_landlock(name: str) -> str:
    """The inside's files as a kernel without Landlock would have them run."""
    source = inside_source(name)
    if name == "fence.py":
        source = source.replace("def _abi():\n", 'def _abi():\n    return None, "off"\n', 1)
    return source


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "no-landlock"])
def test_a_draft_finds_neither_its_siblings_nor_the_token(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch, fenced: bool
) -> None:
    # Without the fence the drafts still never share memory: each is a child of a zygote
    # forked before the job was read, sent its own source alone.
    monkeypatch.setattr("codegen.sandbox.calls.secrets.token_hex", lambda _n: TOKEN)
    if not fenced:
        monkeypatch.setattr(protocol, "inside_source", without_landlock)
    got = call_functions(sb, [SIBLING, SNOOP, SIBLING], "f", [[1]], 5.0)
    assert [row[0].value for row in got[::2]] == ["SIBLING_OUTPUT_MARK9"] * 2
    assert got[1][0].status == "ok", got[1][0].error
    found, scanned, _ = got[1][0].value  # type: ignore[misc]
    assert scanned, "the draft could not read its own memory: the check proves nothing"
    assert found == []


LOOKS_UP = """
import os

def f(x):
    return sorted(os.listdir(".."))
"""


def test_a_single_module_run_is_fenced_too(sb: Sandbox) -> None:
    [outcome] = call_function(sb, LOOKS_UP, "f", [[1]], 5.0)
    if protocol.kernel_fence().startswith("landlock"):
        assert outcome.error.startswith("PermissionError"), outcome
    else:
        shipped = {**driver_files("call_driver.py"), **protocol.isolation_files(test_side=False)}
        assert outcome.value == sorted(["candidate", *shipped])
