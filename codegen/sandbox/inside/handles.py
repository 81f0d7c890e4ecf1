"""Runs inside the sandbox (standard library only): the test side's end of ``isolation``, the
requests it sends to the candidate's process and the handles of the candidate's objects.
Shipped beside ``isolation``'s modules by the drivers whose test side reaches a candidate.
"""

import collections
import enum

from isolation_codec import MAX_NESTING, NEVER_CALLED, Codec
from isolation_kinds import (
    _ENUM_BASES,
    _PLAIN_BASES,
    BUILTIN_EXCEPTIONS,
    _base_value,
    _exception_info,
    _pure_namedtuple,
)
from isolation_wire import CannotCross, ChildGone, LoadFailed, RemoteExit, recv, send

_ITERATION = ("next",)  # the only requests a StopIteration may end


class Conn(Codec):
    """The test side's end: requests, the handles and classes they gave back, and the test's
    callables the candidate may call (``_serve_callback``)."""

    def __init__(self, sock):
        super().__init__(-1)
        self.sock = sock
        self.dead = None  # why the candidate's side is gone, once it is
        self.cross = None  # the first value of the test side that could not cross
        self.classes = {}  # handle id -> local class (handle, exception, named tuple, enum)
        self.class_ids = {}  # id(local class) -> handle id
        self.handles = {}  # handle id -> Handle: the same object each time
        self.proxies = {}  # proxy id -> the test's callable
        self.proxy_ids = {}  # id(callable) -> proxy id
        self.nesting = 0
        self.pending = None  # a value of a callback's call that could not cross

    # the exchange
    def _breach(self, exc):
        self.dead = f"the candidate's process broke the protocol: {type(exc).__name__}"
        return ChildGone(self.dead)

    def _exchange(self, msg):
        """Send ``msg`` with this side's changes; serve the candidate's callbacks until its
        reply comes."""
        if self.dead is not None:
            raise ChildGone(self.dead)
        try:
            msg["sync"], msg["drop"] = self.changes()
        except CannotCross as exc:  # the test put a value that cannot cross into a mirror
            self.cross = self.cross or str(exc)
            raise
        try:
            send(self.sock, msg)
            while True:
                reply = recv(self.sock)
                if not isinstance(reply, dict):
                    raise ValueError("not an object")
                if "cb" not in reply:
                    return reply
                self._serve_callback(reply)
        except (EOFError, OSError) as exc:
            self.dead = f"the candidate's process ended ({type(exc).__name__})"
            raise ChildGone(self.dead) from None
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as exc:
            raise self._breach(exc) from None

    def request(self, msg):
        op = (msg.get("op"), msg.get("f"))
        reply = self._exchange(msg)
        if "load_error" in reply:
            why = str(reply["load_error"])[:500]
            raise LoadFailed(why) if op[0] == "get" else ChildGone(why)
        try:
            value = self.dec(reply["v"]) if "v" in reply else None
            self.apply(reply)
            raised = self._exception(reply["raise"]) if "raise" in reply else None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as e:
            raise self._breach(e) from None
        if self.pending is not None:
            why, self.pending = self.pending, None
            raise CannotCross(why)
        if "cross" in reply:
            self._lost(f"the candidate's value cannot cross: {str(reply['cross'])[:200]}")
        if reply.get("missing"):
            raise AttributeError(f"the module does not define {msg.get('name')!r}")
        if raised is not None:
            if isinstance(raised, StopIteration | StopAsyncIteration) and op[1] not in _ITERATION:
                # only iteration ends with it: a call may not end the test's all(map(...))
                raise RuntimeError(f"the candidate's call raised {type(raised).__name__}")
            raise raised
        return value

    def hello(self):
        """None when the module loaded, else why not."""
        reply = self._exchange({"op": "hello"})
        if "load_error" in reply:
            return str(reply["load_error"])[:500]
        return None

    def get(self, name):
        """The candidate module's ``name``: a plain value, a handle, or AttributeError."""
        return self.request({"op": "get", "name": name})

    def encode(self, value):
        try:
            return self.encode_args(value)
        except CannotCross as exc:
            self.cross = self.cross or str(exc)
            raise

    def call(self, hid, args, kwargs):
        msg = {"op": "call", "h": hid, "a": [self.encode(a) for a in args]}
        if kwargs:
            msg["kw"] = [[k, self.encode(v)] for k, v in kwargs.items()]
        return self.request(msg)

    def _lost(self, why):
        self.cross = self.cross or why
        raise CannotCross(why)

    def _serve_callback(self, msg):
        """Call the test's callable the candidate asked for, with the values it sent."""
        self.nesting += 1
        try:
            if self.nesting > MAX_NESTING:
                raise ValueError("callbacks nested too deep")
            func = self.proxies[msg["cb"]]
            args = [self.dec(a) for a in msg.get("a", ())]
            kwargs = {str(k): self.dec(v) for k, v in msg.get("kw", ())}
            self.apply(msg)
            try:
                if "attr" in msg:
                    name = str(msg["attr"])[:100]
                    what = type(func).__name__
                    self._lost(f"the candidate read .{name} of a {what} of the test side")
                reply = {"cbr": 1, "v": self.reply(func(*args, **kwargs))}
                reply["sync"], reply["drop"] = self.changes()
            except CannotCross as exc:
                self.cross = self.cross or str(exc)
                self.pending = self.pending or str(exc)
                info = {"type": "RuntimeError", "msg": "cannot cross", "builtin": True}
                reply = {"cbr": 1, "raise": info}
            except ChildGone:
                raise
            except BaseException as exc:
                reply = {"cbr": 1, "raise": _exception_info(exc)}
                reply["sync"], reply["drop"] = self.changes()
            send(self.sock, reply)
        finally:
            self.nesting -= 1

    # values
    def _other(self, value, depth, fresh):
        if isinstance(value, Handle):
            conn, hid = _conn(value)
            if conn is self:
                return {"h": hid}
        if isinstance(value, type) and id(value) in self.class_ids:
            return {"h": self.class_ids[id(value)]}
        mirror = self.class_ids.get(id(type(value)))
        if mirror is not None and isinstance(value, tuple):
            items = [self._enc(v, depth + 1, fresh) for v in tuple.__iter__(value)]
            return {"nt": {"h": mirror}, "v": items}
        if mirror is not None and isinstance(value, enum.Enum):
            return {"en": {"h": mirror}, "n": value._name_}
        fields = _pure_namedtuple(type(value))
        if fields is not None:
            items = [self._enc(v, depth + 1, fresh) for v in tuple.__iter__(value)]
            return {"nt": {"n": type(value).__name__, "f": fields}, "v": items}
        if isinstance(value, _PLAIN_BASES):
            return self._enc(_base_value(value), depth + 1, fresh)
        if callable(value) and not any(value is f for f in NEVER_CALLED):
            pid = self.proxy_ids.get(id(value))
            if pid is None:
                pid = len(self.proxies) + 1
                self.proxies[pid] = value  # kept: its id stays its own
                self.proxy_ids[id(value)] = pid
            return {"cb": pid}
        self._lost(f"a {type(value).__name__} of the test side has no plain form")

    def _proxy_of(self, tag):
        return self.proxies[tag["cb"]]

    def _namedtuple_class(self, info):
        if "h" in info:
            cls = self._handle(info)
            if not (isinstance(cls, type) and issubclass(cls, tuple)):
                raise ValueError("not a named tuple's class")
            return cls
        key = (str(info["n"]), tuple(str(f) for f in info["f"]))
        if key not in self.classes:
            self.classes[key] = collections.namedtuple(*key, module="solution")
        return self.classes[key]

    def _enum_class(self, info):
        cls = self._handle(info)
        if not isinstance(cls, enum.EnumMeta):
            raise ValueError("not an enum class")
        return cls

    def _local_class(self, tag):
        kind = tag.get("k")
        name = str(tag.get("n", "Remote"))[:100] or "Remote"
        if kind == "exc":
            base = BUILTIN_EXCEPTIONS.get(str(tag.get("base")), Exception)
            return type(name, (base,), {"__module__": "solution"})
        if kind == "nt":
            fields = [str(f) for f in tag["f"]]
            return collections.namedtuple(name, fields, module="solution")
        if kind == "en":
            base = _ENUM_BASES[str(tag["base"])]
            members = [(str(n), self.dec(v)) for n, v in tag["m"]]
            if not all(n.isidentifier() and not n.startswith("_") for n, _ in members):
                raise ValueError("an enum member's name that no class statement could give")
            return base(name, members, module="solution")
        return _handle_class(self, int(tag["h"]), name)

    def _handle(self, tag):
        hid = int(tag["h"])
        kind = tag.get("k")
        if kind in ("class", "exc", "nt", "en"):
            if hid not in self.classes:
                cls = self._local_class(tag)
                self.classes[hid] = cls
                self.class_ids[id(cls)] = hid
            return self.classes[hid]
        if kind is None:
            if hid not in self.classes:
                raise ValueError("an unknown class")
            return self.classes[hid]
        if hid not in self.handles:
            local = self.classes.get(tag.get("t"))
            cls = local if isinstance(local, type) and issubclass(local, Handle) else Handle
            handle = object.__new__(cls)
            object.__setattr__(handle, "_conn", self)
            object.__setattr__(handle, "_hid", hid)
            self.handles[hid] = handle
        return self.handles[hid]

    def _exception(self, info):
        if not isinstance(info, dict):
            info = {}
        name = str(info.get("type", "Exception"))[:100]
        message = str(info.get("msg", ""))[:2000]
        cls = self.classes.get(info.get("t"))
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            cls = BUILTIN_EXCEPTIONS.get(name) if info.get("builtin") else None
        if cls is None:
            base = BUILTIN_EXCEPTIONS.get(str(info.get("base")), Exception)
            cls = type(name, (base,), {"__module__": "solution"})
            if isinstance(info.get("t"), int):
                self.classes[info["t"]] = cls
                self.class_ids[id(cls)] = info["t"]
        if not issubclass(cls, Exception):
            return RemoteExit(f"{name}: {message}")
        try:
            return cls(message)
        except BaseException:
            return RemoteExit(f"{name}: {message}")


