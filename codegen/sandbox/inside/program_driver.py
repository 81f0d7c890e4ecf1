"""Runs inside the sandbox (standard library only, the image's python3): run a batch of whole
programs (APPS: stdin in, stdout out) on a task's inputs and judge each run. Shipped as a file
by ``codegen.evaluation.apps`` with the supervisor and ``fence`` beside it; never imported on
the host.

Each program runs as a plain run does: ``python3 prog.py`` as a fresh process, the input text
on its stdin (then closed: a program that waits for more reads end of file), stdout and stderr
read by the driver with a cap each, killed (its whole session) at the time limit or when its
stdout passes the cap. Before it executes, the child enters the file fence
(``fence.enter``: it may write only its sample's scratch folder). The driver compares the
output with the expected text (trailing whitespace of each line and of the whole output
ignored) and writes the verdict; the program never sees the expected output, the token or
another sample's source: the driver read and removed its files before the first program ran,
each program is exec'ed (nothing of the driver's memory survives), each sample has a fresh
scratch folder of a random name, removed with every process of it before the next sample.

Per sample, one line under the batch token: the category of its first failing input (or
``passed``), the outcome of each input run (a sample stops at its first failing input), the
fence, and the time limit that applied.
"""

import contextlib
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
import fence  # noqa: E402
from supervisor import _ancestors, _clear_sample, _kill_leftovers, _non_dumpable, _take  # noqa: E402

sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]
MAX_FENCE_TEXT = 300
MAX_STDERR_BYTES = 8192
PROGRAM = "prog.py"


def normalised(text):
    """The text as compared: each line's trailing whitespace, then trailing blank lines, gone."""
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def _child(scratch, stdin_r, stdout_w, stderr_w, fence_w, memory_bytes):
    """In the forked child: own session, memory limit, stdio on the pipes, the fence, then the
    program. Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        for fd, target in ((stdin_r, 0), (stdout_w, 1), (stderr_w, 2)):
            os.dup2(fd, target)
        os.closerange(3, fence_w)
        os.closerange(fence_w + 1, 65536)
        os.chdir(scratch)
        try:
            said = str(fence.enter(scratch))
        except Exception as exc:  # it then runs unfenced, and the verdict says so
            said = f"none: the fence failed: {type(exc).__name__}: {exc}"
        data = said.encode("utf-8", "replace")[:MAX_FENCE_TEXT]
        while data:
            data = data[os.write(fence_w, data) :]
        os.close(fence_w)
        os.execv(sys.executable, [sys.executable, PROGRAM])
    finally:
        os._exit(127)


def _kill(pid):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _run(scratch, stdin_text, job):
    """One run of the scratch folder's program on ``stdin_text``: a dict with ``exit`` (code,
    or minus the signal), ``stdout``, ``stderr``, ``timed_out``, ``output_capped``,
    ``duration_s`` and ``fence``."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    fence_r, fence_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for fd in (stdin_w, stdout_r, stderr_r, fence_r):
            os.close(fd)
        _child(scratch, stdin_r, stdout_w, stderr_w, fence_w, job["memory_bytes"])
    for fd in (stdin_r, stdout_w, stderr_w, fence_w):
        os.close(fd)
    said = b""
    while chunk := os.read(fence_r, 4096):  # closed at the program's exec (or its end)
        said += chunk[: max(MAX_FENCE_TEXT - len(said), 0)]
    os.close(fence_r)
    os.set_blocking(stdin_w, False)
    pending = stdin_text.encode("utf-8")
    out, err = bytearray(), bytearray()
    readers = {stdout_r: out, stderr_r: err}
    writers = [stdin_w]
    if not pending:
        os.close(stdin_w)
        writers = []
    deadline = started + job["timeout_s"]
    timed_out = capped = False
    while readers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready_r, ready_w, _ = select.select(list(readers), writers, [], remaining)
        for fd in ready_w:
            try:
                pending = pending[os.write(fd, pending[:65536]) :]
            except (BrokenPipeError, BlockingIOError) as exc:
                if isinstance(exc, BrokenPipeError):
                    pending = b""
            if not pending:
                os.close(fd)
                writers = []
        for fd in ready_r:
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                del readers[fd]
                continue
            buf = readers[fd]
            cap = job["max_output_bytes"] if fd == stdout_r else MAX_STDERR_BYTES
            buf += chunk[: max(cap - len(buf), 0)]
            if fd == stdout_r and len(buf) >= cap:
                capped = True
        if capped:
            break
    status = None
    while status is None and not (timed_out or capped):
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        time.sleep(0.005)
    duration = time.monotonic() - started
    _kill(pid)  # the session: what it started too
    for fd in (*readers, *writers):
        with contextlib.suppress(OSError):
            os.close(fd)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(pid, 0)
    exit_code = None
    if status is not None:
        exit_code = os.waitstatus_to_exitcode(status)
    return {
        "exit": exit_code,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
        "timed_out": timed_out,
        "output_capped": capped,
        "duration_s": round(duration, 4),
        "fence": said.decode("utf-8", "replace"),
    }


def _last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def judge(run, expected, job):
    """(category, message) of one run against the expected text."""
    if run["timed_out"]:
        return "timeout", f"killed at the time limit ({job['timeout_s']} s)"
    if run["output_capped"]:
        return "wrong_answer", f"killed: stdout past {job['max_output_bytes']} bytes"
    if run["exit"] != 0:
        why = _last_line(run["stderr"])
        return "runtime_error", f"exit {run['exit']}" + (f": {why}" if why else "")
    got, wanted = normalised(run["stdout"]), normalised(expected)
    if got == wanted:
        return "passed", ""
    return "wrong_answer", f"expected {wanted[:120]!r}, got {got[:120]!r}"


def _sample(scratch, source, cases, job, keep):
    """Every input of ``cases`` until the first that fails: the sample's verdict line."""
    with open(os.path.join(scratch, PROGRAM), "w", encoding="utf-8") as fh:
        fh.write(source)
    outcomes, category, message, fence_said, total = [], "passed", "", "", 0.0
    for number, case in enumerate(cases):
        run = _run(scratch, case["input"], job)
        if job["own_pid_namespace"]:  # what a run left behind (a daemon) ends before the next
            _kill_leftovers(keep)
        fence_said = fence_said or run["fence"]
        total += run["duration_s"]
        category, message = judge(run, case["expected"], job)
        outcomes.append(category)
        if category != "passed":
            message = f"input {number + 1} of {len(cases)}: {message}"
            break
    return {
        "category": category,
        "message": message[:500],
        "inputs": outcomes,
        "duration_s": round(total, 4),
        "isolated": True,
        "fence": fence_said[:MAX_FENCE_TEXT] or "none: no input ran",
        "time_limit_s": job["timeout_s"],
    }


def _main():
    _non_dumpable()
    batch_token = _take("token.txt").strip()
    batch = json.loads(_take("batch.json"))
    keep = _ancestors()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a program that closes its stdin early
    names = ("timeout_s", "memory_bytes", "max_output_bytes", "own_pid_namespace")
    job = {k: batch[k] for k in names}
    scratch = None
    for i, source in enumerate(batch["programs"]):
        _clear_sample(scratch, batch["own_pid_namespace"], keep)
        scratch = tempfile.mkdtemp(prefix="scratch-", dir=DRIVER_DIR)
        line = json.dumps({"i": i, **_sample(scratch, source, batch["cases"], job, keep)})
        sys.stdout.write("\n" + batch_token + " " + line + "\n")
        sys.stdout.flush()
    _clear_sample(scratch, batch["own_pid_namespace"], keep)


if __name__ == "__main__":
    _main()
