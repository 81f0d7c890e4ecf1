"""Runs inside the sandbox (standard library only): a candidate module in a process of its
own, reached from the test side across a socket, so a verdict is decided where the candidate
cannot reach. Shipped as a file beside the drivers that use it (``score_driver``,
``pytest_driver``, ``call_driver``'s codec); never imported on the host except to read its
source. The test side's end (``Conn``, ``Handle``) is ``handles.py``.

The candidate's process (``serve``) loads the module, then answers requests: look up a name,
call, get or set an attribute, apply a builtin (``len``, ``iter``, ``next``, ...). The test side
(``Conn``) sends them. Values cross as tagged JSON: plain data keeps its exact type (an int
subclass arrives as an int, a tuple as a tuple), and anything else stays in the candidate's
process behind a handle (``{"h": id}``); the test side's ``Handle`` forwards attributes, calls
and a few dunders, and compares by identity only, so no object of the candidate's classes,
and none of its ``__eq__``, ever decides a comparison. A value of the test side that has no
plain form (a lambda, an instance of a test's class) cannot cross: ``CannotCross``.

A candidate that exits, is killed or breaks the protocol leaves its ``Conn`` dead: every later
request raises ``ChildGone`` (a BaseException, so a test's ``except Exception`` does not hide
it) and the verdict is a failure whatever the test did with it.
"""

import base64
import builtins
import json
import math
import operator
import os
import socket
import sys
import types
from decimal import Decimal
from fractions import Fraction

MAX_MESSAGE = 64 << 20  # bytes of one reply; a larger one is a protocol breach
MAX_DEPTH = 200
BIG_INT_BITS = 4000  # larger ints travel as hex: JSON parsers cap decimal digits
BUILTIN_EXCEPTIONS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


class ChildGone(BaseException):
    """The candidate's process ended, was killed, or broke the protocol."""


class LoadFailed(Exception):
    """The candidate's module did not load; the message says why."""


class CannotCross(BaseException):
    """A value of the test side has no plain form to send to the candidate's process."""


class RemoteExit(Exception):
    """The candidate raised SystemExit, KeyboardInterrupt or GeneratorExit inside a call: a
    failed call, never the end of the test side's run."""


# -- framing ---------------------------------------------------------------------------------


def send(sock, obj):
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("closed")
        buf += chunk
    return bytes(buf)


def recv(sock):
    n = int.from_bytes(_exact(sock, 4), "big")
    if n > MAX_MESSAGE:
        raise ValueError(f"a message of {n} bytes")
    return json.loads(_exact(sock, n).decode("utf-8"))


# -- values ----------------------------------------------------------------------------------


def encode(value, ref, depth=0):
    """Tagged JSON of ``value``: plain data by exact type, anything else as ``ref(value)`` (a
    handle), or CannotCross when ``ref`` is None."""
    if depth > MAX_DEPTH:
        raise CannotCross("a value nested too deep")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if value.bit_length() <= BIG_INT_BITS else {"i": format(value, "x")}
    if kind is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    if kind is list:
        return [encode(v, ref, depth + 1) for v in value]
    if kind is tuple:
        return {"t": [encode(v, ref, depth + 1) for v in value]}
    if kind is dict:
        pairs = value.items()
        return {"d": [[encode(k, ref, depth + 1), encode(v, ref, depth + 1)] for k, v in pairs]}
    if kind is set or kind is frozenset:
        return {"s": [encode(v, ref, depth + 1) for v in value], "frozen": kind is frozenset}
    if kind is bytes or kind is bytearray:
        return {"b": base64.b64encode(value).decode("ascii"), "mutable": kind is bytearray}
    if kind is complex:
        return {"c": [encode(value.real, ref), encode(value.imag, ref)]}
    if kind is Decimal:
        return {"dec": str(value)}
    if kind is Fraction:
        return {"fr": [encode(value.numerator, ref), encode(value.denominator, ref)]}
    if ref is None:
        raise CannotCross(f"a {kind.__name__} has no plain form")
    return ref(value, depth)


