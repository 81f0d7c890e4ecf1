"""Runs inside the sandbox (standard library only; numpy, PIL and xml.etree only where the
process has already imported them): a candidate module in a process of its own, reached from
the test side across a socket, so a verdict is decided where the candidate cannot reach.
Shipped as files beside the drivers that use it (``score_driver``, ``pytest_driver``,
``call_driver``'s codec; ``protocol.isolation_files``); never imported on the host except to
read its source. This module is the candidate's side and the one the drivers import; the
wire (``isolation_wire``), what the codec knows of a value's kind (``isolation_kinds``) and
the codec (``isolation_codec``) sit beside it, and the test side's end (``Conn``, ``Handle``)
is ``handles.py``.

The candidate's process (``serve``) loads the module, then answers requests: look up a name,
call, get or set an attribute, apply a builtin (``len``, ``iter``, ``next``, ...). The test side
(``Conn``) sends them. Values cross as tagged JSON (``Codec``): plain data keeps its exact type
(integers of any size, datetimes, deques, Counters, named tuples, enum members, numpy arrays,
PIL images, ...), and anything else of the candidate stays in its process behind a handle
(``{"h": id}``), classes, functions and modules too, and comes back as itself when the test
passes it on; the test side's ``Handle`` forwards attributes, calls and a few dunders, and
compares by identity only, so no object of the candidate's classes, and none of its
``__eq__``, ever decides a comparison. A callable of the test side (a lambda, a MagicMock)
crosses as a call-only proxy: the candidate may call it with values that cross, and the test
side calls it while it waits for its own request's reply (the same socket, nested); reading
any attribute of it is refused, and the test then ends ``CannotCross``. Any other value of
the test side without a plain form (an instance of a test's class) cannot cross:
``CannotCross``, which the drivers report as ``cannot_isolate``, never as a pass.

Aliasing. A method may return (or keep) a container that is the object's own state, and a
test may mutate it (``c.items().append(x)``; ``calc.apply(stack)`` sorting the test's list in
place). Such containers are mirrored, not copied: each side keeps an id for every container
that may be shared (all of a request's, and a reply's that something else in the replying
process still references: a reference count above what the reply itself accounts for), and
every message carries the contents of the mirrored containers its sender changed since its
last message, written into the receiver's copy in place. Between two messages only one side
runs, so at every point either side can observe, the two copies agree, as one object would:
the test's ``len(c)`` after its append sees the appended item. A change that cannot be
written in place (an array or image that changed its shape) ends the test ``CannotCross``.
What the mirror cannot see is a mutable object that is not a container (an instance of a
test's class): it cannot cross at all.

The threat model: every check that matters is made on the test side, since the candidate owns
its process (it can patch this module there). The test side builds only plain values,
handles, its own proxies and mirrored containers from what it reads (depth and size bounded);
a candidate's sync may touch only containers the test handed it or it made; a
``StopIteration`` ends only a ``next`` request (from any other call it is a RuntimeError, so a
candidate cannot end a test's ``all(map(...))`` early).

A candidate that exits, is killed or breaks the protocol leaves its ``Conn`` dead: every later
request raises ``ChildGone`` (a BaseException, so a test's ``except Exception`` does not hide
it) and the verdict is a failure whatever the test did with it.
"""

import collections
import enum
import operator
import os
import socket
import sys
import types

if __name__ == "__main__":  # ``isolation.py serve``: -P leaves this file's folder off sys.path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from isolation_codec import Codec
from isolation_kinds import (
    _PLAIN_BASES,
    BUILTIN_EXCEPTIONS,
    _base_value,
    _builtin_base,
    _exception_info,
    _pure_enum,
    _pure_namedtuple,
)
from isolation_wire import CannotCross, recv, send

# The drivers import this module alone and reach the wire's names through it (``isolation.X``).
from isolation_wire import ChildGone as ChildGone
from isolation_wire import LoadFailed as LoadFailed
from isolation_wire import _exact as _exact
from isolation_wire import encode as encode
from isolation_wire import socket_pair as socket_pair

# -- the candidate's side --------------------------------------------------------------------


class _Proxy:
    """A callable of the test side: calling it asks the test side to call it, with values
    that cross; nothing else about it can be read here."""

    __slots__ = ("_pid", "_table")

    def __init__(self, table, pid):
        object.__setattr__(self, "_table", table)
        object.__setattr__(self, "_pid", pid)

    def __call__(self, *args, **kwargs):
        return self._table.callback(self._pid, args, kwargs)

    def __getattr__(self, name):
        return self._table.callback(self._pid, (), {}, attr=name)


