"""Runs inside the sandbox (standard library only; numpy, PIL and xml.etree only where the
process has already imported them): a candidate module in a process of its own, reached from
the test side across a socket, so a verdict is decided where the candidate cannot reach.
Shipped as a file beside the drivers that use it (``score_driver``, ``pytest_driver``,
``call_driver``'s codec); never imported on the host except to read its source. The test
side's end (``Conn``, ``Handle``) is ``handles.py``.

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

import base64
import builtins
import collections
import datetime
import enum
import importlib
import itertools
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

_NOT_LEAF = object()


def _leaf(value):
    """The tagged JSON of a scalar of an exact plain type, or ``_NOT_LEAF``."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if value.bit_length() <= BIG_INT_BITS else {"i": format(value, "x")}
    if kind is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode("ascii"), "mutable": False}
    if kind is complex:
        return {"c": [_leaf(value.real), _leaf(value.imag)]}
    if kind is Decimal:
        return {"dec": str(value)}
    if kind is Fraction:
        return {"fr": [_leaf(value.numerator), _leaf(value.denominator)]}
    return _NOT_LEAF


def _decode_leaf(data):
    """The value of a scalar's tag (``_leaf``), or ``_NOT_LEAF``."""
    if "f" in data:
        return float(str(data["f"]))
    if "i" in data:
        return int(str(data["i"]), 16)
    if "b" in data:
        raw = base64.b64decode(str(data["b"]), validate=True)
        return bytearray(raw) if data.get("mutable") else raw
    if "c" in data:
        real, imag = (_decode_leaf(v) if type(v) is dict else v for v in data["c"])
        return complex(float(real), float(imag))
    if "dec" in data:
        return Decimal(str(data["dec"]))
    if "fr" in data:
        num, den = (_decode_leaf(v) if type(v) is dict else v for v in data["fr"])
        if type(num) is not int or type(den) is not int:
            raise ValueError("a fraction of non-integers")
        return Fraction(num, den)
    return _NOT_LEAF


def encode(value, ref, depth=0):
    """Tagged JSON of ``value``: plain data by exact type, anything else as ``ref(value)`` (a
    handle), or CannotCross when ``ref`` is None. (``call_driver``'s codec; the two processes
    of a verdict speak ``Codec``'s richer form.)"""
    if depth > MAX_DEPTH:
        raise CannotCross("a value nested too deep")
    leaf = _leaf(value)
    if leaf is not _NOT_LEAF:
        return leaf
    kind = type(value)
    if kind is list:
        return [encode(v, ref, depth + 1) for v in value]
    if kind is tuple:
        return {"t": [encode(v, ref, depth + 1) for v in value]}
    if kind is dict:
        pairs = value.items()
        return {"d": [[encode(k, ref, depth + 1), encode(v, ref, depth + 1)] for k, v in pairs]}
    if kind is set or kind is frozenset:
        return {"s": [encode(v, ref, depth + 1) for v in value], "frozen": kind is frozenset}
    if kind is bytearray:
        return {"b": base64.b64encode(value).decode("ascii"), "mutable": True}
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
    leaf = _decode_leaf(data)
    if leaf is _NOT_LEAF:
        raise ValueError(f"unknown value tag in {sorted(data)[:5]}")
    return leaf


# -- the codec of the two processes ------------------------------------------------------------

_PLAIN_BASES = (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, frozenset, set)
_PURE_BUILTINS = frozenset(
    ["abs", "all", "any", "ascii", "bin", "callable", "chr", "divmod", "format", "hash", "hex",
     "id", "isinstance", "issubclass", "iter", "len", "max", "min", "next", "oct", "ord", "pow",
     "print", "repr", "round", "sorted", "sum"]
)  # fmt: skip
# Builtins that cross by name (the very object on the other side): every type, and functions
# that only compute. A test's ``open`` or ``exec`` never becomes something the candidate calls.
BY_NAME = {
    name: value
    for name, value in vars(builtins).items()
    if (isinstance(value, type) and not name.startswith("_")) or name in _PURE_BUILTINS
}
_NAME_OF = {id(value): name for name, value in BY_NAME.items()}
_NEVER_CALLED_NAMES = ["open", "exec", "eval", "compile", "__import__", "getattr", "setattr",
    "delattr", "globals", "locals", "vars", "breakpoint", "input", "exit", "quit",
    "help"]  # fmt: skip
