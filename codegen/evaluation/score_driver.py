"""Runs inside the sandbox (standard library only, the image's python3): score one batch of a
task's samples. Shipped as a file by ``codegen.evaluation.scoring`` with the supervisor beside
it, whose process hygiene (non-dumpable, reaping, wiping) it shares; never imported on the host.

``_sample`` is one sample, in a process forked for it; ``_main`` runs a batch of them.
"""

import contextlib
import json
import os
import resource
import secrets
import selectors
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's dir out
from supervisor import _ancestors, _kill_leftovers, _non_dumpable, _reap, _wipe_dir

TAIL = 2000


def _verdict(token, category, message=""):
    line = json.dumps({"category": category, "message": message[:500]})
    sys.stdout.write("\n" + token + " " + line + "\n")
    sys.stdout.flush()


def _sample(task, token):
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


def _main():
    _non_dumpable()
    with open("token.txt") as fh:
        batch_token = fh.read().strip()
    os.remove("token.txt")
    with open("batch.json") as fh:
        batch = json.load(fh)
    os.remove("batch.json")
    keep = _ancestors()
    workdir = os.path.join(os.getcwd(), "sample")
    for i, candidate in enumerate(batch["candidates"]):
        if batch["own_pid_namespace"]:
            _kill_leftovers(keep)
        _reap()
        if os.path.isdir(workdir):
            _wipe_dir(workdir)  # what a sample left, even in directories it made unwritable
        else:
            os.mkdir(workdir, 0o700)
        token = secrets.token_hex(16)  # made now: no earlier sample's process can know it
        task = dict(batch["task"], candidate=candidate)
        code, timed_out, out, err, duration = _run(
            task, token, batch["timeout_s"], batch["memory_bytes"], workdir
        )
        category, message = _classify(token, code, timed_out, out, err)
        line = json.dumps(
            {
                "i": i,
                "category": category,
                "message": message[:500],
                "duration_s": round(duration, 4),
            }
        )
        sys.stdout.write("\n" + batch_token + " " + line + "\n")
        sys.stdout.flush()


_main()
