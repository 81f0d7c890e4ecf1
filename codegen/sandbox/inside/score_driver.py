"""Runs inside the sandbox (standard library only, the image's python3): score one batch of a
task's samples. Shipped as a file by ``codegen.evaluation.scoring`` with the supervisor and
``isolation`` beside it; never imported on the host.

A verdict is decided where the candidate cannot reach. Before the driver reads its token or
the task (hidden test, expected values), it forks a zygote that only ever receives candidate
sources; each sample's candidate is a child of the zygote (own session, memory limit, stdio on
/dev/null, no descriptor but its socket) and loads the module at once. The test side is a
child of the driver: it runs the task's prompt itself (the hidden test may call its helpers),
binds the test's free names to handles of the candidate's process (``isolation``), runs the
test and writes the verdict on a pipe only it holds. Both are non-dumpable (inherited from the
driver), so the candidate can neither read the test side's memory nor write its verdict; it
can only answer calls with plain data, exit, or kill, and silence is a failure.

A test whose calls cannot cross (a lambda passed to the candidate) is run again the old way,
the candidate in the test's own process (``_sample``), and reported ``isolated: false`` with
the reason; so is a sample the host marks ``direct`` (with the reason as its value).
"""

import contextlib
import importlib
import json
import os
import resource
import secrets
import select
import selectors
import signal
import socket
import sys
import time

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
import handles  # noqa: E402
import isolation  # noqa: E402
from supervisor import _ancestors, _kill_leftovers, _non_dumpable, _reap, _wipe_dir  # noqa: E402

TAIL = 2000


def _verdict(token, category, message=""):
    line = json.dumps({"category": category, "message": message[:500]})
    sys.stdout.write("\n" + token + " " + line + "\n")
    sys.stdout.flush()


