"""Runs inside the sandbox (standard library only): the test side's end of ``isolation``, the
requests it sends to the candidate's process and the handles of the candidate's objects.
Shipped beside ``isolation.py`` by the drivers whose test side reaches a candidate.
"""

from isolation import (
    BUILTIN_EXCEPTIONS,
    CannotCross,
    ChildGone,
    LoadFailed,
    RemoteExit,
    decode,
    encode,
    recv,
    send,
)


class Conn:
    """The test side's end: requests, and the handles and classes they gave back."""

    def __init__(self, sock):
        self.sock = sock
        self.dead = None  # why the candidate's side is gone, once it is
        self.cross = None  # the first value of the test side that could not cross
        self.classes = {}  # handle id -> local class (handle classes, exception classes)

    def _request(self, msg):
        if self.dead is not None:
            raise ChildGone(self.dead)
        try:
            send(self.sock, msg)
            reply = recv(self.sock)
            if not isinstance(reply, dict):
                raise ValueError("not an object")
        except (EOFError, OSError) as exc:
            self.dead = f"the candidate's process ended ({type(exc).__name__})"
            raise ChildGone(self.dead) from None
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            self.dead = f"the candidate's process broke the protocol: {type(exc).__name__}"
            raise ChildGone(self.dead) from None
        return reply

    def request(self, msg):
        reply = self._request(msg)
        if "raise" in reply:
            raise self._exception(reply["raise"])
        if "load_error" in reply:
            raise ChildGone(str(reply["load_error"])[:500])
        try:
            return decode(reply.get("v"), self._handle)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as exc:
            self.dead = f"the candidate's process sent an unreadable value: {type(exc).__name__}"
            raise ChildGone(self.dead) from None

    def hello(self):
        """None when the module loaded, else why not."""
        reply = self._request({"op": "hello"})
        if "load_error" in reply:
            return str(reply["load_error"])[:500]
        return None

    def get(self, name):
        """The candidate module's ``name``: a plain value, a handle, or AttributeError."""
        reply = self._request({"op": "get", "name": name})
        if "load_error" in reply:
            raise LoadFailed(str(reply["load_error"])[:500])
        if reply.get("missing"):
            raise AttributeError(f"the module does not define {name!r}")
        if "raise" in reply:
            raise self._exception(reply["raise"])
        return decode(reply.get("v"), self._handle)

    def encode(self, value):
        def ref(obj, depth):
            if isinstance(obj, Handle) and object.__getattribute__(obj, "_conn") is self:
                return {"h": object.__getattribute__(obj, "_hid")}
            raise CannotCross(f"a {type(obj).__name__} of the test side has no plain form")

        try:
            return encode(value, ref)
        except CannotCross as exc:
            self.cross = self.cross or str(exc)
            raise

    def _handle(self, tag):
        hid = int(tag["h"])
        kind = tag.get("k")
        if kind in ("class", "exc"):
            if hid not in self.classes:
                name = str(tag.get("n", "Remote"))[:100] or "Remote"
                if kind == "exc":
                    base = BUILTIN_EXCEPTIONS.get(str(tag.get("base")), Exception)
                    self.classes[hid] = type(name, (base,), {"__module__": "solution"})
                else:
                    self.classes[hid] = _handle_class(self, hid, name)
            return self.classes[hid]
        local = self.classes.get(tag.get("t"))
        cls = local if isinstance(local, type) and issubclass(local, Handle) else Handle
        handle = object.__new__(cls)
        object.__setattr__(handle, "_conn", self)
        object.__setattr__(handle, "_hid", hid)
        return handle

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
        if not issubclass(cls, Exception):
            return RemoteExit(f"{name}: {message}")
        try:
            return cls(message)
        except BaseException:
            return RemoteExit(f"{name}: {message}")

    def call(self, hid, args, kwargs):
        msg = {"op": "call", "h": hid, "a": [self.encode(a) for a in args]}
        if kwargs:
            msg["kw"] = [[k, self.encode(v)] for k, v in kwargs.items()]
        return self.request(msg)


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
