"""Classes in programmers' replies, in the shapes real models send them (fixtures written for
the project): a class over several blocks, a skeleton and its filled-in class in either order,
methods continued in a block of their own (indented, or with the first line at column 0),
``@staticmethod``s given apart; every method kept, and a reply with no class change joined
as before."""

from __future__ import annotations

import pytest

from codegen.agents.replies import AgentOutputError, extract_module
from codegen.agents.replies.class_merge import merge_definitions
from codegen.agents.roles import read_solution
from codegen.agents.spec import Spec

ACCOUNT = {"BankAccount": ["__init__", "deposit", "withdraw", "view_balance", "is_valid"]}


def account(code: str) -> object:
    # Parsed fixture code is ours, not a model's: it is safe to execute here.
    namespace: dict[str, object] = {}
    exec(compile(code, "solution.py", "exec"), namespace)
    cls = namespace["BankAccount"]
    assert isinstance(cls, type)
    return cls


SPLIT_OVER_BLOCKS = '''Here is the class, with the constructor first:

```python
class BankAccount:
    """A bank account that keeps its balance."""

    def __init__(self, balance=0):
        self.balance = balance

    def deposit(self, amount):
        if amount < 0:
            raise ValueError("Invalid amount")
        self.balance += amount
        return self.balance
```

Then withdrawing, which checks the balance:

```python
    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("Insufficient balance.")
        self.balance -= amount
        return self.balance
```

And the rest of the class:

```python
class BankAccount:
    def view_balance(self):
        return self.balance

    @staticmethod
    def is_valid(amount):
        return amount >= 0
```

Usage:

```python
account = BankAccount()
account.deposit(1000)
print(account.view_balance())
```
'''


def test_a_class_spread_over_blocks_keeps_every_method() -> None:
    parsed = extract_module(SPLIT_OVER_BLOCKS, [], ACCOUNT)
    cls = account(parsed.code)
    a = cls(10)  # type: ignore[operator]
    assert a.deposit(5) == 15 and a.withdraw(3) == 12 and a.view_balance() == 12
    assert cls.is_valid(-1) is False  # type: ignore[attr-defined]
    assert parsed.code.count("class BankAccount") == 1
    assert "A bank account that keeps its balance." in parsed.code
    assert "print(" not in parsed.code  # the usage block defines nothing
    assert any("put in it" in n for n in parsed.notes)
    assert any("given more than once" in n for n in parsed.notes)


SKELETON = '''class BankAccount:
    """A bank account."""

    def __init__(self, balance=0):
        """Starts with ``balance``.
        >>> BankAccount(5).balance
        5
        """
        self.balance = balance

    def deposit(self, amount):
        """Adds ``amount``; returns the balance.
        >>> BankAccount().deposit(3)
        3
        """
        pass

    def withdraw(self, amount):
        """Takes ``amount`` out; returns the balance."""
        ...

    def view_balance(self):
        """The balance."""
        raise NotImplementedError
'''

FILLED = '''class BankAccount:
    """A bank account."""

    def __init__(self, balance=0):
        self.balance = balance

    def deposit(self, amount):
        """Adds ``amount``; returns the balance.
        >>> BankAccount().deposit(3)
        3
        """
        self.balance += amount
        return self.balance

    def withdraw(self, amount):
        self.balance -= amount
        return self.balance
'''


@pytest.mark.parametrize("order", ["skeleton first", "filled first"])
def test_a_skeleton_never_replaces_the_bodies_filled_in(order: str) -> None:
    blocks = [SKELETON, FILLED] if order == "skeleton first" else [FILLED, SKELETON]
    reply = "".join(f"```python\n{b}```\n\nThat is the class.\n\n" for b in blocks)
    code = extract_module(reply, [], ACCOUNT).code
    a = account(code)(7)  # type: ignore[operator]
    assert a.deposit(3) == 10 and a.withdraw(4) == 6
    # The skeleton's method no reply filled in stays (a stub: the tests will say so).
    with pytest.raises(NotImplementedError):
        a.view_balance()
    assert code.count("def deposit") == 1 and ">>> BankAccount().deposit(3)" in code


