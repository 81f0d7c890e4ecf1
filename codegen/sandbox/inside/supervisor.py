"""The in-sandbox supervisor: runs one job at a time, caps its output, then wipes everything.

This file runs *inside* the sandbox (container or bubblewrap), as ``python3 -I -c SOURCE MODE``,
so it must stay standard-library only and work on any Python 3.8+. It is never imported by
host code except to read its source text.

Modes:
  ``serve``  PID 1 of a pooled container: announces ``READY``, then loops over jobs on stdin.
  ``once``   one job (bubblewrap, strict containers), then exit.

Wire format (stdin/stdout, both directions): ``JOB <n>\\n`` + n bytes of JSON, answered by
``RESULT <n>\\n`` + n bytes of JSON (the captured output in base64).

Why this shape: the supervisor runs as the same uid as the untrusted code (all capabilities are
dropped, so it could not signal another uid), which lets ``kill(-1, SIGKILL)`` reach every
process the job left behind, however it detached. It protects itself by being non-dumpable
(no ptrace, no /proc/<pid>/fd or mem access for the job) and, as PID 1, by the kernel's rule
that init only receives signals it handles. After every job it kills all other processes,
wipes the writable directories and System V IPC, and *verifies* that nothing survived; a
failed verification is reported so the host discards the container.
"""

import base64
import contextlib
import ctypes
import json
import os
import resource
import selectors
import signal
import stat
import sys
import time

CHUNK = 65536
_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _non_dumpable():
    # PR_SET_DUMPABLE = 4: makes /proc/<self>/{fd,mem,environ} root-owned and blocks ptrace.
    with contextlib.suppress(Exception):
        _libc().prctl(4, 0, 0, 0, 0)


def _take(name):
    """The text of the job's file ``name``, removed once read (a driver's token and job: gone
    before any candidate runs)."""
    with open(name, encoding="utf-8") as fh:
        text = fh.read()
    os.remove(name)
    return text


def _clear_sample(previous, own_pid_namespace, keep):
    """Every process of the previous sample gone (in the sandbox's own PID namespace, where
    every other process is a sample's) and its scratch folder removed, even directories it
    made unwritable."""
    if own_pid_namespace:
        _kill_leftovers(keep)
    _reap()
    if previous is not None:
        _wipe_dir(previous)
        with contextlib.suppress(OSError):
            os.rmdir(previous)


def _close_except(keep):
    """Close every descriptor from 3 up but those in ``keep``."""
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


def _read_exact(stream, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_job(stream):
    header = stream.readline(64)
    if not header:
        return None
    parts = header.split()
    if len(parts) != 2 or parts[0] != b"JOB":
        raise ValueError("bad job header")
    data = _read_exact(stream, int(parts[1]))
    if data is None:
        return None
    return json.loads(data.decode("utf-8"))


def _write_result(out, result):
    data = json.dumps(result).encode("utf-8")
    out.write(b"RESULT %d\n" % len(data))
    out.write(data)
    out.flush()


def _oom_kills():
    # cgroup v2 then v1: the kernel's count of OOM kills in this container's memory cgroup.
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except OSError:
            continue
    return None


def _other_pids(me):
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            pid = int(name)
            if pid != me and pid != 1:
                pids.append(pid)
    return pids


def _reap():
    """Collect every exited child; returns {pid: status}."""
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done[pid] = status


def _ancestors():
    """This process and its ancestors (and PID 1): what a driver's sweep must spare."""
    keep, pid = {1}, os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return keep


def _kill_leftovers(keep):
    # Only inside the sandbox's own PID namespace: there every other process is a sample's.
    for _ in range(500):
        left = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in keep]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        time.sleep(0.001)


