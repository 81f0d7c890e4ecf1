"""Values cross between the test side and the candidate's process (issue 46): the in-box
modules (``isolation``, ``handles``) driven directly, the candidate a forked process serving a
small module. Before this codec each of these values either could not cross (the drivers then
ran the test in the candidate's process) or crossed wrongly (a class as a stranger, a copy
of the object's own list)."""

from __future__ import annotations

import datetime
import os
import socket
import sys
import textwrap
import zoneinfo
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock
from xml.etree import ElementTree

import pytest

import codegen

sys.path.insert(0, str(Path(codegen.__file__).parent / "sandbox" / "inside"))
import handles
import isolation

SOURCE = """
import datetime, enum, math
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple

Point = namedtuple("Point", "x y")

class Color(enum.IntEnum):
    RED = 1
    BLUE = 2

class Shape(enum.Enum):
    SQUARE = "square"

class Bag:
    def __init__(self, items=None):
        self.items = [] if items is None else items
        self.index = {}
    def add(self, x):
        self.items.append(x)
        return len(self.items)
    def all(self):
        return self.items
    def copy(self):
        return list(self.items)
    def __len__(self):
        return len(self.items)
    def transfer(self, other):
        other.items.extend(self.items)
        self.items.clear()

def encode(x):
    return x
def decode(x):
    return x
def make(cls, *args):
    return cls(*args)
def is_bag(x):
    return isinstance(x, Bag)
def apply(f, *args, **kwargs):
    return f(*args, **kwargs)
def sort_in_place(values):
    values.sort()
def successor(n):
    return n + 1
def module():
    return math
def origin():
    return Point(0, 0)
def is_point(p):
    return type(p) is Point and p.x == 1
def red():
    return Color.RED
def is_red(c):
    return c is Color.RED
def square():
    return Shape.SQUARE
def same_type(value, kind):
    return type(value) is kind and value
def plus_day(when):
    return when + datetime.timedelta(days=1)
def containers():
    return (deque([1, 2], maxlen=3), OrderedDict(b=1, a=2), defaultdict(list, k=[1]),
            Counter("aab"), defaultdict(Bag))
def numbers(np_wanted):
    import numpy as np
    return np.arange(6, dtype=np.int16).reshape(2, 3), np.float32(1.5), np.int64(10) ** 15
def scale(array, k):
    array *= k
def grow(array):
    array.resize(10, refcheck=False)
def tree():
    from xml.etree import ElementTree as ET
    root = ET.fromstring("<r><i a='1'>x</i><i>y</i></r>")
    return root, root.findall("i")
def text_of(element):
    return element.find("i").text
def calls(f):
    return [f(i) for i in range(3)]
def read_name(f):
    return f.__name__
def mock_user(reader, writer):
    writer(reader().upper())
def stop():
    raise StopIteration("early")
def numbers_up_to(n):
    yield from range(n)
def types():
    return {"n": int, "s": str, "when": datetime.datetime, "f": len}
"""


@pytest.fixture
def conn() -> Iterator[Any]:
    ours, theirs = isolation.socket_pair()
    pid = os.fork()
    if pid == 0:  # the candidate's process
        try:
            ours.close()
            namespace, why = isolation.load_module("", textwrap.dedent(SOURCE), None)
            isolation.serve(theirs, namespace, why)
        finally:
            os._exit(1)
    theirs.close()
    test_side = handles.Conn(ours)
    assert test_side.hello() is None
    yield test_side
    ours.close()
    os.waitpid(pid, 0)


def test_classes_functions_and_modules_come_back_as_themselves(conn: Any) -> None:
    Bag, encode, decode = conn.get("Bag"), conn.get("encode"), conn.get("decode")
    assert decode(encode(Bag)) is Bag and decode(encode(encode)) is encode
    bag = conn.get("make")(Bag, [1])  # a candidate class passed to a candidate function
    assert isinstance(bag, Bag) and conn.get("is_bag")(bag) and bag.all() == [1]
    a, b = Bag([1, 2]), Bag()
    a.transfer(b)
    assert b.all() == [1, 2] and a.all() == [] and len(b) == 2
    math = conn.get("module")()
    assert math.sqrt(16) == 4.0 and conn.get("decode")(math) is math
    assert bag == bag and bag != Bag()  # handles compare by identity only