METHODS_ONLY = '''```python
def deposit(self, amount):
        """Adds amount.

        >>> account.deposit(3)
        3
        """
        self.balance += amount
        return self.balance


    def view_balance(self):
        text = """balance:
  kept as written"""
        return self.balance
```'''


def test_methods_without_their_class_get_the_specs_class_around_them() -> None:
    # The class header and constructor were in the question; the reply continues from there
    # with its first line at column 0.
    parsed = extract_module(METHODS_ONLY, [], ACCOUNT)
    cls = account(parsed.code)
    a = cls.__new__(cls)  # type: ignore[call-overload]
    a.balance = 1
    assert a.deposit(2) == 3 and a.view_balance() == 3
    assert 'text = """balance:\n  kept as written"""' in parsed.code  # string lines untouched
    assert any("without its class" in n for n in parsed.notes)


def test_static_methods_given_apart_join_the_one_class() -> None:
    reply = (
        "```python\nclass Shapes:\n    def __init__(self):\n        self.sides = []\n```\n\n"
        "A helper:\n\n```python\n@staticmethod\ndef area(w, h):\n    return w * h\n```\n"
        "```python\n@classmethod\ndef square(cls):\n    return cls()\n```\n"
    )
    code = extract_module(reply, [], {"Shapes": ["__init__"]}).code
    namespace: dict[str, object] = {}
    exec(compile(code, "solution.py", "exec"), namespace)
    shapes = namespace["Shapes"]
    assert shapes.area(2, 3) == 6 and isinstance(shapes.square(), shapes)  # type: ignore[attr-defined]
    assert "area" not in namespace  # not a free function


def test_a_whole_class_in_one_block_is_left_as_written() -> None:
    reply = f"```python\n# accounts\n\n\n{FILLED}\n\nRATE = 0.01\n```"
    parsed = extract_module(reply, [], ACCOUNT)
    assert parsed.code == f"# accounts\n\n\n{FILLED}\n\nRATE = 0.01\n"
    assert parsed.notes == ()
    # Free functions and repeated free definitions: joined as before, the later one wins.
    codes = ["def f():\n    return 1\n", "def f():\n    return 2\n"]
    assert merge_definitions(codes) == ("\n\n".join(codes), [])


def test_a_reply_defining_none_of_the_specs_classes_is_refused() -> None:
    spec = Spec.model_validate(
        {
            "purpose": "accounts",
            "classes": [
                {
                    "name": "BankAccount",
                    "description": "balance",
                    "constructor": "def __init__(self, balance: int = 0) -> None",
                    "attributes": [],
                    "methods": [],
                }
            ],
            "behaviours": [],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    )
    with pytest.raises(AgentOutputError, match="BankAccount"):
        read_solution("```python\ndef helper(x):\n    return x\n```", spec)
    assert "class BankAccount" in read_solution(f"```python\n{FILLED}```", spec).code


def test_a_class_header_over_several_lines_and_a_one_line_class_merge() -> None:
    first = (
        "class Point(\n    object,\n):  # a point\n    x = 0\n\n"
        "    def norm(self):\n        return 0\n"
    )
    second = "class Point: y = 1\n"
    code, notes = merge_definitions([first, second])
    namespace: dict[str, object] = {}
    exec(compile(code, "solution.py", "exec"), namespace)
    point = namespace["Point"]
    assert point.x == 0 and point.y == 1 and point().norm() == 0  # type: ignore[attr-defined]
    assert notes == ["class Point given more than once: merged"]


def test_a_class_nested_past_unparses_depth_is_joined_as_it_is() -> None:
    deep = "x" + ".y" * 2000  # parses; ast.unparse of it would overflow the stack
    codes = [f"class A: x = {deep}\n", "class A:\n    y = 1\n"]
    assert merge_definitions(codes) == ("\n\n".join(codes), [])