def _kill_all(me, statuses, group=None):
    """SIGKILL every process we may signal, until only PID 1 and we remain.

    ``group`` (unsafe host mode only) limits the kill to the job's process group, because
    there ``kill(-1)`` would reach the user's other processes.
    """
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
        statuses.update(_reap())
        return True, []
    for _ in range(400):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL)
        statuses.update(_reap())
        left = _other_pids(me)
        if not left:
            return True, []
        time.sleep(0.005)
    return False, left


def _force_rmtree(path):
    # The job may have left directories without write or search permission: restore them.
    for root, dirs, _files in os.walk(path, topdown=True):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, d), 0o700, follow_symlinks=False)
    for root, dirs, files in os.walk(path, topdown=False):
        for f in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, f))
        for d in dirs:
            full = os.path.join(root, d)
            try:
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    os.rmdir(full)
            except OSError:
                pass


def _wipe_dir(path):
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return
    for name in names:
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            with contextlib.suppress(OSError):
                os.chmod(full, 0o700)
            _force_rmtree(full)
            with contextlib.suppress(OSError):
                os.rmdir(full)
        else:
            with contextlib.suppress(OSError):
                os.unlink(full)


def _wipe_ipc():
    libc = _libc()
    removers = {
        "/proc/sysvipc/shm": lambda ident: libc.shmctl(ident, 0, None),  # IPC_RMID = 0
        "/proc/sysvipc/msg": lambda ident: libc.msgctl(ident, 0, None),
        "/proc/sysvipc/sem": lambda ident: libc.semctl(ident, 0, 0),
    }
    left = 0
    for path, remove in removers.items():
        for attempt in range(2):
            try:
                with open(path) as fh:
                    rows = fh.read().splitlines()[1:]
            except OSError:
                break
            if attempt == 1:
                left += len(rows)
                break
            for row in rows:
                fields = row.split()
                if len(fields) > 1:
                    remove(int(fields[1]))
    return left


def _reset(me, statuses, wipe_dirs, group=None):
    """Kill, wipe, verify. Returns (ok, detail)."""
    killed, left = _kill_all(me, statuses, group)
    problems = []
    if not killed:
        problems.append(f"processes survived: {left[:10]}")
    for path in wipe_dirs:
        _wipe_dir(path)
        try:
            rest = os.listdir(path)
        except FileNotFoundError:
            rest = []
        if rest:
            problems.append(f"{path} not empty: {rest[:5]}")
    ipc_left = _wipe_ipc()
    if ipc_left:
        problems.append(f"{ipc_left} System V IPC objects survived")
    return (not problems), "; ".join(problems)


def _write_files(workdir, files):
    for entry in files:
        rel = entry["path"]
        # The host validated paths already; this is a second line of defence.
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ValueError(f"unsafe path {rel!r}")
        full = os.path.join(workdir, rel)
        parent = os.path.dirname(full)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if "link" in entry:
            os.symlink(entry["link"], full)
        else:
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(base64.b64decode(entry["data"]))
            os.chmod(full, entry.get("mode", 0o644) & 0o755)