def test_values_cross_with_their_exact_type(conn: Any) -> None:
    huge = 7**12000  # over 10,000 digits, past Python's 4,300-digit text limit
    assert conn.get("successor")(huge) == huge + 1
    assert conn.get("same_type")(huge, int) == huge
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    fixed = datetime.timezone(datetime.timedelta(hours=-3, minutes=-30), "NST")
    for when in (
        datetime.datetime(2024, 2, 28, 23, 59, 1, 5),
        datetime.datetime(2024, 2, 28, tzinfo=datetime.UTC),
        datetime.datetime(2024, 2, 28, tzinfo=fixed),
        datetime.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=paris),
        datetime.date(2024, 2, 28),
    ):
        moved = conn.get("plus_day")(when)
        assert moved == when + datetime.timedelta(days=1) and type(moved) is type(when)
        assert getattr(moved, "tzinfo", None) == getattr(when, "tzinfo", None)
    for value in (datetime.time(1, 2, 3, 4, tzinfo=fixed), datetime.timedelta(days=-1, seconds=5)):
        assert conn.get("same_type")(value, type(value)) == value
    assert conn.get("types")() == {"n": int, "s": str, "when": datetime.datetime, "f": len}
    dq, od, dd, counter, bags = conn.get("containers")()
    assert dq == deque([1, 2], maxlen=3) and dq.maxlen == 3 and type(dq) is deque
    assert type(od) is OrderedDict and list(od) == ["b", "a"]
    assert type(dd) is defaultdict and dd.default_factory is list and dd["new"] == []
    assert type(counter) is Counter and counter == Counter("aab")
    assert isinstance(bags["x"], conn.get("Bag"))  # the factory is the candidate's class
    assert conn.get("same_type")(Counter("xy"), Counter) == Counter("xy")


def test_named_tuples_and_enum_members(conn: Any) -> None:
    point = conn.get("origin")()
    assert point == (0, 0) and point.x == 0 and type(point) is conn.get("Point")
    assert conn.get("is_point")(conn.get("Point")(1, 2))  # the candidate's own class again
    red = conn.get("red")()
    assert red is conn.get("Color").RED and red == 1 and red.name == "RED"
    assert conn.get("is_red")(red) and not conn.get("is_red")(conn.get("Color").BLUE)
    assert conn.get("square")().value == "square"
    mine = namedtuple("Mine", "a b")(1, [2])
    assert conn.get("decode")(mine) == (1, [2]) and conn.get("decode")(mine).b == [2]


def test_numpy_values_and_xml_elements(conn: Any) -> None:
    np = pytest.importorskip("numpy")
    array, scalar, big = conn.get("numbers")(True)
    assert type(array) is np.ndarray and array.dtype == np.int16 and array.shape == (2, 3)
    assert type(scalar) is np.float32 and scalar == 1.5 and type(big) is np.int64
    mine = np.ones(3)
    conn.get("scale")(mine, 4)  # in place, as in one process
    assert mine.tolist() == [4.0, 4.0, 4.0]
    with pytest.raises(isolation.CannotCross):
        conn.get("grow")(np.ones(3))
    root, items = conn.get("tree")()
    assert root.tag == "r" and [i.text for i in items] == ["x", "y"] and root[0] is items[0]
    mine_tree = ElementTree.fromstring("<r><i>z</i></r>")
    assert conn.get("text_of")(mine_tree) == "z"


def test_the_tests_callables_and_mocks_cross_as_call_only_proxies(conn: Any) -> None:
    assert conn.get("calls")(lambda i: i * 10) == [0, 10, 20]
    assert conn.get("apply")(len, "abc") == 3 and conn.get("apply")(sorted, [2, 1]) == [1, 2]
    reader, writer = MagicMock(return_value="text"), MagicMock()
    conn.get("mock_user")(reader, writer)
    reader.assert_called_once_with()
    writer.assert_called_once_with("TEXT")
    bag = conn.get("Bag")()
    bag.add = MagicMock(return_value=7)  # set on the candidate's object: called there
    assert conn.get("apply")(bag.add, 1) == 7 and bag.add is bag.add
    bag.add.assert_called_once_with(1)
    assert conn.get("apply")(lambda: conn.get("successor")(1)) == 2  # nested both ways
    with pytest.raises(ValueError):  # the test's exception reaches the candidate and back
        conn.get("apply")(int, "x")


def test_a_proxy_shows_nothing_but_calls(conn: Any) -> None:
    with pytest.raises(isolation.CannotCross, match="__name__"):
        conn.get("read_name")(lambda: 1)
    assert conn.cross
    with pytest.raises(isolation.CannotCross, match="builtin_function"):
        conn.get("apply")(open, "/etc/hostname")  # never called for the candidate
    with pytest.raises(isolation.CannotCross, match="object"):
        conn.get("decode")(object())
    bag = conn.get("Bag")()
    bag.all().append(object())  # into the candidate's own list: stopped at the next request
    with pytest.raises(isolation.CannotCross, match="object"):
        len(bag)


