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
"""

import contextlib
import hashlib
import json
import math
import os
import selectors
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's dir out
from supervisor import _non_dumpable

MAX_VALUE_CHARS = 200_000  # an output larger than this travels as its digest
MAX_DEPTH = 64


class _CallTimeout(BaseException):
    pass


def _encode(value, depth=0):
    """A tagged JSON form of a Python value that keeps its type (tuple vs list, set, dict
    keys, non-finite floats); anything else by type name and repr."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [_encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"t": [_encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"d": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"s": [_encode(v, depth + 1) for v in value], "frozen": isinstance(value, frozenset)}
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
    os.setsid()
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
    for index, args in enumerate(job["inputs"]):
        limit = job["time_limits"][index]
        started = time.perf_counter()
        try:
            signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001))
            try:
                value = function(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            item = _outcome("ok", value, duration=time.perf_counter() - started)
        except _CallTimeout:
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


def main():
    _non_dumpable()  # the child cannot read the token from this process's memory
    with open("token.txt") as fh:
        token = fh.read().strip()
    os.remove("token.txt")
    with open("job.json") as fh:
        job = json.load(fh)
    os.remove("job.json")
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        try:
            _child(job, out_w)
        finally:
            os._exit(1)
    os.close(out_w)
    deadline = time.monotonic() + job["deadline_s"]
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
    lines = buffer.decode("utf-8", "replace").splitlines()
    if not done and lines and not buffer.endswith(b"\n"):
        lines.pop()  # cut mid-line by the deadline
    for line in lines:
        sys.stdout.write(token + " " + line + "\n")
    sys.stdout.write(token + " " + json.dumps({"end": "done" if done else "deadline"}) + "\n")
    sys.stdout.flush()


main()