def _conn(handle):
    return object.__getattribute__(handle, "_conn"), object.__getattribute__(handle, "_hid")


def _builtin(handle, name, *args):
    conn, hid = _conn(handle)
    return conn.request({"op": "builtin", "f": name, "h": hid, "a": [conn.encode(a) for a in args]})


_LOCAL_DUNDERS = ("__name__", "__qualname__", "__doc__", "__module__")


class Handle:
    """An object of the candidate's process: attributes, calls and a few dunders go there;
    equality is identity (the candidate's ``__eq__`` never decides a comparison)."""

    __slots__ = ("_conn", "_hid")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in _LOCAL_DUNDERS:
            raise AttributeError(name)
        conn, hid = _conn(self)
        return conn.request({"op": "getattr", "h": hid, "name": name})

    def __setattr__(self, name, value):
        conn, hid = _conn(self)
        conn.request({"op": "setattr", "h": hid, "name": name, "a": [conn.encode(value)]})

    def __delattr__(self, name):
        conn, hid = _conn(self)
        conn.request({"op": "delattr", "h": hid, "name": name})

    def __call__(self, *args, **kwargs):
        conn, hid = _conn(self)
        return conn.call(hid, args, kwargs)

    def __len__(self):
        return _builtin(self, "len")

    def __iter__(self):
        return _builtin(self, "iter")

    def __next__(self):
        return _builtin(self, "next")

    def __bool__(self):
        return _builtin(self, "bool")

    def __getitem__(self, key):
        return _builtin(self, "getitem", key)

    def __setitem__(self, key, value):
        _builtin(self, "setitem", key, value)

    def __delitem__(self, key):
        _builtin(self, "delitem", key)

    def __contains__(self, item):
        return _builtin(self, "contains", item)

    def __int__(self):
        return _builtin(self, "int")

    def __float__(self):
        return _builtin(self, "float")

    def __index__(self):
        return _builtin(self, "index")

    def __str__(self):
        value = _builtin(self, "str")
        if type(value) is not str:
            raise TypeError("__str__ returned non-string")
        return value

    def __repr__(self):
        try:
            value = _builtin(self, "repr")
        except BaseException:
            value = None
        return value if type(value) is str else f"<solution object {_conn(self)[1]}>"

    def __eq__(self, other):
        if isinstance(other, Handle):
            return _conn(self) == _conn(other)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Handle):
            return _conn(self) != _conn(other)
        return NotImplemented

    def __hash__(self):
        return hash(_conn(self)[1])


def _handle_class(conn, hid, name):
    """A local class standing for a candidate's class: calling it constructs remotely, its
    instances (and the instances the candidate returns) are handles of this class."""

    class _Meta(type):
        def __call__(cls, *args, **kwargs):
            return conn.call(hid, args, kwargs)

        def __getattr__(cls, attr):
            if attr.startswith("__") and attr.endswith("__"):
                raise AttributeError(attr)
            return conn.request({"op": "getattr", "h": hid, "name": attr})

    return _Meta(name, (Handle,), {"__slots__": (), "__module__": "solution"})
