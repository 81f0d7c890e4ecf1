"""Runs inside the sandbox (standard library only): load a module, call one function on each
input in turn, print each outcome. Shipped as a file by ``codegen.sandbox.calls``; never
imported on the host.

Before it reads its token or job, the driver forks a zygote; each module runs in a child of
the zygote (own session, stdin/stdout/stderr on /dev/null, a memory limit), which reads its own
job, that module's source alone, from a pipe, and enters the file fence (``fence.enter``:
write only its own folder, read nothing of the driver's, the job's or another module's) before
the module's code runs. So no module finds another's source or output, or the token, in its
memory or on disk. Each call has its own time limit (an interval timer in the child), and the
whole run a deadline the driver enforces by killing the child. Outcomes travel back on a pipe
and are printed by the driver alone, under its token. With ``stop_after_failure`` the child
stops after the first call that raises or times out (and says so). The module could tamper
with that loop, but only to end its own run sooner (the host reads the rest as not reached:
failed) or to go on to the deadline; the verdict is always the host's.

A job with ``modules`` (a list) instead of ``module`` runs every module on the same inputs, one
child per module in turn, as ``score_driver`` runs samples: each module's run has its own
deadline, and before each the driver kills whatever an earlier module left running (in the
sandbox's own PID namespace) and wipes the directory it ran in, so one module cannot see or
disturb another's run. Each outcome line then carries ``"c"``, the module's index.
"""

import contextlib
import hashlib
import json
import math
import os
import resource
import selectors
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's dir out
import fence
import isolation
from supervisor import (
    _ancestors,
    _close_except,
    _kill_leftovers,
    _non_dumpable,
    _reap,
    _take,
    _wipe_dir,
    _wipe_ipc,
)

MAX_VALUE_CHARS = 200_000  # an output larger than this travels as its digest
MAX_DEPTH = 64


class _CallTimeout(BaseException):
    pass


def _encode(value, depth=0):
    """A tagged JSON form of a Python value that keeps its type (tuple vs list, set, dict
    keys, non-finite floats, bytes): ``isolation.encode``, the one codec of every driver;
    anything without a plain form by type name and repr."""
    return isolation.encode(value, _opaque, depth)


def _opaque(value, depth):
    if isinstance(value, isolation._PLAIN_BASES):  # a subclass: its base type's value
        return _encode(isolation._base_value(value), depth + 1)
    return {"o": type(value).__name__, "r": repr(value)[:500]}