def _sample(task, token):
    """The old way (the fallback): candidate, prompt and test in one namespace."""
    entry = task["entry_point"]
    try:
        prompt_code = compile(task["prompt"], "prompt.py", "exec")
    except (SyntaxError, ValueError):
        prompt_code = None  # a prompt in prose (a task file's) is no module to run first
    try:
        candidate_code = compile(task["candidate"], "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return _verdict(token, "syntax_error", f"{type(exc).__name__}: {exc}")
    test_code = compile(task["test"], "hidden_test.py", "exec")
    namespace = {"__name__": "solution"}
    try:
        if prompt_code is not None:
            exec(prompt_code, namespace)
        stub = namespace.get(entry)
        exec(candidate_code, namespace)
    except BaseException as exc:
        what = f"while loading the module: {type(exc).__name__}: {exc}"
        return _verdict(token, "runtime_error", what)
    if namespace.get(entry) is stub:
        return _verdict(token, "runtime_error", f"the module does not define {entry}()")
    try:
        exec(test_code, namespace)
        if task["call_check"]:
            namespace[task["check_name"]](namespace[entry])
    except AssertionError as exc:
        return _verdict(token, "wrong_answer", f"AssertionError: {exc}")
    except BaseException as exc:
        return _verdict(token, "runtime_error", f"{type(exc).__name__}: {exc}")
    _verdict(token, "passed")


def _child(task, token, memory_bytes, workdir, out_w, err_w):
    try:
        os.setsid()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        os.chdir(workdir)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (lives as long as the process)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        _sample(task, token)
        sys.stdout.flush()
    except BaseException:
        os._exit(1)
    os._exit(0)


def _run(task, token, timeout_s, memory_bytes, workdir):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(task, token, memory_bytes, workdir, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    bufs = {out_r: bytearray(), err_r: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    deadline = started + timeout_s
    status = None
    exited_at = None
    while True:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, exited_at = st, time.monotonic()
        now = time.monotonic()
        if not sel.get_map() and status is not None:
            break
        if status is None and now >= deadline:
            break
        if exited_at is not None and now - exited_at > 0.2:
            break  # a detached process holds the pipes open: the sample itself is done
        for key, _ in sel.select(min(max(deadline - now, 0), 0.02)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                continue
            buf = bufs[key.fd]
            buf += chunk
            if len(buf) > 4 * TAIL:
                del buf[: len(buf) - 2 * TAIL]  # keep the tail: the verdict is printed last
    duration = (exited_at or time.monotonic()) - started
    timed_out = status is None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if status is None:
        status = os.waitpid(pid, 0)[1]
    sel.close()
    os.close(out_r)
    os.close(err_r)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    out, err = (bytes(bufs[fd]).decode("utf-8", "replace") for fd in (out_r, err_r))
    return code, timed_out, out, err, duration


def _classify(token, code, timed_out, out, err):
    if timed_out:
        return "timeout", "killed at the time limit"
    verdict = None
    for line in out.splitlines():
        if line.startswith(token + " "):
            try:
                verdict = json.loads(line[len(token) + 1 :])
            except ValueError:
                verdict = None
    if verdict is None:
        if code == -9:
            return "runtime_error", "killed (SIGKILL): out of memory?"
        tail = (err or out).strip().splitlines()[-1:] or [""]
        return "runtime_error", f"exited {code} without a verdict: {tail[0][:300]}"
    category = str(verdict.get("category", "runtime_error"))
    if category == "passed" and code != 0:
        category = "runtime_error"  # verdict printed, then crashed or exited non-zero
    return category, str(verdict.get("message", ""))


def _close_except(keep):
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


def _quiet_stdio():
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 (lives as long as the process)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def _candidate(job, fd):
    """In the zygote's child: load the candidate and answer the test side. Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        if job["memory_bytes"]:
            limit = job["memory_bytes"]
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _quiet_stdio()
        _close_except({fd})
        os.chdir(job["workdir"])
        sock = socket.socket(fileno=fd)
        namespace, why = isolation.load_module(job["prompt"], job["candidate"], job["entry_point"])
        isolation.serve(sock, namespace, why)
    finally:
        os._exit(1)


def _zygote(sock):
    """Forks one candidate per source it is sent; holds nothing else (forked before the
    driver read its token or task). Never returns."""
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
            pid = os.fork()
            if pid == 0:
                sock.close()
                _candidate(job, fds[0])
            for fd in fds:
                os.close(fd)
            sock.sendall(pid.to_bytes(8, "big"))
    finally:
        os._exit(0)


def _free(names, namespace, conn):
    for name in names:
        try:
            namespace[name] = conn.get(name)
        except AttributeError:
            namespace.pop(name, None)  # as unbound as it was in the candidate's module


def _decide(task, conn):
    """The test side's verdict: {"category", "message"}, or {"cross": why} when a value of the
    test has no plain form."""
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
        return {"cross": str(exc)}
    except AssertionError as exc:
        verdict = {"category": "wrong_answer", "message": f"AssertionError: {exc}"}
    except BaseException as exc:
        verdict = {"category": "runtime_error", "message": f"{type(exc).__name__}: {exc}"}
    if conn.dead is not None:  # whatever the test made of it, silence is a failure
        verdict = {"category": "runtime_error", "message": conn.dead}
    return verdict


def _test_side(task, sock, verdict_w, memory_bytes, workdir):
    """In the driver's child: decide, write the verdict, exit. Never returns."""
    try:
        os.setsid()
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        _quiet_stdio()
        _close_except({sock.fileno(), verdict_w})
        os.chdir(workdir)
        # The candidate can write where the driver lives: the test's imports never look there.
        sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]
        verdict = _decide(task, handles.Conn(sock))
        data = json.dumps(verdict).encode()
        while data:
            data = data[os.write(verdict_w, data) :]
    finally:
        os._exit(0)


def _isolated(zygote, task, timeout_s, memory_bytes, workdir):
    """One sample across the process boundary: (category, message, duration, cross), or None
    when the zygote is gone (the host then runs the rest of the batch alone)."""
    ours, theirs = isolation.socket_pair()
    job = {
        "prompt": task["prompt"],
        "candidate": task["candidate"],
        "entry_point": task["entry_point"],
        "memory_bytes": memory_bytes,
        "workdir": workdir,
    }
    data = json.dumps(job).encode()
    started = time.monotonic()
    try:
        zygote.settimeout(max(timeout_s, 1.0))
        socket.send_fds(zygote, [len(data).to_bytes(8, "big")], [theirs.fileno()])
        zygote.sendall(data)
        cpid = int.from_bytes(isolation._exact(zygote, 8), "big")
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
        _test_side(task, ours, verdict_w, memory_bytes, workdir)
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
            return "timeout", "killed at the time limit", duration, None
        return "runtime_error", "the test side ended without a verdict", duration, None
    if "cross" in verdict:
        return None, "", duration, str(verdict["cross"])
    return str(verdict["category"]), str(verdict.get("message", "")), duration, None


def _fresh(workdir, own_pid_namespace, keep):
    if own_pid_namespace:
        _kill_leftovers(keep)
    _reap()
    if os.path.isdir(workdir):
        _wipe_dir(workdir)  # what a sample left, even in directories it made unwritable
    else:
        os.mkdir(workdir, 0o700)


def _main():
    _non_dumpable()  # inherited by the zygote, its candidates and the test sides
    zygote, theirs = isolation.socket_pair()
    zygote_pid = os.fork()
    if zygote_pid == 0:
        zygote.close()
        _zygote(theirs)
    theirs.close()
    with open("token.txt") as fh:
        batch_token = fh.read().strip()
    os.remove("token.txt")
    with open("batch.json") as fh:
        batch = json.load(fh)
    os.remove("batch.json")
    keep = _ancestors() | {zygote_pid}
    workdir = os.path.join(os.getcwd(), "sample")
    own = batch["own_pid_namespace"]
    for i, candidate in enumerate(batch["candidates"]):
        _fresh(workdir, own, keep)
        # A sample is a source, or (ClassEval: one test class each) the fields it changes.
        extra = candidate if isinstance(candidate, dict) else {"candidate": candidate}
        task = dict(batch["task"], **extra)
        limits = (batch["timeout_s"], batch["memory_bytes"], workdir)
        # "direct": the host decided (from trusted data) that this sample runs the old way.
        direct = task.pop("direct", "")
        outcome = (None, "", 0.0, None) if direct else _isolated(zygote, task, *limits)
        if outcome is None:
            break  # the zygote is gone (a candidate killed it): the rest run alone
        category, message, duration, cross = outcome
        note = direct or ("" if cross is None else f"the test's calls cannot cross: {cross}")
        if note:
            _fresh(workdir, own, keep)
            token = secrets.token_hex(16)  # made now: no earlier sample's process can know it
            code, timed_out, out, err, duration = _run(task, token, *limits)
            category, message = _classify(token, code, timed_out, out, err)
        line = json.dumps(
            {
                "i": i,
                "category": category,
                "message": message[:500],
                "duration_s": round(duration, 4),
                "isolated": not note,
                "note": note[:300],
            }
        )
        sys.stdout.write("\n" + batch_token + " " + line + "\n")
        sys.stdout.flush()


_main()
