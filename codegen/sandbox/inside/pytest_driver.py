"""Runs inside the sandbox (standard library and the image's pytest): the crew's verification,
``pytest test_solution.py`` against ``solution.py``, decided where the solution cannot reach.
Shipped as a file by ``codegen.sandbox.base`` with the supervisor and ``isolation`` beside it.

The driver reads its token, then starts the solution's process as a fresh interpreter
(``isolation.py serve``: nothing of the driver's memory in it), which loads ``solution.py`` and
answers calls. The test side is the driver's child (non-dumpable, as the driver): ``solution``
in its ``sys.modules`` is a stand-in whose names the tests ask for (never a list the solution
reports) resolve across the socket, and pytest runs in that process with no conftest, no ini
file and the JUnit report written to a pipe only it holds. The driver prints the report and a
status under the token; a solution that exits, is killed, or breaks the protocol adds a
collection error, so the suite cannot pass by going silent.
"""

import ast
import base64
import builtins
import contextlib
import json
import os
import select
import signal
import sys
import types

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
import handles  # noqa: E402
import isolation  # noqa: E402
from supervisor import _non_dumpable  # noqa: E402

MAX_XML = 4_000_000
MAX_TAIL = 20_000


def _close_except(keep):
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


class _StandIn(types.ModuleType):
    """The ``solution`` module of the test side: each name the tests use is looked up in the
    solution's process when first used."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        conn = self.__dict__["_codegen_conn"]
        try:
            return conn.get(name)
        except AttributeError:
            raise AttributeError(f"module 'solution' has no attribute {name!r}") from None
        except isolation.LoadFailed as exc:
            raise ImportError(f"solution.py did not load: {exc}") from None


def _memory_module(source):
    """A pytest plugin collecting ``test_solution.py`` from ``source``, the text the driver read
    before the solution's process started: what the solution writes to the file later is never
    run (the file must still exist for pytest to collect it)."""
    import pytest
    from _pytest.assertion.rewrite import rewrite_asserts

    class _Module(pytest.Module):
        def _getobj(self):
            module = types.ModuleType("test_solution")
            module.__file__ = str(self.path)
            tree = ast.parse(source, str(self.path))
            rewrite_asserts(tree, source.encode("utf-8"), str(self.path), self.config)
            sys.modules["test_solution"] = module
            exec(compile(tree, str(self.path), "exec", dont_inherit=True), module.__dict__)
            return module

    class _Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_pycollect_makemodule(self, module_path, parent):
            if module_path.name == "test_solution.py":
                return _Module.from_parent(parent, path=module_path)
            return None

    return _Plugin()


def _eval_names(source):
    """Names in the string literals the tests ``eval`` or ``exec`` (the crew's spec-example
    tests run a class example's setup, ``"c = LRUCache(2)"``, and evaluate ``"f(10)"`` in
    ``dict(vars(solution))``): looked up in the solution before the tests run, since a plain
    dict of the stand-in cannot ask later. From the tests' text, never from the solution; names
    only, so no expected value is shown to the solution."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("eval", "exec") or not node.args:
            continue
        text = node.args[0]
        if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
            continue
        try:
            expression = ast.parse(text.value, mode=node.func.id)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        names |= {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)}
    return sorted(n for n in names if not hasattr(builtins, n))


def _pytest_side(sock, junit_w, status_w, out_w, test_source):
    """In the driver's child: pytest over the stand-in; a status line on ``status_w``."""
    status = {"exit": None}
    conn = handles.Conn(sock)
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        _close_except({sock.fileno(), junit_w, status_w})
        sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]
        module = _StandIn("solution")
        module.__dict__["_codegen_conn"] = conn
        sys.modules["solution"] = module
        import pytest

        status["load_error"] = conn.hello()
        if status["load_error"] is None:
            for name in _eval_names(test_source):
                with contextlib.suppress(AttributeError):
                    module.__dict__[name] = conn.get(name)
        args = [
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",  # the solution can write files beside the tests
            "-c",
            os.devnull,
            "--rootdir=/work",
            "--tb=short",
            f"--junitxml=/proc/self/fd/{junit_w}",
            "test_solution.py",
        ]
        status["exit"] = int(pytest.main(args, plugins=[_memory_module(test_source)]))
    except isolation.ChildGone as exc:
        status["dead"] = str(exc)
    except BaseException as exc:
        status["error"] = f"{type(exc).__name__}: {exc}"[:500]
    finally:
        status["dead"] = status.get("dead") or conn.dead
        status["cross"] = conn.cross
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(BaseException):
            os.write(status_w, json.dumps(status).encode())
        os._exit(0)


def _solution_process(sock):
    """Fork and exec a fresh interpreter serving ``solution.py`` on ``sock``; its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            fd = sock.fileno()
            os.set_inheritable(fd, True)
            _close_except({fd})
            script = os.path.join(DRIVER_DIR, "isolation.py")
            os.execv(sys.executable, [sys.executable, "-s", "-P", "-B", script, "serve", str(fd)])
        finally:
            os._exit(127)
    return pid


def main():
    _non_dumpable()
    with open("token.txt") as fh:
        token = fh.read().strip()
    os.remove("token.txt")
    with open("test_solution.py", encoding="utf-8") as fh:
        test_source = fh.read()  # before the solution's process exists
    ours, theirs = isolation.socket_pair()
    solution_pid = _solution_process(theirs)
    theirs.close()
    junit_r, junit_w = os.pipe()
    status_r, status_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (junit_r, status_r, out_r):
            os.close(fd)
        _pytest_side(ours, junit_w, status_w, out_w, test_source)
    for fd in (junit_w, status_w, out_w):
        os.close(fd)
    ours.close()
    # Read to the end of all three (the supervisor's time limit bounds the wait).
    caps = {junit_r: MAX_XML + 1, status_r: 100_000, out_r: 1 << 30}
    bufs = {fd: bytearray() for fd in caps}
    open_fds = set(caps)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [])
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                open_fds.discard(fd)
                continue
            buf = bufs[fd]
            buf += chunk[: max(caps[fd] - len(buf), 0)]
            if fd == out_r and len(buf) > 2 * MAX_TAIL:
                del buf[: len(buf) - MAX_TAIL]  # pytest's own text: its tail, for messages
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(solution_pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(solution_pid, 0)
    junit, status, out = bytes(bufs[junit_r]), bytes(bufs[status_r]), bytes(bufs[out_r])
    sys.stderr.write(out.decode("utf-8", "replace"))
    sys.stderr.flush()
    try:
        state = json.loads(status)
    except ValueError:
        state = {"error": "the test side ended without a status"}
    line = {"junit": base64.b64encode(junit).decode("ascii"), "status": state}
    sys.stdout.write("\n" + token + " " + json.dumps(line) + "\n")
    sys.stdout.flush()
    code = state.get("exit")
    return code if isinstance(code, int) and 0 <= code < 128 else 3  # pytest's status


if __name__ == "__main__":
    sys.exit(main())