def test_containers_that_alias_the_candidates_state_are_mirrored(conn: Any) -> None:
    bag = conn.get("Bag")([1])
    items = bag.all()
    items.append(2)  # the test mutates what the method returned: the object's own list
    assert len(bag) == 2 and bag.copy() == [1, 2]
    bag.add(3)  # the candidate mutates its list: the test's reference sees it
    assert items == [1, 2, 3] and bag.all() is items
    bag.index["k"] = [4]  # an attribute's dict, then a list the test put into it
    bag.index["k"].append(5)
    assert bag.index == {"k": [4, 5]}
    fresh = bag.copy()
    fresh.append(99)  # a list made for the reply is the test's own
    assert len(bag) == 3
    values = [3, 1, 2]
    conn.get("sort_in_place")(values)  # the candidate sorts the test's list in place
    assert values == [1, 2, 3]
    shared = [0]
    held = conn.get("Bag")(shared)  # kept by the candidate: later changes reach it
    shared.append(1)
    assert len(held) == 2 and held.all() is shared


def test_stop_iteration_ends_only_iteration(conn: Any) -> None:
    with pytest.raises(RuntimeError, match="StopIteration"):
        conn.get("stop")()
    assert all(map(lambda _: False, [])) and list(conn.get("numbers_up_to")(3)) == [0, 1, 2]


def test_a_sync_of_a_container_the_test_never_shared_breaks_the_protocol() -> None:
    ours, theirs = socket.socketpair()
    isolation.send(theirs, {"v": None, "sync": [[-7, {"k": "l", "c": [1]}]]})
    test_side = handles.Conn(ours)
    with pytest.raises(isolation.ChildGone):
        test_side.request({"op": "call", "h": 1})
    assert test_side.dead and "protocol" in test_side.dead


# -- end to end, on both backends: every honest round trip decided isolated ------------------

E2E_SOLUTION = """
import datetime
from collections import Counter, deque, namedtuple

Pair = namedtuple("Pair", "left right")

class Account:
    def __init__(self, balance=0):
        self.balance = balance
        self.log = []
    def transfer(self, other, amount):
        self.balance -= amount
        other.balance += amount
        self.log.append(amount)
    def history(self):
        return self.log

def encode(value):
    return value
def decode(value):
    return value
def build(cls, *args):
    return cls(*args)
def each(f, values):
    return [f(v) for v in values]
def notify(sender, text):
    sender(text.upper())
def later(when):
    return when + datetime.timedelta(hours=1)
def window(values):
    return deque(values, maxlen=2)
def tally(text):
    return Counter(text)
def pair(a, b):
    return Pair(a, b)
def double(n):
    return 2 * n
def sort_in_place(values):
    values.sort()
"""
E2E_CHECKS = """
    from unittest.mock import MagicMock
    import datetime
    from collections import Counter, deque
    assert decode(encode(Account)) is Account and decode(encode(double)) is double
    a, b = build(Account, 10), Account()
    a.transfer(b, 4)
    assert (a.balance, b.balance) == (6, 4)
    log = a.history()
    log.append(1)
    assert a.history() == [4, 1]
    assert each(lambda v: v + 1, [1, 2]) == [2, 3]
    sender = MagicMock()
    notify(sender, "hi")
    sender.assert_called_once_with("HI")
    assert double(10 ** 10000) == 2 * 10 ** 10000
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    assert later(start) == start + datetime.timedelta(hours=1)
    assert window([1, 2, 3]) == deque([2, 3], maxlen=2)
    assert tally("aab") == Counter(a=2, b=1)
    p = pair(1, 2)
    assert p == (1, 2) and p.right == 2
    values = [3, 1, 2]
    sort_in_place(values)
    assert values == [1, 2, 3]
"""


def test_honest_round_trips_are_scored_isolated(sb: Any) -> None:
    from codegen.evaluation.humaneval import Problem
    from codegen.evaluation.scoring import score_candidates
    from codegen.sandbox.types import Limits

    problem = Problem(
        task_id="Fixture/round-trips",
        prompt="",
        entry_point="double",
        canonical_solution=E2E_SOLUTION,
        test="def check(candidate):" + E2E_CHECKS,
    )
    wrong = E2E_SOLUTION.replace("values.sort()", "values.sort(reverse=True)")
    right, bad = score_candidates(sb, problem, [E2E_SOLUTION, wrong], Limits(timeout_s=60.0))
    assert right.passed and right.isolated is True, right
    assert not bad.passed and bad.isolated is True and bad.category == "wrong_answer", bad


def test_honest_round_trips_pass_pytest_isolated(sb: Any) -> None:
    from codegen.sandbox.types import Limits

    names = (
        "Account, build, decode, double, each, encode, later, notify, pair, sort_in_place, tally"
    )
    tests = f"from solution import {names}, window\n\n\ndef test_round_trips():" + E2E_CHECKS
    report = sb.run_pytest(E2E_SOLUTION, tests, Limits(timeout_s=60.0))
    assert report.ok and report.isolated is True, report
