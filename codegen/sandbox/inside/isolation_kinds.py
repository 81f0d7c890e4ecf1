"""Runs inside the sandbox (standard library only): what ``isolation``'s codec knows of a
value's kind. Which containers are mirrored and how a change to one is seen (``_mutable_kind``,
``_snapshot``), which named tuples and enums can be rebuilt on the other side, how an exception
is described, and a plain type's subclass read as its base type's value (``_base_value``).
"""

import builtins
import collections
import enum
import itertools
import operator
import sys

from isolation_wire import _NOT_LEAF, _leaf

BUILTIN_EXCEPTIONS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}

# A subclass of one of these crosses as its base type's value (``_base_value``).
_PLAIN_BASES = (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, frozenset, set)
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