def _normal(value, depth=0):
    """An encoding under which values Python's ``==`` calls equal are equal: an integral
    float or a bool as the int, dict items and set members in a fixed order (for digests of
    values too large to carry)."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_normal(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"t": [_normal(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        items = [[_normal(k, depth + 1), _normal(v, depth + 1)] for k, v in value.items()]
        return {"d": sorted(items, key=json.dumps)}
    if isinstance(value, (set, frozenset)):
        return {"s": sorted((_normal(v, depth + 1) for v in value), key=json.dumps)}
    return _encode(value, depth)


def _outcome(status, value=None, error="", duration=0.0):
    item = {"status": status, "duration_s": round(duration, 6)}
    if status == "ok":
        text = json.dumps(_encode(value))
        if len(text) > MAX_VALUE_CHARS:
            normal = json.dumps(_normal(value)).encode()
            item["digest"] = hashlib.sha256(normal).hexdigest()
        else:
            item["value"] = text
    else:
        item["error"] = error[:300]
    return item


def _alarm(signum, frame):
    raise _CallTimeout()


def _quiet_stdio():
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (lives as long as the process)
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def _read_to_end(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _child(job_r, out_w):
    """In a child of the zygote: read this module's job (its own source, nothing else of the
    run) from ``job_r``, fence the process, load the module, call it on each input, send each
    outcome on ``out_w``. Never returns."""
    global MAX_VALUE_CHARS  # this process's own copy: the child of one fork
    os.setsid()
    _close_except({job_r, out_w})
    job = json.loads(_read_to_end(job_r))
    os.close(job_r)
    if job.get("max_value_chars"):
        MAX_VALUE_CHARS = int(job["max_value_chars"])
    if job.get("memory_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (job["memory_bytes"], job["memory_bytes"]))
    os.chdir(job["workdir"])
    results = os.fdopen(out_w, "w")

    def send(item):
        results.write(json.dumps(item) + "\n")
        results.flush()

    try:
        fence.enter(job["workdir"])  # "none: ..." leaves only the separate work folders
    except BaseException as exc:  # a fence that fails to close: the module does not run
        send({"load_error": f"the file fence failed: {type(exc).__name__}: {exc}"[:300]})
        os._exit(0)
    namespace = {"__name__": "solution"}
    try:
        exec(compile(job["module"], "solution.py", "exec"), namespace)
        function = namespace[job["entry_point"]]
    except BaseException as exc:
        send({"load_error": f"{type(exc).__name__}: {exc}"[:300]})
        os._exit(0)
    signal.signal(signal.SIGALRM, _alarm)
    stop_after_failure = bool(job.get("stop_after_failure"))
    timeouts, max_timeouts = 0, job.get("max_timeouts")
    for index, args in enumerate(job["inputs"]):
        limit = job["time_limits"][index]
        if max_timeouts is not None and timeouts >= max_timeouts:
            send(_outcome("timeout", error=f"not run: {timeouts} calls hit the time limit"))
            continue
        started = time.perf_counter()
        try:
            signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001))
            try:
                value = function(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            item = _outcome("ok", value, duration=time.perf_counter() - started)
        except _CallTimeout:
            timeouts += 1
            item = _outcome("timeout", error="time limit", duration=time.perf_counter() - started)
        except BaseException as exc:
            item = _outcome(
                "error",
                error=f"{type(exc).__name__}: {exc}",
                duration=time.perf_counter() - started,
            )
        try:
            send(item)
            if stop_after_failure and item["status"] != "ok":
                send({"stopped_after": index})
                break
        except BaseException:
            os._exit(1)
    os._exit(0)


def _zygote(sock):
    """Forks one module's child per pair of descriptors it is sent (the job's read end, the
    outcomes' write end) and answers its pid. Forked before the driver read its token or job,
    and never sent a source itself, so no child finds another module's source, output or the
    token in the memory it starts with. Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
        _quiet_stdio()  # the driver's stdout is the execution's: never a child's
        _close_except({sock.fileno()})
        fence.interpreter_reads()  # once, inherited by every child
        while True:
            _msg, fds, _flags, _addr = socket.recv_fds(sock, 1, 2)
            if len(fds) != 2:
                break
            pid = os.fork()
            if pid == 0:
                sock.close()
                try:
                    _child(*fds)
                finally:
                    os._exit(1)
            for fd in fds:
                os.close(fd)
            sock.sendall(pid.to_bytes(8, "big"))
    finally:
        os._exit(0)


def _run(zygote, job, deadline_s):
    """One module's run in a child of the zygote, sent ``job`` alone: its outcome lines, and
    whether it ended by itself (False: killed at the deadline); None when the zygote is gone."""
    job_r, job_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        zygote.settimeout(max(deadline_s, 5.0))
        socket.send_fds(zygote, [b"j"], [job_r, out_w])
        pid = int.from_bytes(isolation._exact(zygote, 8), "big")
    except (OSError, EOFError):
        os.close(job_w)
        os.close(out_r)
        return None
    finally:
        os.close(job_r)
        os.close(out_w)
    deadline = time.monotonic() + deadline_s
    pending = json.dumps(job).encode()
    buffer = b""
    for fd in (job_w, out_r):
        os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(job_w, selectors.EVENT_WRITE)
    done = False
    while not done and time.monotonic() < deadline:
        for key, _ in sel.select(min(0.05, max(deadline - time.monotonic(), 0))):
            if key.fd == job_w:
                try:
                    pending = pending[os.write(job_w, pending[: 1 << 16]) :]
                except OSError:  # the child is gone before reading it all: its pipe says how
                    pending = b""
                if not pending:
                    sel.unregister(job_w)
                    os.close(job_w)
                    job_w = None
                continue
            chunk = os.read(out_r, 1 << 20)
            if not chunk:
                done = True
                break
            buffer += chunk
    for kill in (os.killpg, os.kill):  # the group, and the child if it never made one
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)
    sel.close()
    if job_w is not None:
        os.close(job_w)
    os.close(out_r)
    lines = buffer.decode("utf-8", "replace").splitlines()
    if not done and lines and not buffer.endswith(b"\n"):
        lines.pop()  # cut mid-line by the deadline
    return lines, done