NEVER_CALLED = tuple(getattr(builtins, n) for n in _NEVER_CALLED_NAMES if hasattr(builtins, n))
# Standard-library classes that cross by name (a type map of ``{"when": datetime}``).
_STD_MODULES = ("collections", "datetime", "decimal", "fractions", "numbers", "re", "uuid")
_MUTABLE_KINDS = {
    list: "l",
    dict: "d",
    set: "s",
    bytearray: "ba",
    collections.deque: "dq",
    collections.OrderedDict: "od",
    collections.defaultdict: "dd",
    collections.Counter: "ctr",
}
_SCALARS = frozenset((type(None), bool, int, float, str, bytes, complex, tuple, frozenset))
_SUBCLASS_KINDS = ((list, "l"), (dict, "d"), (set, "s"), (bytearray, "ba"))
_NT_KEYS = frozenset(vars(collections.namedtuple("_", "a"))) - {"a"} | {
    "__annotations__",
    "__orig_bases__",
    "__qualname__",
    "__firstlineno__",
    "__static_attributes__",
}
_ENUM_BASES = {
    base.__name__: base
    for base in (enum.Enum, enum.IntEnum, enum.Flag, enum.IntFlag, getattr(enum, "StrEnum", None))
    if base is not None
}
_ENUM_KEYS = frozenset().union(
    *(
        set(vars(base("_", {"a": "a" if issubclass(base, str) else 1}))) - {"a"}
        for base in _ENUM_BASES.values()
    )
) | {"__qualname__", "_ignore_", "__annotations__", "__firstlineno__", "__static_attributes__"}
MAX_NESTING = 50  # calls of the other side's callables inside one another


def _module(name):
    return sys.modules.get(name)


def _mutable_kind(value):
    """How a mutable container is mirrored (``Codec``), or None when it is not one."""
    kind = _MUTABLE_KINDS.get(type(value))
    if kind is not None or type(value) in _SCALARS:
        return kind
    np = _module("numpy")
    if np is not None and type(value) is np.ndarray:
        return "np" if value.dtype.fields is None and not value.dtype.hasobject else None
    tree = _module("xml.etree.ElementTree")
    if tree is not None and type(value) is getattr(tree, "Element", None):
        return "xe"
    image = _module("PIL.Image")
    if image is not None and isinstance(value, image.Image):
        return "pil"
    for base, kind in _SUBCLASS_KINDS:
        if isinstance(value, base):
            return kind
    return None


def _snapshot(kind, obj):
    """What a mirrored container holds, to tell whether it changed: its members themselves
    (compared by identity) or its bytes."""
    if kind == "l":
        return tuple(list.__iter__(obj))
    if kind == "dq":
        return tuple(obj)
    if kind == "od":
        return tuple(itertools.chain.from_iterable(collections.OrderedDict.items(obj)))
    if kind in ("d", "dd", "ctr"):
        return tuple(itertools.chain.from_iterable(dict.items(obj)))
    if kind == "s":
        return tuple(set.__iter__(obj))
    if kind == "ba":
        return bytes(memoryview(obj))
    if kind == "np":
        return f"{obj.dtype.str}{obj.shape}".encode() + b"\0" + obj.tobytes()
    if kind == "pil":
        head = repr(_image_header(obj)).encode()
        return head + b"\0" + obj.tobytes() + bytes(obj.getpalette() or ())
    return (obj.tag, obj.text, obj.tail, obj.attrib, *obj)  # xe


