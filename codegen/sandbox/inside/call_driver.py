"""Runs inside the sandbox (standard library only): load a module, call one function on each
input in turn, print each outcome. Shipped as a file by ``codegen.sandbox.calls``; never
imported on the host.

The module runs in a forked child (own session, stdin/stdout/stderr on /dev/null or pipes), so
what it prints cannot reach the driver's output; each call has its own time limit (an interval
timer in the child), and the whole run a deadline the driver enforces by killing the child.
Outcomes travel back on a pipe and are printed by the driver alone, under a token it read from
a file the child never sees. With ``stop_after_failure`` the child stops after the first call
that raises or times out (and says so). The module could tamper with that loop, but only to
end its own run sooner (the host reads the rest as not reached: failed) or to go on to the
deadline; the verdict is always the host's.

A job with ``modules`` (a list) instead of ``module`` runs every module on the same inputs, one
forked child per module in turn, as ``score_driver`` runs samples: each module's run has its
own deadline, and before each the driver kills whatever an earlier module left running (in the
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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's dir out
import isolation
from supervisor import (
    _ancestors,
    _kill_leftovers,
    _non_dumpable,
    _reap,
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


def _child(job, out_w):
    global MAX_VALUE_CHARS  # this process's own copy: the child of one fork
    os.setsid()
    if job.get("max_value_chars"):
        MAX_VALUE_CHARS = int(job["max_value_chars"])
    if job.get("memory_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (job["memory_bytes"], job["memory_bytes"]))
    if job.get("workdir"):
        os.chdir(job["workdir"])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (lives as long as the process)
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    results = os.fdopen(out_w, "w")

    def send(item):
        results.write(json.dumps(item) + "\n")
        results.flush()

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


def _run(job, deadline_s):
    """One module's run in a forked child: its outcome lines, and whether it ended by itself
    (False: killed at the deadline)."""
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        try:
            _child(job, out_w)
        finally:
            os._exit(1)
    os.close(out_w)
    deadline = time.monotonic() + deadline_s
    buffer = b""
    os.set_blocking(out_r, False)
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    done = False
    while not done and time.monotonic() < deadline:
        for _key, _ in sel.select(min(0.05, max(deadline - time.monotonic(), 0))):
            chunk = os.read(out_r, 1 << 20)
            if not chunk:
                done = True
                break
            buffer += chunk
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    sel.close()
    os.close(out_r)
    lines = buffer.decode("utf-8", "replace").splitlines()
    if not done and lines and not buffer.endswith(b"\n"):
        lines.pop()  # cut mid-line by the deadline
    return lines, done


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


def _many(job, token):
    """Every module of ``job["modules"]`` on the same inputs, one child each, in turn."""
    keep = _ancestors()
    top = os.getcwd()
    workdir = os.path.join(top, "candidate")
    own_files = {"driver.py", "supervisor.py", "isolation.py", "candidate"}
    for index, module in enumerate(job["modules"]):
        if job.get("own_pid_namespace"):
            # Only in the sandbox's own namespaces: there every other process, file and IPC
            # object is a module's (the unsafe host mode of the tests shares the host's).
            _kill_leftovers(keep)  # what an earlier module left running
            if index:
                _wipe_between(top, own_files)
        _reap()
        if os.path.isdir(workdir):
            _wipe_dir(workdir)  # and what it left where it ran
        else:
            os.mkdir(workdir, 0o700)
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
        lines, done = _run(one, job["deadline_s"])
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
        end = {"c": index, "end": "done" if done else "deadline"}
        sys.stdout.write(token + " " + json.dumps(end) + "\n")
        sys.stdout.flush()
    sys.stdout.write(token + " " + json.dumps({"end": "all"}) + "\n")
    sys.stdout.flush()


def main():
    _non_dumpable()  # the child cannot read the token from this process's memory
    with open("token.txt") as fh:
        token = fh.read().strip()
    os.remove("token.txt")
    with open("job.json") as fh:
        job = json.load(fh)
    os.remove("job.json")
    if "modules" in job:
        _many(job, token)
        return
    lines, done = _run(job, job["deadline_s"])
    for line in lines:
        sys.stdout.write(token + " " + line + "\n")
    sys.stdout.write(token + " " + json.dumps({"end": "done" if done else "deadline"}) + "\n")
    sys.stdout.flush()


main()
