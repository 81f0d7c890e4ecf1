"""Runs inside the sandbox (standard library and the image's pytest): the crew's verification,
``pytest test_solution.py`` against ``solution.py``, decided where the solution cannot reach,
and nowhere else. Shipped as a file by ``codegen.sandbox.base`` with the supervisor,
``isolation``, ``handles``, ``fence`` and ``program_run`` beside it.

The driver reads its token, the tests and the solution, and makes two folders of random names:
the solution's scratch folder (a copy of ``solution.py``; the working directory of both sides,
since tests write files the code under test reads) and the tests' folder (pytest's rootdir and
the file it collects). It then starts the solution's process as a fresh interpreter
(``isolation.py serve``: nothing of the driver's memory in it), which enters the file fence
(``fence.enter``: it may write only its scratch folder), loads ``solution.py`` and answers
calls. The test side is the driver's child (non-dumpable, as the driver): ``solution`` in its
``sys.modules`` is a stand-in whose names the tests ask for (never a list the solution reports)
resolve across the socket, and pytest runs in that process with no conftest, no ini file, no
cache, the test module compiled from the text read before the solution started, nothing else
collected (no package ``__init__.py`` above it, nothing in a folder put in its place), and the
JUnit report written to a pipe only it holds. No folder the solution can write is on
``sys.path``. The driver prints the report, a status and what the fence said under the token;
a solution that exits, is killed, or breaks the protocol adds a collection error, so the
suite cannot pass by going silent. A test that meets a value with no form to cross in fails
``cannot_isolate`` (it did not run as written), whatever it did with the error.

Tests of a program use the ``program`` fixture (``program_run.Program``): each run a fresh
fenced ``python3 solution.py ARGS`` in the scratch folder, forked and exec'ed by the test side,
judged there, and kept as a JUnit property of the test. Tests that never import ``solution``
start no solution's process (a program's top-level code runs only as a program); the report's
fence is then what the first run's fence said.
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
import tempfile
import types

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
import handles  # noqa: E402
import isolation  # noqa: E402
import program_run  # noqa: E402
from supervisor import _close_except, _non_dumpable, _take  # noqa: E402

# Everything the driver needs from its folder is imported: no process of the run imports from
# it again (the solution can write there when the kernel has no fence).
sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]

MAX_XML = 4_000_000
MAX_TAIL = 20_000
MAX_FENCE = 300


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


def _plugin(source, test_path, conn, status):
    """A pytest plugin that collects only ``test_path`` and compiles it from ``source``, the
    text the driver read before the solution's process started (what is on disk is never run;
    the file must still exist for pytest to collect it), and fails a test that met a value with
    no form to cross in (``status["cross"]``: one met outside any test)."""
    import pathlib

    import pytest
    from _pytest.assertion.rewrite import rewrite_asserts

    test_path = pathlib.Path(test_path)
    flagged = set()

    class _Module(pytest.Module):
        def _getobj(self):
            module = types.ModuleType("test_solution")
            module.__file__ = str(self.path)
            tree = ast.parse(source, str(self.path))
            rewrite_asserts(tree, source.encode("utf-8"), str(self.path), self.config)
            sys.modules["test_solution"] = module
            exec(compile(tree, str(self.path), "exec", dont_inherit=True), module.__dict__)
            return module

    def _crossed(call):
        if conn.cross is not None:
            return conn.cross
        if call.excinfo is not None and call.excinfo.errisinstance(isolation.CannotCross):
            return str(call.excinfo.value)
        return None

    class _Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_ignore_collect(self, collection_path, config):
            # A package's __init__.py above the tests would be imported on this side.
            return True if collection_path != test_path else None

        if hasattr(pytest, "Dir"):  # pytest 8+: folders are collected by a hook of their own

            @pytest.hookimpl(tryfirst=True)
            def pytest_collect_directory(self, path, parent):
                return pytest.Dir.from_parent(parent, path=path)  # never a Package

        @pytest.hookimpl(tryfirst=True)
        def pytest_pycollect_makemodule(self, module_path, parent):
            if module_path == test_path:
                return _Module.from_parent(parent, path=module_path)
            return None

        def pytest_collection_finish(self, session):
            status["cross"] = conn.cross

        def pytest_runtest_logstart(self, nodeid, location):
            conn.cross = None

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            what = _crossed(call)
            if what is not None and item.nodeid not in flagged:
                flagged.add(item.nodeid)
                report = outcome.get_result()
                report.outcome = "failed"
                report.longrepr = f"cannot_isolate: a value cannot cross: {what}"[:1000]

    return _Plugin()


def _program_fixture(scratch, status):
    """A plugin module holding the ``program`` fixture: ``program.run(...)`` and
    ``program.check(...)`` run ``python3 solution.py ARGS`` of ``scratch`` as a fresh fenced
    process each (``program_run.Program``); every run is kept on the test's JUnit properties,
    and the first run's fence in ``status``."""
    import pytest

    @pytest.fixture
    def program(request):
        def record(entry, fence_said):
            status.setdefault("program_fence", fence_said)
            request.node.user_properties.append((program_run.PROPERTY, json.dumps(entry)))

        return program_run.Program(scratch, record)

    module = types.ModuleType("codegen_program_fixture")
    module.program = program
    return module