def _image_header(obj):
    """What a PIL image says of itself besides its pixels (tests read ``format`` and
    ``filename`` of an image the candidate loaded)."""
    name = getattr(obj, "filename", None)
    kind = obj.format
    return {
        "mode": str(obj.mode),
        "size": [int(n) for n in obj.size],
        "fmt": kind if type(kind) is str else None,
        "fn": name if type(name) is str else None,
    }


def _same(old, new):
    if type(old) is tuple:
        return len(old) == len(new) and all(map(operator.is_, old, new))
    return old == new


def _pure_namedtuple(cls):
    """The fields of a class ``collections.namedtuple`` (or ``typing.NamedTuple``) made with
    nothing added, else None: only such a class can be rebuilt on the other side."""
    fields = vars(cls).get("_fields")
    if cls.__bases__ != (tuple,) or type(fields) is not tuple:
        return None
    if not all(type(f) is str for f in fields) or vars(cls).get("_field_defaults"):
        return None
    return None if set(vars(cls)) - _NT_KEYS - set(fields) else list(fields)


def _pure_enum(cls):
    """(base name, members) of an enum class with nothing but members of plain values."""
    if not isinstance(cls, enum.EnumMeta) or len(cls.__bases__) != 1:
        return None
    base = cls.__bases__[0]
    if _ENUM_BASES.get(base.__name__) is not base:
        return None
    members = dict(cls._member_map_)
    if set(vars(cls)) - set(members) - _ENUM_KEYS:
        return None
    values = [[name, _leaf(member._value_)] for name, member in members.items()]
    if any(v is _NOT_LEAF for _, v in values):
        return None
    return base.__name__, values


def _builtin_base(cls):
    for klass in cls.__mro__:
        if BUILTIN_EXCEPTIONS.get(klass.__name__) is klass:
            return klass.__name__
    return "Exception"


def _exception_info(exc):
    try:
        message = str(exc)[:2000]
    except BaseException:
        message = ""
    kind = type(exc)
    return {
        "type": kind.__name__,
        "msg": message,
        "base": _builtin_base(kind),
        "builtin": BUILTIN_EXCEPTIONS.get(kind.__name__) is kind,
    }


def _ints(data, n):
    if type(data) is not list or len(data) != n or not all(type(v) is int for v in data):
        raise ValueError("a malformed date or time")
    return data


