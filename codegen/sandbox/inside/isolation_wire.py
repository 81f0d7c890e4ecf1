"""Runs inside the sandbox (standard library only): the wire of ``isolation``. The exceptions
both sides raise, the framing of a message (a length, then JSON), and the tagged JSON of plain
values (``encode``/``decode``: ``call_driver``'s codec, and the scalars ``Codec`` builds on).
"""

import base64
import json
import math
import socket
from decimal import Decimal
from fractions import Fraction

MAX_MESSAGE = 64 << 20  # bytes of one reply; a larger one is a protocol breach
MAX_DEPTH = 200
BIG_INT_BITS = 4000  # larger ints travel as hex: JSON parsers cap decimal digits


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


def socket_pair():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


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