def _child(job, out_w, err_w):
    """In the forked child: detach, limit, exec. Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        try:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("1000")  # the job, never the supervisor, is the OOM killer's victim
        except OSError:
            pass
        limits = [(resource.RLIMIT_CORE, 0)]
        for key, rlimit in (
            ("fsize_bytes", resource.RLIMIT_FSIZE),
            ("nofile", resource.RLIMIT_NOFILE),
            ("as_bytes", resource.RLIMIT_AS),
            ("nproc", resource.RLIMIT_NPROC),
            ("cpu_s", resource.RLIMIT_CPU),
        ):
            if job.get(key):
                limits.append((rlimit, int(job[key])))
        for rlimit, value in limits:
            resource.setrlimit(rlimit, (value, value))
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        os.chdir(job["workdir"])
        os.execvpe(job["command"][0], job["command"], job["env"])
    except BaseException as exc:
        try:
            os.write(
                2, ("sandbox: cannot execute {!r}: {}\n".format(job["command"][0], exc)).encode()
            )
        finally:
            os._exit(127)


def _collect(paths, max_bytes):
    """Read back result files (e.g. JUnit XML) the job wrote, capped, never following links."""
    out = {}
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                data = os.read(fd, max_bytes + 1)
                out[path] = base64.b64encode(data[: max_bytes + 1]).decode("ascii")
        finally:
            os.close(fd)
    return out


def run_job(job, me, wakeup_r):
    statuses = {}
    max_out = int(job["max_output_bytes"])
    captured = {"stdout": bytearray(), "stderr": bytearray()}
    truncated = {"stdout": False, "stderr": False}
    result = {"setup_error": None}
    oom_before = _oom_kills()
    try:
        os.makedirs(job["workdir"], exist_ok=True)
        _write_files(job["workdir"], job["files"])
    except Exception as exc:
        result["setup_error"] = f"could not write the work dir: {exc}"
    timed_out = False
    status = None
    group = None
    started = time.monotonic()
    if result["setup_error"] is None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(job, out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        sel = selectors.DefaultSelector()
        sel.register(out_r, selectors.EVENT_READ, "stdout")
        sel.register(err_r, selectors.EVENT_READ, "stderr")
        sel.register(wakeup_r, selectors.EVENT_READ, None)
        open_streams = 2

        def pump(timeout):
            nonlocal open_streams
            for key, _ in sel.select(timeout):
                if key.data is None:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wakeup_r, 4096)
                    continue
                chunk = os.read(key.fd, CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    os.close(key.fd)
                    open_streams -= 1
                    continue
                buf = captured[key.data]
                room = max_out - len(buf)
                if room > 0:
                    buf += chunk[:room]
                if len(chunk) > room:
                    truncated[key.data] = True  # the rest is read and dropped: never buffered

        deadline = started + float(job["timeout_s"])
        while True:
            statuses.update(_reap())
            if pid in statuses:
                status = statuses[pid]
                break
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            pump(min(deadline - now, 0.25))
        ended = time.monotonic()
        # Everything the job started dies now; its pipes then reach EOF promptly.
        group = pid if job.get("kill_scope") == "group" else None
        _kill_all(me, statuses, group)
        if status is None:
            status = statuses.get(pid)
        drain_until = time.monotonic() + 2.0
        while open_streams and time.monotonic() < drain_until:
            pump(0.05)
        for key in list(sel.get_map().values()):
            if key.data is not None:
                os.close(key.fd)
        sel.close()
    else:
        ended = started
    result["collected"] = _collect(job.get("collect", []), int(job.get("max_collect_bytes", 0)))
    ok, detail = _reset(me, statuses, job.get("wipe", []), group)
    oom_after = _oom_kills()
    exit_code = None
    if status is not None and not timed_out:
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    result.update(
        exit_code=exit_code,
        timed_out=timed_out,
        oom_killed=bool(oom_before is not None and oom_after and oom_after > oom_before),
        # As base64: the host's copy is 4/3 of the bytes, where JSON's escapes made some six.
        stdout_b64=base64.b64encode(bytes(captured["stdout"])).decode("ascii"),
        stderr_b64=base64.b64encode(bytes(captured["stderr"])).decode("ascii"),
        truncated=truncated["stdout"] or truncated["stderr"],
        duration_s=round(ended - started, 6),
        reset_ok=ok,
        reset_detail=detail,
    )
    return result


def main(mode):
    _non_dumpable()
    me = os.getpid()
    # As PID 1 only handled signals arrive; ignore SIGINT so the job cannot raise in us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_r, False)
    os.set_blocking(wakeup_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wakeup_w)
    stdin = sys.stdin.buffer
    out = sys.stdout.buffer
    if mode == "serve":
        out.write(b"READY\n")
        out.flush()
    while True:
        job = _read_job(stdin)
        if job is None:
            return 0
        _write_result(out, run_job(job, me, wakeup_r))
        if mode != "serve":
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "once"))
