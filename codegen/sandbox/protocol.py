"""Host side of the supervisor's wire format (see ``codegen/sandbox/inside/supervisor.py``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Required, TypedDict

from codegen.sandbox.files import FileContent, FileEntry, encode_files
from codegen.sandbox.types import ExecResult, Limits

WORKDIR = "/work"
SANDBOX_UID = 10001
# The only environment a job sees: nothing is inherited from the host.
SANDBOX_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": WORKDIR,
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONHASHSEED": "0",
    # One BLAS/OpenMP thread (the job has one CPU): numpy's OpenBLAS otherwise starts a thread
    # per host core, each with its stack and buffers counted against the memory and pids
    # limits, so whether `import numpy` fits would depend on the machine's core count.
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# Room the result JSON may take beyond the captured output and files (base64, 4/3 of them).
RESULT_SLACK_BYTES = 64_000


class JobExtra(TypedDict, total=False):
    """What a backend (or a caller) adds to, or overrides in, one job message."""

    workdir: str  # where the job runs; the default is WORKDIR
    kill_scope: str  # "group": kill the job's process group only (no pid namespace)
    as_bytes: int  # RLIMIT_AS
    nproc: int  # RLIMIT_NPROC
    cpu_s: int  # RLIMIT_CPU
    collect: list[str]  # files to send back after the job
    max_collect_bytes: int


class Job(JobExtra, total=False):
    """The job message the supervisor reads (``supervisor.py``'s ``job``)."""

    files: Required[list[FileEntry]]
    command: Required[list[str]]
    env: Required[dict[str, str]]
    timeout_s: Required[float]
    max_output_bytes: Required[int]
    fsize_bytes: Required[int]
    nofile: Required[int]
    wipe: Required[list[str]]


@cache
def inside_source(name: str) -> str:
    """The text of ``name``, a file of ``sandbox/inside/`` (the code that runs in the box)."""
    return resources.files("codegen.sandbox").joinpath("inside", name).read_text("utf-8")


@cache
def kernel_fence() -> str:
    """What the file fence (``inside/fence.py``) gets from this machine's kernel: "landlock
    (ABI n)" or "none: <why>". Both backends run their jobs on the host's kernel, and Docker's
    default seccomp profile lets Landlock through (``tests/sandbox/test_fence.py`` checks the
    same answer inside each backend), so this is the fence their candidates get. The inside's
    own ``available()``, run from its source: the host never imports the inside."""
    namespace: dict[str, object] = {"__name__": "fence"}
    exec(compile(inside_source("fence.py"), "fence.py", "exec"), namespace)
    available = namespace["available"]
    assert callable(available)
    return str(available())


def supervisor_source() -> str:
    return inside_source("supervisor.py")


# A driver's command: -I less -E, so that the sandbox's own environment (SANDBOX_ENV, built
# from nothing on the host) takes effect, PYTHONHASHSEED=0 included: a set's order
# (``list(set(...))``), and so a test verdict, a call's output or a hidden-test verdict, is the
# same on every run. -s and -P keep the rest of -I (no user site; the script's directory off
# sys.path: the driver finds the shipped supervisor beside itself).
DRIVER_COMMAND = ["python3", "-s", "-P", "-B", "driver.py"]


def driver_files(module_file: str) -> dict[str, str]:
    """The files that run ``module_file`` of ``sandbox/inside/`` in the sandbox as
    ``driver.py``, with the supervisor beside it as ``supervisor.py`` (one copy of the process
    hygiene: non-dumpable, reaping, wiping, for the supervisor and every driver), the file
    fence as ``fence.py`` (what a driver's candidate process enters before its code runs) and
    ``program_run.py`` (one fenced run of a whole program: APPS's batches, the tests'
    ``program`` fixture)."""
    return {
        "driver.py": inside_source(module_file),
        "supervisor.py": supervisor_source(),
        "fence.py": inside_source("fence.py"),
        "program_run.py": inside_source("program_run.py"),
    }


def isolation_files(*, test_side: bool = True) -> dict[str, str]:
    """``isolation``'s modules for a driver's folder (``inside/isolation.py``: the candidate's
    side and the module the drivers import, with the wire, the value kinds and the codec it is
    built from), and with ``test_side`` the test side's end, ``handles.py`` (the drivers whose
    tests reach a candidate; ``call_driver`` only encodes values)."""
    names = ["isolation.py", "isolation_wire.py", "isolation_kinds.py", "isolation_codec.py"]
    if test_side:
        names.append("handles.py")
    return {name: inside_source(name) for name in names}


def supervisor_command(mode: str) -> list[str]:
    # -I: isolated mode, ignores PYTHON* variables and the user site directory.
    return ["python3", "-I", "-c", supervisor_source(), mode]


def encode_job(
    files: Mapping[str, FileContent],
    command: list[str],
    limits: Limits,
    *,
    wipe: list[str],
    extra: JobExtra | None = None,
    confine_links: bool = False,
) -> bytes:
    if not command or not all(isinstance(c, str) and c and "\x00" not in c for c in command):
        raise ValueError("command must be a non-empty list of non-empty strings")
    numbers = (limits.timeout_s, limits.memory_mb, limits.pids, limits.cpus, limits.workdir_mb)
    if min(numbers) <= 0 or limits.max_output_bytes <= 0:
        raise ValueError(f"limits must be positive: {limits}")
    job: Job = {
        "files": encode_files(files, limits.workdir_mb * 1024 * 1024, confine_links),
        "command": list(command),
        "env": dict(SANDBOX_ENV),
        "workdir": WORKDIR,
        "timeout_s": float(limits.timeout_s),
        "max_output_bytes": int(limits.max_output_bytes),
        "fsize_bytes": limits.workdir_mb * 1024 * 1024,
        "nofile": 256,
        "wipe": wipe,
    }
    job.update(extra or {})
    data = json.dumps(job).encode("utf-8")
    return b"JOB %d\n" % len(data) + data


def max_result_bytes(limits: Limits, collect_bytes: int = 0) -> int:
    """The most a result may take: both streams at their cap and ``collect_bytes`` of files,
    each in base64; the host's memory for one result is a small multiple of it."""
    return _base64_size(2 * limits.max_output_bytes + collect_bytes) + RESULT_SLACK_BYTES


def _base64_size(raw_bytes: int) -> int:
    return 4 * ((raw_bytes + 2) // 3) + 8


def collect_bytes(extra: JobExtra) -> int:
    """What a job's ``collect`` may send back: each file at most ``max_collect_bytes`` + 1."""
    return len(extra.get("collect", [])) * (int(extra.get("max_collect_bytes", 0)) + 1)


def decode_result(
    data: bytes, backend: str, duration_s: float
) -> tuple[ExecResult, bool, dict[str, bytes]]:
    """Returns the result, whether the sandbox verified its own reset, and collected files."""
    raw = json.loads(data)
    stdout = base64.b64decode(raw.pop("stdout_b64")).decode("utf-8", "replace")
    stderr = base64.b64decode(raw.pop("stderr_b64")).decode("utf-8", "replace")
    if raw.get("setup_error"):
        stderr = f"sandbox: {raw['setup_error']}\n" + stderr
    result = ExecResult(
        exit_code=raw["exit_code"],
        timed_out=bool(raw["timed_out"]),
        oom_killed=bool(raw["oom_killed"]),
        stdout=stdout,
        stderr=stderr,
        truncated=bool(raw["truncated"]),
        duration_s=round(duration_s, 4),
        backend=backend,
    )
    collected = {k: base64.b64decode(v) for k, v in (raw.get("collected") or {}).items()}
    return result, bool(raw.get("reset_ok")), collected


def lost_result(backend: str, duration_s: float, why: str, *, timed_out: bool) -> ExecResult:
    """The result when the supervisor itself did not answer (killed, OOM, deadline)."""
    return ExecResult(
        exit_code=None,
        timed_out=timed_out,
        oom_killed=False,
        stdout="",
        stderr=f"sandbox: {why}\n",
        truncated=False,
        duration_s=round(duration_s, 4),
        backend=backend,
    )


def split_result(buffer: bytes | bytearray) -> tuple[bytes | None, int]:
    """Find ``RESULT <n>\\n<payload>`` in ``buffer``; returns (payload or None, bytes needed)."""
    nl = buffer.find(b"\n")
    if nl < 0:
        if len(buffer) > 64:
            raise ValueError("malformed supervisor output")
        return None, 0
    head = buffer[:nl].split()
    if len(head) != 2 or head[0] != b"RESULT" or not head[1].isdigit():
        raise ValueError(f"malformed supervisor output: {buffer[:80]!r}")
    size = int(head[1])
    end = nl + 1 + size
    if len(buffer) < end:
        return None, end
    return bytes(buffer[nl + 1 : end]), end


def result_matcher() -> Callable[[bytearray], bytes | None]:
    """A reader callback that pops one ``RESULT`` payload off a growing buffer, or None.

    It remembers how many bytes the announced payload needs, so a large result is not
    re-parsed on every chunk that arrives.
    """
    need = 0

    def done(buf: bytearray) -> bytes | None:
        nonlocal need
        if len(buf) < need:
            return None
        payload, end = split_result(buf)
        if payload is None:
            need = end
            return None
        del buf[:end]
        return payload

    return done