class Codec:
    """One process's end of the values that cross: tagged JSON both ways.

    Plain data crosses by value with its exact type: the scalars and containers of
    ``encode``, integers of any size (hex), ``datetime``/``date``/``time``/``timedelta`` and
    fixed-offset or ``zoneinfo`` time zones, ``deque``/``OrderedDict``/``defaultdict``/
    ``Counter``, numpy arrays and scalars, ``xml.etree`` elements, named tuples and enum
    members (of classes with nothing added: rebuilt on the other side, and the candidate's
    come back as themselves), builtins by name (``int``, ``len``) and a few standard classes
    by name. The rest is the side's own business (``_other``): the candidate's objects as
    handles, the test's callables as call-only proxies.

    Mutable containers are mirrored: one that may be shared (every container of a request,
    and a reply's containers that something else in the replying process still references,
    such as an object's own list) gets an id both sides keep, and at each message boundary
    each side sends the contents of its mirrored containers that changed since the last
    message (``changes``), which the other side writes into its own copy in place
    (``apply``). So ``c.items().append(x)`` reaches ``c``'s list before the next call, and a
    list the candidate sorts in place is sorted in the test's hands when the call returns, as
    in one process; a container nothing references any more on one side stops being
    mirrored on both. A container the reply made afresh crosses as a plain copy.
    """

    def __init__(self, sign):
        self.sign = sign  # +1: the candidate's side numbers its mirrors up, the test's down
        self.count = 0
        self.by_id = {}  # mirror id -> container
        self.mirror_of = {}  # id(container) -> mirror id
        self.kinds = {}
        self.snaps = {}

    # encoding
    def encode_args(self, value):
        """A request's value: each mutable container in it is mirrored."""
        return self._enc(value, 0, None)

    def reply(self, value, calibrating=False):
        """A reply's value: only the containers something else still references are
        mirrored. Call it on the call's result directly (no other local may hold it: the
        reference counts are calibrated on this path)."""
        fresh = self._fresh(value, calibrating)
        if calibrating:
            return fresh
        return self._enc(value, 0, fresh)

    def _enc(self, value, depth, fresh):
        if depth > MAX_DEPTH:
            raise CannotCross("a value nested too deep")
        leaf = _leaf(value)
        if leaf is not _NOT_LEAF:
            return leaf
        kind = type(value)
        if kind is tuple:
            return {"t": [self._enc(v, depth + 1, fresh) for v in value]}
        if kind is frozenset:
            return {"s": [self._enc(v, depth + 1, fresh) for v in value], "frozen": True}
        mutable = _mutable_kind(value)
        if mutable is not None:
            mid = self.mirror_of.get(id(value))
            if mid is not None:
                return {"a": mid}
            if fresh is not None and id(value) in fresh:
                return self._copy(mutable, value, depth, fresh)
            self.count += 1
            mid = self.sign * self.count
            self._keep(mid, mutable, value)
            return {"a": mid, "new": self._content(mutable, value, depth, None)}
        by_value = self._by_value(value, depth, fresh)
        if by_value is not None:
            return by_value
        return self._other(value, depth, fresh)

    def _keep(self, mid, kind, obj):
        self.by_id[mid] = obj
        self.mirror_of[id(obj)] = mid
        self.kinds[mid] = kind
        self.snaps[mid] = _snapshot(kind, obj)

    def _copy(self, kind, value, depth, fresh):
        if kind == "l":
            return [self._enc(v, depth + 1, fresh) for v in list.__iter__(value)]
        if kind == "d":
            return {"d": self._pairs(dict.items(value), depth, fresh)}
        if kind == "s":
            return {"s": [self._enc(v, depth + 1, fresh) for v in set.__iter__(value)]}
        if kind == "ba":
            raw = bytes(memoryview(value))
            return {"b": base64.b64encode(raw).decode("ascii"), "mutable": True}
        return {"m": self._content(kind, value, depth, fresh)}

    def _pairs(self, items, depth, fresh):
        return [[self._enc(k, depth + 1, fresh), self._enc(v, depth + 1, fresh)] for k, v in items]

    def _content(self, kind, obj, depth, fresh):
        if kind == "l":
            return {"k": kind, "c": [self._enc(v, depth + 1, fresh) for v in list.__iter__(obj)]}
        if kind == "dq":
            return {
                "k": kind,
                "c": [self._enc(v, depth + 1, fresh) for v in obj],
                "max": obj.maxlen,
            }
        if kind == "od":
            return {"k": kind, "c": self._pairs(collections.OrderedDict.items(obj), depth, fresh)}
        if kind in ("d", "ctr"):
            return {"k": kind, "c": self._pairs(dict.items(obj), depth, fresh)}
        if kind == "dd":
            factory = self._enc(obj.default_factory, depth + 1, fresh)
            return {"k": kind, "c": self._pairs(dict.items(obj), depth, fresh), "df": factory}
        if kind == "s":
            return {"k": kind, "c": [self._enc(v, depth + 1, fresh) for v in set.__iter__(obj)]}
        if kind == "ba":
            return {"k": kind, "c": base64.b64encode(bytes(memoryview(obj))).decode("ascii")}
        if kind == "np":
            raw = base64.b64encode(obj.tobytes()).decode("ascii")
            return {"k": kind, "dt": obj.dtype.str, "shape": list(obj.shape), "c": raw}
        if kind == "pil":
            raw = base64.b64encode(obj.tobytes()).decode("ascii")
            return {"k": kind, "c": raw, "pal": obj.getpalette(), **_image_header(obj)}
        if kind == "xe":
            tree = _module("xml.etree.ElementTree")
            special = {id(tree.Comment): "Comment", id(tree.ProcessingInstruction): "PI"}
            tag = special.get(id(obj.tag))
            tag = {"xc": tag} if tag else self._enc(obj.tag, depth + 1, fresh)
            parts = (obj.text, obj.tail, obj.attrib)
            rest = [self._enc(v, depth + 1, fresh) for v in parts]
            children = [self._enc(child, depth + 1, fresh) for child in obj]
            return {"k": kind, "c": [tag, *rest, children]}
        raise ValueError(f"unknown container kind {kind!r}")

    def _by_value(self, value, depth, fresh):
        kind = type(value)
        name = _NAME_OF.get(id(value))
        if name is not None and BY_NAME.get(name) is value:
            return {"bi": name}
        if kind is type and value.__module__ in _STD_MODULES:
            module = _module(value.__module__)
            if module is not None and getattr(module, value.__qualname__, None) is value:
                return {"std": [value.__module__, value.__qualname__]}
        if kind is datetime.datetime:
            tz = self._tz(value.tzinfo)
            if tz is not _NOT_LEAF:
                fields = [value.year, value.month, value.day, value.hour, value.minute]
                fields += [value.second, value.microsecond, value.fold]
                return {"dt": fields, "tz": tz}
        if kind is datetime.date:
            return {"date": [value.year, value.month, value.day]}
        if kind is datetime.time:
            tz = self._tz(value.tzinfo)
            if tz is not _NOT_LEAF:
                fields = [value.hour, value.minute, value.second, value.microsecond, value.fold]
                return {"tm": fields, "tz": tz}
        if kind is datetime.timedelta:
            return {"td": [value.days, value.seconds, value.microseconds]}
        if kind is datetime.timezone:
            return {"tzv": self._tz(value)}
        np = _module("numpy")
        plain_scalar = (
            np is not None and isinstance(value, np.generic) and kind.__module__ == "numpy"
        )
        if plain_scalar and not value.dtype.hasobject and value.dtype.fields is None:
            raw = base64.b64encode(value.tobytes()).decode("ascii")
            return {"nps": value.dtype.str, "b": raw}
        return None

    def _tz(self, tz):
        if tz is None:
            return None
        if type(tz) is datetime.timezone:
            offset, *name = tz.__getinitargs__()
            return {"off": [offset.days, offset.seconds, offset.microseconds], "name": name or None}
        zoneinfo = _module("zoneinfo")
        if zoneinfo is not None and type(tz) is zoneinfo.ZoneInfo and type(tz.key) is str:
            return {"zone": tz.key}
        return _NOT_LEAF

    def _other(self, value, depth, fresh):  # the side's own: handles, proxies
        raise CannotCross(f"a {type(value).__name__} has no plain form")

    # decoding
    def dec(self, data, depth=0):
        if depth > MAX_DEPTH:
            raise ValueError("nested too deep")
        kind = type(data)
        if data is None or kind is bool or kind is int or kind is float or kind is str:
            return data
        if kind is list:
            return [self.dec(v, depth + 1) for v in data]
        if kind is not dict:
            raise ValueError(f"unexpected {kind.__name__}")
        if "h" in data:  # first: a handle's tag has a "t" of its own (its class's handle)
            return self._handle(data)
        if "a" in data:
            return self._mirrored(data, depth)
        if "t" in data:
            return tuple(self.dec(v, depth + 1) for v in data["t"])
        if "d" in data:
            return {self.dec(k, depth + 1): self.dec(v, depth + 1) for k, v in data["d"]}
        if "s" in data:
            items = [self.dec(v, depth + 1) for v in data["s"]]
            return frozenset(items) if data.get("frozen") else set(items)
        if "m" in data:
            info = data["m"]
            obj = self._empty(info, depth)
            self._fill(obj, info, depth)
            return obj
        if "cb" in data:
            return self._proxy_of(data)
        if "nt" in data:
            cls = self._namedtuple_class(data["nt"])
            items = [self.dec(v, depth + 1) for v in data["v"]]
            if len(items) != len(cls._fields):
                raise ValueError("a named tuple of the wrong length")
            return tuple.__new__(cls, items)
        if "en" in data:
            return self._enum_class(data["en"])[str(data["n"])]
        if "bi" in data:
            return BY_NAME[str(data["bi"])]
        if "std" in data:
            module, qualname = (str(v) for v in data["std"])
            if module not in _STD_MODULES or not qualname.isidentifier():
                raise ValueError("not a standard class that crosses")
            value = getattr(importlib.import_module(module), qualname)
            if not isinstance(value, type):
                raise ValueError("not a class")
            return value
        when = self._dec_time(data)
        if when is not _NOT_LEAF:
            return when
        if "nps" in data:
            return self._array(data["nps"], [], data["b"])[()]
        leaf = _decode_leaf(data)
        if leaf is _NOT_LEAF:
            raise ValueError(f"unknown value tag in {sorted(data)[:5]}")
        return leaf

    def _dec_time(self, data):
        if "dt" in data:
            fields = _ints(data["dt"], 8)
            return datetime.datetime(*fields[:7], tzinfo=self._dec_tz(data["tz"]), fold=fields[7])
        if "date" in data:
            return datetime.date(*_ints(data["date"], 3))
        if "tm" in data:
            fields = _ints(data["tm"], 5)
            return datetime.time(*fields[:4], tzinfo=self._dec_tz(data["tz"]), fold=fields[4])
        if "td" in data:
            return datetime.timedelta(*_ints(data["td"], 3))
        if "tzv" in data:
            return self._dec_tz(data["tzv"])
        return _NOT_LEAF

    def _dec_tz(self, data):
        if data is None:
            return None
        if "off" in data:
            offset = datetime.timedelta(*_ints(data["off"], 3))
            name = data.get("name")
            if name is None:
                return datetime.timezone(offset)
            return datetime.timezone(offset, str(name[0] if type(name) is list else name))
        key = str(data["zone"])
        if ".." in key or key.startswith("/") or not all(c.isalnum() or c in "_+-/" for c in key):
            raise ValueError("not a time zone's name")
        return importlib.import_module("zoneinfo").ZoneInfo(key)

    def _array(self, dtype, shape, raw):
        np = importlib.import_module("numpy")
        kind = np.dtype(str(dtype))
        if kind.hasobject or not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError("not an array that crosses")
        data = base64.b64decode(str(raw), validate=True)
        if len(data) != kind.itemsize * math.prod(shape):
            raise ValueError("an array of the wrong size")
        return np.frombuffer(data, dtype=kind).reshape(shape).copy()

    def _mirrored(self, data, depth):
        mid = data["a"]
        if type(mid) is not int:
            raise ValueError("a mirror id that is no int")
        if "new" not in data:
            return self.by_id[mid]
        if mid * self.sign > 0 or mid in self.by_id:
            raise ValueError("a mirror id the sender may not make")
        info = data["new"]
        obj = self._empty(info, depth)
        self.by_id[mid] = obj  # before its contents: a container may hold itself
        self.mirror_of[id(obj)] = mid
        self.kinds[mid] = str(info["k"])
        self._fill(obj, info, depth)
        self.snaps[mid] = _snapshot(self.kinds[mid], obj)
        return obj

    def _empty(self, info, depth):
        kind = info["k"]
        if kind == "l":
            return []
        if kind in ("d", "od", "ctr"):
            return {"d": {}, "od": collections.OrderedDict(), "ctr": collections.Counter()}[kind]
        if kind == "dd":
            factory = self.dec(info["df"], depth + 1)
            if factory is not None and not callable(factory):
                raise ValueError("a default factory that cannot be called")
            return collections.defaultdict(factory)
        if kind == "dq":
            limit = info.get("max")
            if limit is not None and (type(limit) is not int or limit < 0):
                raise ValueError("a deque's length limit that is no count")
            return collections.deque(maxlen=limit)
        if kind == "s":
            return set()
        if kind == "ba":
            return bytearray()
        if kind == "np":
            return self._array(info["dt"], info["shape"], info["c"])
        if kind == "xe":
            return importlib.import_module("xml.etree.ElementTree").Element("_")
        if kind == "pil":
            mode, size = str(info["mode"]), _ints(info["size"], 2)
            return importlib.import_module("PIL.Image").new(mode, tuple(size))
        raise ValueError(f"unknown container kind {kind!r}")

    def _fill(self, obj, info, depth):
        """Write ``info``'s contents into ``obj`` in place (the base type's own methods)."""
        kind = info["k"]
        if kind == "np":
            new = self._array(info["dt"], info["shape"], info["c"])
            if new.dtype != obj.dtype or new.shape != obj.shape:
                self._lost("an array changed its shape or type")
            obj[...] = new
            return
        if kind == "ba":
            bytearray.__setitem__(obj, slice(None), base64.b64decode(str(info["c"]), validate=True))
            return
        if kind == "pil":
            if [obj.mode, list(obj.size)] != [info["mode"], info["size"]]:
                self._lost("an image changed its size or mode")
            obj.frombytes(base64.b64decode(str(info["c"]), validate=True))
            palette = info.get("pal")
            if palette is not None:
                obj.putpalette([int(n) for n in palette])
            obj.format = None if info.get("fmt") is None else str(info["fmt"])
            if info.get("fn") is not None:
                obj.filename = str(info["fn"])
            return
        content = info["c"]
        if type(content) is not list:
            raise ValueError("a container's contents that are no list")
        if kind == "xe":
            self._fill_element(obj, content, depth)
        elif kind in ("d", "od", "dd", "ctr"):
            pairs = [(self.dec(k, depth + 1), self.dec(v, depth + 1)) for k, v in content]
            if kind == "od":
                collections.OrderedDict.clear(obj)
                for key, value in pairs:
                    collections.OrderedDict.__setitem__(obj, key, value)
            else:
                dict.clear(obj)
                dict.update(obj, pairs)
        else:
            items = [self.dec(v, depth + 1) for v in content]
            if kind == "l":
                list.__setitem__(obj, slice(None), items)
            elif kind == "s":
                set.clear(obj)
                set.update(obj, items)
            elif kind == "dq":
                if obj.maxlen != info.get("max"):
                    raise ValueError("a deque whose length limit changed")
                obj.clear()
                obj.extend(items)
            else:
                raise ValueError(f"unknown container kind {kind!r}")

    def _fill_element(self, obj, content, depth):
        tree = importlib.import_module("xml.etree.ElementTree")
        tag, text, tail, attrib, children = content
        if type(tag) is dict and "xc" in tag:
            tag = {"Comment": tree.Comment, "PI": tree.ProcessingInstruction}[str(tag["xc"])]
        else:
            tag = self.dec(tag, depth + 1)
        attrib, children = self.dec(attrib, depth + 1), self.dec(children, depth + 1)
        if type(attrib) is not dict or not all(type(c) is tree.Element for c in children):
            raise ValueError("a malformed element")
        obj.tag, obj.text, obj.tail = tag, self.dec(text, depth + 1), self.dec(tail, depth + 1)
        obj.attrib = attrib
        obj[:] = children

    def _lost(self, why):  # the test side: the run cannot be judged as in one process
        raise ValueError(why)

    # the mirrors at each message boundary
    def changes(self):
        """(contents of the mirrored containers that changed, ids no longer mirrored)."""
        sync, drop = [], []
        for mid in list(self.by_id):
            kind, obj = self.kinds[mid], self.by_id[mid]
            try:
                snap = _snapshot(kind, obj)
            except Exception:  # a closed image: nothing can read it, on either side
                del obj
                self._forget(mid)
                drop.append(mid)
                continue
            if not _same(self.snaps[mid], snap):
                self.snaps[mid] = snap
                sync.append([mid, self._content(kind, obj, 0, None)])
            del obj, snap
            if self._refs(mid) <= _HELD:  # nothing on this side holds it any more
                self._forget(mid)
                drop.append(mid)
        return sync, drop

    def _refs(self, mid):
        obj = self.by_id[mid]
        return sys.getrefcount(obj)

    def _forget(self, mid):
        obj = self.by_id.pop(mid, None)
        if obj is not None:
            self.mirror_of.pop(id(obj), None)
            self.kinds.pop(mid, None)
            self.snaps.pop(mid, None)

    def apply(self, msg):
        """Take in the other side's ``changes`` of a message (after decoding its values)."""
        for mid, info in msg.get("sync") or ():
            obj = self.by_id[mid]
            if str(info["k"]) != self.kinds[mid]:
                raise ValueError("a mirrored container changed its kind")
            self._fill(obj, info, 0)
            self.snaps[mid] = _snapshot(self.kinds[mid], obj)
        for mid in msg.get("drop") or ():
            if type(mid) is int:
                self._forget(mid)

    def _fresh(self, root, calibrating):
        """Ids of the containers of ``root`` (a reply) that nothing outside it references:
        each one's reference count less the references from within the reply (and the
        counting's own, calibrated by ``_calibrate`` on this same path)."""
        found, inner = _graph(root)
        extra = {key: sys.getrefcount(found[key]) - inner[key] for key in found}
        if calibrating:
            return extra.pop(id(root)), max(extra.values())
        top = id(root)
        shared = {k for k, n in extra.items() if n > (_ROOT_BASE if k == top else _NESTED_BASE)}
        shared |= {k for k, n in inner.items() if n > 1}  # twice in the reply: one object
        np = _module("numpy")
        if np is not None:  # a view shares its base's memory
            shared |= {k for k, v in found.items() if type(v) is np.ndarray and v.base is not None}
        stack = list(shared)
        while stack:  # what a shared container holds is shared too
            for child in _members(found[stack.pop()]):
                if id(child) not in shared:
                    shared.add(id(child))
                    stack.append(id(child))
        return set(found) - shared

    # the side's own
    def _handle(self, tag):
        raise ValueError("a handle where none can be")

    def _proxy_of(self, tag):
        raise ValueError("a proxy where none can be")

    def _namedtuple_class(self, info):
        raise ValueError("a named tuple where none can be")

    def _enum_class(self, info):
        raise ValueError("an enum where none can be")


