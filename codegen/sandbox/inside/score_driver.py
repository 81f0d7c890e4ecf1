"""Runs inside the sandbox (standard library only, the image's python3): score one batch of a
task's samples. Shipped as a file by ``codegen.evaluation.scoring`` with the supervisor,
``isolation``, ``handles`` and ``fence`` beside it; never imported on the host.

A verdict is decided where the candidate cannot reach, and nowhere else. Before the driver
reads its token or the task (hidden test, expected values), it forks a zygote that only ever
receives candidate sources; each sample's candidate is a child of the zygote (own session,
memory limit, stdio on /dev/null, no descriptor but its socket) that enters the file fence
(``fence.enter``: it may write only its scratch folder) and then loads the module. The test
side is a child of the driver: it runs the task's prompt itself (the hidden test may call its
helpers), binds the test's free names to handles of the candidate's process (``isolation``),
runs the test and writes the verdict on a pipe only it holds. Both are non-dumpable (inherited
from the driver), so the candidate can neither read the test side's memory nor write its
verdict; it can only answer calls with plain data, exit, or kill, and silence is a failure.

Files: each sample has a fresh scratch folder of a random name, made by the driver and removed
after it; the candidate's and the test side's working directory (tests write files the code
under test reads). No process of the batch has the driver's folder, a scratch folder or the
working directory on ``sys.path``, so nothing a sample writes is imported by the test side or
by a later sample.

A test whose values cannot cross (``isolation.CannotCross``) ends ``cannot_isolate``, a
failure saying what could not cross: there is no other place to decide it.
"""

import contextlib
import importlib
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile
import time

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
import fence  # noqa: E402
import handles  # noqa: E402
import isolation  # noqa: E402
from supervisor import _ancestors, _clear_sample, _close_except, _non_dumpable, _take  # noqa: E402

# Everything the batch needs is imported: from here on no process of it imports from the
# driver's folder (the candidates can write there when the kernel has no fence).
sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]
MAX_FENCE_TEXT = 300