def _alive(pid):
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False  # reaped already (``_reap``)


SHARED_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")  # writable by every module in the sandbox


def _wipe_between(top, keep):
    """What an earlier module may have left where a later one could find it: everything in
    the job's directory but the driver's own files, the shared dirs, System V IPC."""
    for name in os.listdir(top):
        if name in keep:
            continue
        path = os.path.join(top, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _wipe_dir(path)
            with contextlib.suppress(OSError):
                os.rmdir(path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    for path in SHARED_DIRS:
        if os.path.isdir(path):
            _wipe_dir(path)
    _wipe_ipc()


def _fresh_workdir(workdir):
    if os.path.isdir(workdir):
        _wipe_dir(workdir)  # what an earlier module left where it ran
    else:
        os.mkdir(workdir, 0o700)


def _many(job, token, zygote, zygote_pid):
    """Every module of ``job["modules"]`` on the same inputs, one child each, in turn."""
    keep = _ancestors() | {zygote_pid}
    top = os.getcwd()
    workdir = os.path.join(top, "candidate")
    # The files the host shipped (the token and the job read and removed): no module has run.
    own_files = {*os.listdir(top), "candidate"}
    # Only in the sandbox's own namespaces: there every other process, file and IPC object is
    # a module's (the unsafe host mode of the tests shares the host's).
    own = job.get("own_pid_namespace")
    for index, module in enumerate(job["modules"]):
        if own:
            _kill_leftovers(keep)  # what an earlier module left running
            if index:
                _wipe_between(top, own_files)
        _reap()
        _fresh_workdir(workdir)
        one = {
            "module": module,
            "entry_point": job["entry_point"],
            "inputs": job["inputs"],
            "time_limits": job["time_limits"],
            "max_timeouts": job.get("max_timeouts"),
            "max_value_chars": job.get("max_value_chars"),
            "memory_bytes": job.get("memory_bytes"),
            "workdir": workdir,
        }
        ran = _run(zygote, one, job["deadline_s"])
        if ran is None:
            return  # the zygote is gone: no end, so the host runs the rest again, apart
        lines, done = ran
        if own:
            _kill_leftovers(keep)  # before asking whether the zygote outlived this module
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            # Only outcomes and load errors come from a child; the ends are the driver's.
            if isinstance(item, dict) and ("status" in item or "load_error" in item):
                item.pop("end", None)
                item["c"] = index
                sys.stdout.write(token + " " + json.dumps(item) + "\n")
        if not _alive(zygote_pid):
            # This module killed the zygote: its outcomes stand, and with no end line the
            # host runs the modules after it again, in an execution of their own.
            sys.stdout.flush()
            return
        end = {"c": index, "end": "done" if done else "deadline"}
        sys.stdout.write(token + " " + json.dumps(end) + "\n")
        sys.stdout.flush()
    sys.stdout.write(token + " " + json.dumps({"end": "all"}) + "\n")
    sys.stdout.flush()


def main():
    _non_dumpable()  # inherited by the zygote and its children
    zygote, zygote_pid = isolation.fork_zygote(_zygote)
    token = _take("token.txt").strip()
    job = json.loads(_take("job.json"))
    if "modules" in job:
        _many(job, token, zygote, zygote_pid)
        return
    workdir = os.path.join(os.getcwd(), "candidate")
    _fresh_workdir(workdir)
    ran = _run(zygote, dict(job, workdir=workdir), job["deadline_s"])
    if ran is None:
        return  # no end: the host reads every input as not reached
    lines, done = ran
    for line in lines:
        sys.stdout.write(token + " " + line + "\n")
    sys.stdout.write(token + " " + json.dumps({"end": "done" if done else "deadline"}) + "\n")
    sys.stdout.flush()


main()