class _Table(Codec):
    """The candidate's side: its objects the test side holds handles to (kept alive for
    the run), and the requests it answers."""

    def __init__(self, sock=None, namespace=None):
        super().__init__(1)
        self.sock = sock
        self.namespace = namespace if namespace is not None else {}
        self.objects = {}
        self.ids = {}
        self.proxies = {}
        self.classes = {}  # named tuple classes of the test side, exception classes

    def id_of(self, value):
        hid = self.ids.get(id(value))
        if hid is None:
            hid = len(self.objects) + 1
            self.objects[hid] = value
            self.ids[id(value)] = hid
        return hid

    def ref(self, value, depth=0):
        """A handle's tag (and the plain base of a plain type's subclass)."""
        return self._other(value, depth, None)

    def _other(self, value, depth, fresh):
        if type(value) is _Proxy:
            return {"cb": object.__getattribute__(value, "_pid")}
        if isinstance(value, type):
            return self._class_tag(value)
        cls = type(value)
        if _pure_namedtuple(cls) is not None:
            items = [self._enc(v, depth + 1, fresh) for v in tuple.__iter__(value)]
            return {"nt": self._class_tag(cls), "v": items}
        if isinstance(value, enum.Enum) and _pure_enum(cls) is not None:
            return {"en": self._class_tag(cls), "n": value._name_}
        if isinstance(value, _PLAIN_BASES):
            return self._enc(_base_value(value), depth + 1, fresh)
        return {"h": self.id_of(value), "k": "object", "t": self.id_of(cls)}

    def _class_tag(self, cls):
        hid = self.id_of(cls)
        if issubclass(cls, BaseException):
            return {"h": hid, "k": "exc", "n": cls.__name__, "base": _builtin_base(cls)}
        fields = _pure_namedtuple(cls)
        if fields is not None:
            return {"h": hid, "k": "nt", "n": cls.__name__, "f": fields}
        members = _pure_enum(cls)
        if members is not None:
            return {"h": hid, "k": "en", "n": cls.__name__, "base": members[0], "m": members[1]}
        return {"h": hid, "k": "class", "n": cls.__name__}

    def _handle(self, tag):
        return self.objects[int(tag["h"])]

    def resolve(self, tag):
        return self._handle(tag)

    def _proxy_of(self, tag):
        pid = int(tag["cb"])
        if pid not in self.proxies:
            self.proxies[pid] = _Proxy(self, pid)
        return self.proxies[pid]

    def _namedtuple_class(self, info):
        if "h" in info:
            return self._handle(info)
        key = (str(info["n"]), tuple(str(f) for f in info["f"]))
        if key not in self.classes:
            self.classes[key] = collections.namedtuple(*key)
        return self.classes[key]

    def _enum_class(self, info):
        return self._handle(info)

    def _exception(self, info):
        name = str(info.get("type", "Exception"))[:100]
        cls = BUILTIN_EXCEPTIONS.get(name) if info.get("builtin") else None
        if cls is None:
            base = BUILTIN_EXCEPTIONS.get(str(info.get("base")), Exception)
            cls = self.classes.setdefault((name, base), type(name, (base,), {}))
        return cls(str(info.get("msg", "")))

    def answer(self, msg):
        op = msg["op"]
        args = [self.dec(a) for a in msg.get("a", ())]
        kwargs = {str(k): self.dec(v) for k, v in msg.get("kw", ())}
        self.apply(msg)
        if op == "get":
            name = str(msg["name"])
            if name not in self.namespace:
                return {"missing": True}
            return {"v": self.reply(self.namespace[name])}
        target = self.objects[int(msg["h"])]
        if op == "call":
            return {"v": self.reply(target(*args, **kwargs))}
        if op == "getattr":
            return {"v": self.reply(getattr(target, str(msg["name"])))}
        if op == "setattr":
            setattr(target, str(msg["name"]), args[0])
            return {"v": None}
        if op == "delattr":
            delattr(target, str(msg["name"]))
            return {"v": None}
        if op == "builtin":
            return {"v": self.reply(_BUILTINS[str(msg["f"])](target, *args))}
        raise ValueError(f"unknown request {op!r}")

    def handle(self, msg):
        """The reply to one request, with this side's changes to the mirrored containers."""
        try:
            reply = self.answer(msg)
        except CannotCross as exc:
            reply = {"cross": str(exc)[:300]}
        except BaseException as exc:  # SystemExit from sys.exit() in a call too
            try:
                reply = {"raise": _describe(exc, self)}
            except BaseException:
                reply = {"raise": {"type": "Exception", "msg": "", "base": "Exception"}}
        try:
            reply["sync"], reply["drop"] = self.changes()
        except BaseException as exc:
            reply = {"cross": f"a changed container cannot cross: {exc}"[:300]}
        return reply

    def callback(self, pid, args, kwargs, attr=None):
        """Call the test side's callable ``pid`` (or ask for its attribute ``attr``, which
        the test side refuses), answering its requests until it replies."""
        msg = {"cb": pid, "a": [self.encode_args(a) for a in args]}
        if kwargs:
            msg["kw"] = [[str(k), self.encode_args(v)] for k, v in kwargs.items()]
        if attr is not None:
            msg["attr"] = str(attr)[:100]
        msg["sync"], msg["drop"] = self.changes()
        _transmit(self.sock, msg)
        while True:
            incoming = _receive(self.sock)
            if "op" not in incoming:
                break
            _transmit(self.sock, self.handle(incoming))
        value = self.dec(incoming["v"]) if "v" in incoming else None
        self.apply(incoming)
        if "raise" in incoming:
            raise self._exception(incoming["raise"])
        return value