def _graph(root):
    """The containers reachable from ``root`` (by id) and how often the graph holds each."""
    inner = {id(root): 0}
    found = {id(root): root}
    stack = [root]
    while stack:
        for child in _members(stack.pop()):
            key = id(child)
            inner[key] = inner.get(key, 0) + 1
            if key not in found:
                found[key] = child
                stack.append(child)
    return found, inner


def _members(obj):
    """The containers ``obj`` (a container) holds: where a reply's sharing can hide."""
    kind = _mutable_kind(obj)
    if kind is None and not isinstance(obj, tuple | frozenset):
        return ()
    if kind in ("d", "od", "dd", "ctr"):
        values = itertools.chain.from_iterable(dict.items(obj))
    elif kind == "xe":
        values = (obj.attrib, *obj)
    elif kind in ("np", "ba", "pil"):
        return ()
    else:
        values = iter(obj) if kind != "l" else list.__iter__(obj)
    return [v for v in values if _mutable_kind(v) is not None or isinstance(v, tuple | frozenset)]


# -- the candidate's side --------------------------------------------------------------------


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


def _calibrate():
    """The reference counts of a reply's fresh containers and of a mirror only the table
    holds, on the very paths that count them."""
    probe = Codec(1)
    root, nested = probe.reply([[[]]], calibrating=True)
    probe._keep(1, "l", [])
    return root, nested, probe._refs(1)


_ROOT_BASE, _NESTED_BASE, _HELD = _calibrate()


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
