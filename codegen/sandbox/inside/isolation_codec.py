"""Runs inside the sandbox (standard library only): ``Codec``, one process's end of the values
that cross between the test side and the candidate's process (``isolation``'s design), with
the builtins and standard classes that cross by name and the reference counting that tells a
reply's shared containers from its fresh ones.
"""

import base64
import builtins
import collections
import datetime
import importlib
import itertools
import math
import sys

from isolation_kinds import (
    _image_header,
    _ints,
    _module,
    _mutable_kind,
    _same,
    _snapshot,
)
from isolation_wire import _NOT_LEAF, MAX_DEPTH, CannotCross, _decode_leaf, _leaf

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
MAX_NESTING = 50  # calls of the other side's callables inside one another


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


def _calibrate():
    """The reference counts of a reply's fresh containers and of a mirror only the table
    holds, on the very paths that count them."""
    probe = Codec(1)
    root, nested = probe.reply([[[]]], calibrating=True)
    probe._keep(1, "l", [])
    return root, nested, probe._refs(1)


_ROOT_BASE, _NESTED_BASE, _HELD = _calibrate()