def _uses_solution(source):
    """Whether the tests' text imports ``solution`` (or names it in a string, as
    ``importlib.import_module("solution")`` would): tests of a program alone run it through
    the ``program`` fixture, and its module is then never loaded (a program's top-level code
    that reads stdin or runs forever would otherwise fail or stall the load)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # pytest reports the error; the solution's process as always
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "solution" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "solution":
            return True
        if isinstance(node, ast.Constant) and node.value == "solution":
            return True
    return False


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


def _pytest_side(sock, junit_w, status_w, out_w, test_source, folders):
    """In the driver's child: pytest over the stand-in; a status line on ``status_w``."""
    status = {"exit": None}
    conn = handles.Conn(sock)
    scratch, tests = folders
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        _close_except({sock.fileno(), junit_w, status_w})
        isolation.work_in(scratch)  # the test's files beside the candidate's
        module = _StandIn("solution")
        module.__dict__["_codegen_conn"] = conn
        sys.modules["solution"] = module
        import pytest

        status["load_error"] = conn.hello() if _uses_solution(test_source) else None
        if status["load_error"] is None:
            for name in _eval_names(test_source):
                with contextlib.suppress(AttributeError):
                    module.__dict__[name] = conn.get(name)
        test_path = os.path.join(tests, "test_solution.py")
        args = [
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",  # never a conftest, wherever the solution could write one
            "-c",
            os.devnull,
            f"--rootdir={tests}",
            # tmp_path in the scratch folder: a test may hand its files to the solution
            f"--basetemp={os.path.join(scratch, 'pytest-tmp')}",
            "--tb=short",
            f"--junitxml=/proc/self/fd/{junit_w}",
            test_path,
        ]
        plugin = _plugin(test_source, test_path, conn, status)
        fixture = _program_fixture(scratch, status)
        status["exit"] = int(pytest.main(args, plugins=[plugin, fixture]))
    except isolation.ChildGone as exc:
        status["dead"] = str(exc)
    except BaseException as exc:
        status["error"] = f"{type(exc).__name__}: {exc}"[:500]
    finally:
        status["dead"] = status.get("dead") or conn.dead
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(BaseException):
            os.write(status_w, json.dumps(status).encode())
        os._exit(0)


def _solution_process(sock, scratch, fence_w):
    """Fork and exec a fresh interpreter serving ``solution.py`` of ``scratch`` (its working
    directory) on ``sock``, saying what its fence did on ``fence_w``; its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            fds = (sock.fileno(), fence_w)
            for fd in fds:
                os.set_inheritable(fd, True)
            _close_except(set(fds))
            os.chdir(scratch)
            script = os.path.join(DRIVER_DIR, "isolation.py")
            argv = [sys.executable, "-s", "-P", "-B", script, "serve", *map(str, fds)]
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    return pid


def _folder(prefix, name, text):
    """A new folder of a random name beside the driver holding ``name`` with ``text``."""
    folder = tempfile.mkdtemp(prefix=prefix, dir=DRIVER_DIR)
    with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
        fh.write(text)
    return folder


def main():
    _non_dumpable()
    token = _take("token.txt").strip()
    sources = {}
    for name in ("test_solution.py", "solution.py"):
        with open(name, encoding="utf-8") as fh:
            sources[name] = fh.read()  # before the solution's process exists
        os.remove(name)
    test_source = sources["test_solution.py"]
    scratch = _folder("scratch-", "solution.py", sources["solution.py"])
    tests = _folder("tests-", "test_solution.py", test_source)
    ours, theirs = isolation.socket_pair()
    fence_r, fence_w = os.pipe()
    uses_solution = _uses_solution(test_source)
    solution_pid = _solution_process(theirs, scratch, fence_w) if uses_solution else None
    theirs.close()
    os.close(fence_w)
    junit_r, junit_w = os.pipe()
    status_r, status_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (junit_r, status_r, out_r, fence_r):
            os.close(fd)
        _pytest_side(ours, junit_w, status_w, out_w, test_source, (scratch, tests))
    for fd in (junit_w, status_w, out_w):
        os.close(fd)
    ours.close()
    # Read to the end of all four (the supervisor's time limit bounds the wait).
    caps = {junit_r: MAX_XML + 1, status_r: 100_000, out_r: 1 << 30, fence_r: MAX_FENCE}
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
    if solution_pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(solution_pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    if solution_pid is not None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(solution_pid, 0)
    junit, status, out = bytes(bufs[junit_r]), bytes(bufs[status_r]), bytes(bufs[out_r])
    fence_said = bytes(bufs[fence_r]).decode("utf-8", "replace")
    sys.stderr.write(out.decode("utf-8", "replace"))
    sys.stderr.flush()
    try:
        state = json.loads(status)
    except ValueError:
        state = {"error": "the test side ended without a status"}
    line = {
        "junit": base64.b64encode(junit).decode("ascii"),
        "status": state,
        "fence": fence_said
        or str(state.get("program_fence") or "")[:MAX_FENCE]
        or (
            "none: the solution's process ended before its fence"
            if uses_solution
            else "none: no program ran"
        ),
    }
    sys.stdout.write("\n" + token + " " + json.dumps(line) + "\n")
    sys.stdout.flush()
    code = state.get("exit")
    return code if isinstance(code, int) and 0 <= code < 128 else 3  # pytest's status


if __name__ == "__main__":
    sys.exit(main())