_BUILTINS = {
    "len": len,
    "iter": iter,
    "next": next,
    "bool": bool,
    "str": str,
    "repr": repr,
    "hash": hash,
    "int": int,
    "float": float,
    "index": operator.index,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
}


def _describe(exc, table):
    return dict(_exception_info(exc), t=table.id_of(type(exc)))


def _receive(sock):
    try:
        msg = recv(sock)
        if not isinstance(msg, dict):
            raise ValueError("not an object")
        return msg
    except BaseException:
        os._exit(0)


def _transmit(sock, msg):
    try:
        send(sock, msg)
    except BaseException:
        os._exit(0)


def serve(sock, namespace, load_error):
    """Answer the test side's requests until it goes away. ``load_error``: why the module
    did not load (every request then answers it)."""
    table = _Table(sock, namespace)
    while True:
        msg = _receive(sock)
        if "op" not in msg:
            os._exit(0)  # a reply to a callback nobody made: the protocol is broken
        if load_error is not None:
            reply = {"load_error": load_error}
        elif msg.get("op") == "hello":
            reply = {"v": None}
        else:
            reply = table.handle(msg)
        _transmit(sock, reply)


def load_module(prompt, candidate, entry_point, name="solution"):
    """The candidate's namespace as the scoring harness has always built it (the prompt's
    header first, the candidate on top); (namespace, None) or (namespace, why it failed)."""
    namespace = {"__name__": name}
    try:
        prompt_code = compile(prompt, "prompt.py", "exec") if prompt else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        prompt_code = None  # a prompt in prose is no module to run first
    try:
        code = compile(candidate, "solution.py", "exec")
        if prompt_code is not None:
            exec(prompt_code, namespace)
        stub = namespace.get(entry_point) if entry_point else None
        exec(code, namespace)
    except BaseException as exc:
        return namespace, f"while loading the module: {type(exc).__name__}: {exc}"[:500]
    if entry_point and namespace.get(entry_point) is stub:
        return namespace, f"the module does not define {entry_point}()"
    return namespace, None


def fork_zygote(serve):
    """A zygote forked now, before the driver reads its token or job, so it holds neither:
    ``serve(its end of a socket pair)`` in the child (never returns); the driver's end and
    the zygote's pid."""
    ours, theirs = socket_pair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        serve(theirs)
    theirs.close()
    return ours, pid


def work_in(scratch):
    """The test side's working folder and temporary folder: the candidate's scratch folder
    (on no sys.path), so a file a test makes in its cwd or in ``tempfile.gettempdir()`` (ClassEval
    _92's database) is one the fenced candidate may open; ``fence.enter`` points the
    candidate's ``TMPDIR`` there too."""
    import tempfile

    os.chdir(scratch)
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = None  # chosen again, from TMPDIR


def fenced(enter, scratch, report_fd):
    """In a candidate's process, before any of its code: the file fence (``enter``:
    ``fence.enter``, write only ``scratch``) and what it said written on ``report_fd``, then
    closed, so the driver records it beside the verdict (``landlock`` or ``none: <why>``)."""
    try:
        said = str(enter(scratch))
    except Exception as exc:  # the process then runs unfenced, and the record says so
        said = f"none: the fence failed: {type(exc).__name__}: {exc}"
    data = said.encode("utf-8", "replace")[:300]
    try:
        while data:
            data = data[os.write(report_fd, data) :]
    finally:
        os.close(report_fd)


def _serve_file(fd, fence_fd):
    """``isolation.py serve FD FENCE_FD`` (a fresh interpreter, its working directory the
    scratch folder the driver made for it): enter the fence, then ``solution.py`` of that
    folder as the module ``solution``, served on the socket FD. Nothing the solution writes is
    on any ``sys.path``, its own included."""
    import fence  # beside this file; read before the fence closes the driver's folder

    del sys.path[0]  # this file's folder, put first when it started
    scratch = os.getcwd()
    fenced(fence.enter, scratch, fence_fd)
    sock = socket.socket(fileno=fd)
    module = types.ModuleType("solution")
    module.__file__ = os.path.join(scratch, "solution.py")
    sys.modules["solution"] = module
    why = None
    try:
        with open("solution.py", encoding="utf-8") as fh:
            source = fh.read()
        exec(compile(source, "solution.py", "exec"), module.__dict__)
    except BaseException as exc:
        why = f"{type(exc).__name__}: {exc}"[:500]
    serve(sock, module.__dict__, why)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "serve":
    _serve_file(int(sys.argv[2]), int(sys.argv[3]))