def _quiet_stdio():
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 (lives as long as the process)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def _candidate(job, fd, fence_w):
    """In the zygote's child: enter the fence, load the candidate and answer the test side.
    Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        if job["memory_bytes"]:
            limit = job["memory_bytes"]
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _quiet_stdio()
        _close_except({fd, fence_w})
        os.chdir(job["scratch"])
        isolation.fenced(fence.enter, job["scratch"], fence_w)  # before the candidate's code
        sock = socket.socket(fileno=fd)
        namespace, why = isolation.load_module(job["prompt"], job["candidate"], job["entry_point"])
        isolation.serve(sock, namespace, why)
    finally:
        os._exit(1)


def _zygote(sock):
    """Forks one candidate per source it is sent; holds nothing else (forked before the
    driver read its token or task). Answers each with the candidate's pid and what its fence
    said (read before the candidate's code ran). Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the candidates
        _quiet_stdio()  # the driver's stdout is the execution's: never in a candidate's line
        _close_except({sock.fileno()})
        while True:
            head, fds, _flags, _addr = socket.recv_fds(sock, 8, 1)
            if not head or not fds:
                break
            head += isolation._exact(sock, 8 - len(head)) if len(head) < 8 else b""
            job = json.loads(isolation._exact(sock, int.from_bytes(head, "big")))
            fence_r, fence_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                sock.close()
                os.close(fence_r)
                _candidate(job, fds[0], fence_w)
            for fd in (*fds, fence_w):
                os.close(fd)
            said = _read_all(fence_r, MAX_FENCE_TEXT)
            os.close(fence_r)
            sock.sendall(pid.to_bytes(8, "big") + len(said).to_bytes(2, "big") + said)
    finally:
        os._exit(0)


def _read_all(fd, cap):
    """What ``fd`` gives until its end, at most ``cap`` bytes kept."""
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk[: max(cap - len(data), 0)]
    return data


def _free(names, namespace, conn):
    for name in names:
        try:
            namespace[name] = conn.get(name)
        except AttributeError:
            namespace.pop(name, None)  # as unbound as it was in the candidate's module


def _cannot_isolate(what):
    return {"category": "cannot_isolate", "message": f"a value cannot cross: {what}"}


def _decide(task, conn):
    """The test side's verdict: {"category", "message"}. A test that met a value with no form
    to cross in (even one it caught) ends ``cannot_isolate``: it did not run as written."""
    try:
        compile(task["candidate"], "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return {"category": "syntax_error", "message": f"{type(exc).__name__}: {exc}"}
    except BaseException as exc:
        return {"category": "runtime_error", "message": f"{type(exc).__name__}: {exc}"}
    try:
        why = conn.hello()
    except isolation.ChildGone as exc:
        return {"category": "runtime_error", "message": f"while loading the module: {exc}"}
    if why is not None:
        return {"category": "runtime_error", "message": why}
    namespace = {"__name__": "solution"}
    try:
        with contextlib.suppress(SyntaxError, ValueError):  # a prompt in prose runs nothing
            exec(compile(task["prompt"], "prompt.py", "exec"), namespace)
        for name in task["stdlib_names"]:
            namespace[name] = importlib.import_module(name)
        _free(task["remote_names"], namespace, conn)
        exec(compile(task["test"], "hidden_test.py", "exec"), namespace)
        if task["call_check"]:
            namespace[task["check_name"]](namespace[task["entry_point"]])
        verdict = {"category": "passed", "message": ""}
    except isolation.CannotCross as exc:
        verdict = _cannot_isolate(str(exc))
    except AssertionError as exc:
        verdict = {"category": "wrong_answer", "message": f"AssertionError: {exc}"}
    except BaseException as exc:
        verdict = {"category": "runtime_error", "message": f"{type(exc).__name__}: {exc}"}
    if conn.dead is not None:  # whatever the test made of it, silence is a failure
        verdict = {"category": "runtime_error", "message": conn.dead}
    elif conn.cross is not None:
        verdict = _cannot_isolate(conn.cross)
    return verdict


def _test_side(task, sock, verdict_w, memory_bytes, scratch):
    """In the driver's child: decide, write the verdict, exit. Never returns."""
    try:
        os.setsid()
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        _quiet_stdio()
        _close_except({sock.fileno(), verdict_w})
        isolation.work_in(scratch)  # the test's files beside the candidate's
        verdict = _decide(task, handles.Conn(sock))
        data = json.dumps(verdict).encode()
        while data:
            data = data[os.write(verdict_w, data) :]
    finally:
        os._exit(0)


def _isolated(zygote, task, timeout_s, memory_bytes, scratch):
    """One sample across the process boundary: (category, message, duration, fence), or None
    when the zygote is gone (the host then runs the rest of the batch alone)."""
    ours, theirs = isolation.socket_pair()
    job = {
        "prompt": task["prompt"],
        "candidate": task["candidate"],
        "entry_point": task["entry_point"],
        "memory_bytes": memory_bytes,
        "scratch": scratch,
    }
    data = json.dumps(job).encode()
    started = time.monotonic()
    try:
        zygote.settimeout(max(timeout_s, 1.0))
        socket.send_fds(zygote, [len(data).to_bytes(8, "big")], [theirs.fileno()])
        zygote.sendall(data)
        head = isolation._exact(zygote, 10)
        cpid = int.from_bytes(head[:8], "big")
        said = isolation._exact(zygote, int.from_bytes(head[8:], "big"))
        fence_said = said.decode("utf-8", "replace")[:MAX_FENCE_TEXT]
    except (OSError, EOFError, ValueError):
        ours.close()
        return None
    finally:
        theirs.close()
    verdict_r, verdict_w = os.pipe()
    tpid = os.fork()
    if tpid == 0:
        os.close(verdict_r)
        zygote.close()
        _test_side(task, ours, verdict_w, memory_bytes, scratch)
    os.close(verdict_w)
    ours.close()
    deadline = started + timeout_s
    buf, timed_out = b"", False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([verdict_r], [], [], remaining)
        if ready:
            chunk = os.read(verdict_r, 65536)
            if not chunk:
                break
            buf += chunk[: 65536 - len(buf)]
    duration = time.monotonic() - started
    os.close(verdict_r)
    for pid in (cpid, tpid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(tpid, 0)
    try:
        verdict = json.loads(buf)
    except ValueError:
        verdict = None
    if not isinstance(verdict, dict):
        if timed_out:
            return "timeout", "killed at the time limit", duration, fence_said
        return "runtime_error", "the test side ended without a verdict", duration, fence_said
    return str(verdict["category"]), str(verdict.get("message", "")), duration, fence_said


def _scratch(previous, own_pid_namespace, keep):
    """A fresh scratch folder of a random name for the next sample, once the previous one's
    processes and folder are gone."""
    _clear_sample(previous, own_pid_namespace, keep)
    return tempfile.mkdtemp(prefix="scratch-", dir=DRIVER_DIR)


def _main():
    _non_dumpable()  # inherited by the zygote, its candidates and the test sides
    zygote, zygote_pid = isolation.fork_zygote(_zygote)
    batch_token = _take("token.txt").strip()
    batch = json.loads(_take("batch.json"))
    keep = _ancestors() | {zygote_pid}
    own = batch["own_pid_namespace"]
    scratch = None
    for i, candidate in enumerate(batch["candidates"]):
        scratch = _scratch(scratch, own, keep)
        # A sample is a source, or (ClassEval: one test class each) the fields it changes.
        extra = candidate if isinstance(candidate, dict) else {"candidate": candidate}
        task = dict(batch["task"], **extra)
        outcome = _isolated(zygote, task, batch["timeout_s"], batch["memory_bytes"], scratch)
        if outcome is None:
            break  # the zygote is gone (a candidate killed it): the rest run alone
        category, message, duration, fence_said = outcome
        line = json.dumps(
            {
                "i": i,
                "category": category,
                "message": message[:500],
                "duration_s": round(duration, 4),
                "isolated": True,
                "fence": fence_said,
            }
        )
        sys.stdout.write("\n" + batch_token + " " + line + "\n")
        sys.stdout.flush()


_main()