def decode(data, resolve, depth=0):
    """The value of ``encode``'s JSON; ``resolve(tag)`` turns a handle tag into a value.
    Raises ValueError on anything else."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is float or kind is str:
        return data
    if kind is list:
        return [decode(v, resolve, depth + 1) for v in data]
    if kind is not dict:
        raise ValueError(f"unexpected {kind.__name__}")
    if "h" in data:  # first: a handle's tag has a "t" of its own (its class's handle)
        return resolve(data)
    if "t" in data:
        return tuple(decode(v, resolve, depth + 1) for v in data["t"])
    if "d" in data:
        return {decode(k, resolve, depth + 1): decode(v, resolve, depth + 1) for k, v in data["d"]}
    if "s" in data:
        items = [decode(v, resolve, depth + 1) for v in data["s"]]
        return frozenset(items) if data.get("frozen") else set(items)
    if "f" in data:
        return float(str(data["f"]))
    if "i" in data:
        return int(str(data["i"]), 16)
    if "b" in data:
        raw = base64.b64decode(str(data["b"]), validate=True)
        return bytearray(raw) if data.get("mutable") else raw
    if "c" in data:
        real, imag = (decode(v, resolve, depth + 1) for v in data["c"])
        return complex(float(real), float(imag))
    if "dec" in data:
        return Decimal(str(data["dec"]))
    if "fr" in data:
        num, den = (decode(v, resolve, depth + 1) for v in data["fr"])
        return Fraction(int(num), int(den))
    raise ValueError(f"unknown value tag in {sorted(data)[:5]}")


# -- the candidate's side --------------------------------------------------------------------

_PLAIN_BASES = (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, frozenset, set)


def _base_value(value):
    """A subclass of a plain type (IntEnum, namedtuple, Counter) as its base type's value,
    read through the base type's own methods."""
    if isinstance(value, bool):
        return bool.__bool__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, complex):
        return complex(float.__float__(value.real), float.__float__(value.imag))
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes | bytearray):
        return bytes(memoryview(value))
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, tuple):
        return tuple(tuple.__iter__(value))
    if isinstance(value, dict):
        return dict(dict.items(value))
    if isinstance(value, frozenset):
        return frozenset(frozenset.__iter__(value))
    return set(set.__iter__(value))


def _builtin_base(cls):
    for klass in cls.__mro__:
        if BUILTIN_EXCEPTIONS.get(klass.__name__) is klass:
            return klass.__name__
    return "Exception"


class _Table:
    """The candidate's objects the test side holds handles to (kept alive for the run)."""

    def __init__(self):
        self.objects = {}
        self.ids = {}

    def ref(self, value, depth=0):
        if isinstance(value, _PLAIN_BASES):
            return encode(_base_value(value), self.ref, depth + 1)
        hid = self.id_of(value)
        if isinstance(value, type):
            if issubclass(value, BaseException):
                return {"h": hid, "k": "exc", "n": value.__name__, "base": _builtin_base(value)}
            return {"h": hid, "k": "class", "n": value.__name__}
        return {"h": hid, "k": "object", "t": self.id_of(type(value))}

    def id_of(self, value):
        hid = self.ids.get(id(value))
        if hid is None:
            hid = len(self.objects) + 1
            self.objects[hid] = value
            self.ids[id(value)] = hid
        return hid

    def resolve(self, tag):
        return self.objects[int(tag["h"])]


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
    try:
        message = str(exc)[:2000]
    except BaseException:
        message = ""
    kind = type(exc)
    return {
        "type": kind.__name__,
        "msg": message,
        "t": table.id_of(kind),
        "base": _builtin_base(kind),
        "builtin": BUILTIN_EXCEPTIONS.get(kind.__name__) is kind,
    }


def _answer(msg, namespace, table):
    op = msg["op"]
    args = [decode(a, table.resolve) for a in msg.get("a", ())]
    if op == "get":
        name = str(msg["name"])
        if name not in namespace:
            return {"missing": True}
        return {"v": encode(namespace[name], table.ref)}
    target = table.resolve(msg)
    if op == "call":
        kwargs = {str(k): decode(v, table.resolve) for k, v in msg.get("kw", ())}
        value = target(*args, **kwargs)
    elif op == "getattr":
        value = getattr(target, str(msg["name"]))
    elif op == "setattr":
        value = setattr(target, str(msg["name"]), args[0])
    elif op == "delattr":
        value = delattr(target, str(msg["name"]))
    elif op == "builtin":
        value = _BUILTINS[str(msg["f"])](target, *args)
    else:
        raise ValueError(f"unknown request {op!r}")
    return {"v": encode(value, table.ref)}


def serve(sock, namespace, load_error):
    """Answer the test side's requests until it goes away. ``load_error``: why the module
    did not load (every request then answers it)."""
    table = _Table()
    while True:
        try:
            msg = recv(sock)
        except BaseException:
            os._exit(0)
        try:
            if load_error is not None:
                reply = {"load_error": load_error}
            elif msg.get("op") == "hello":
                reply = {"v": None}
            else:
                reply = _answer(msg, namespace, table)
        except BaseException as exc:  # SystemExit from sys.exit() in a call too
            try:
                reply = {"raise": _describe(exc, table)}
            except BaseException:
                reply = {"raise": {"type": "Exception", "msg": "", "base": "Exception"}}
        try:
            send(sock, reply)
        except BaseException:
            os._exit(0)


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


def socket_pair():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


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
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fence  # beside this file; read before the fence closes the driver's folder

    del sys.path[0]
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
