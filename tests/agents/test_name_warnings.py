"""Warnings when a request's names and its spec's disagree, without false alarms on ordinary
English; and the suite's results per function and method."""

from __future__ import annotations

import pytest

from codegen.agents.spec import MethodResult, Spec, method_results, module_outline, name_warnings
from codegen.agents.spec.names import used_names
from codegen.replay.scripted import PRIMES_SPEC
from codegen.sandbox.types import TestCaseResult as Case
from codegen.sandbox.types import TestReport as Report

PRIMES = Spec.model_validate(PRIMES_SPEC)


def fn(name: str, signature: str) -> dict[str, str]:
    return {"name": name, "signature": signature, "description": ""}


def spec(
    functions: tuple[str, ...] = (), classes: dict[str, list[str]] | None = None, **kw: object
) -> Spec:
    return Spec.model_validate(
        {
            "purpose": "p",
            "functions": [fn(f, f"def {f}(x)") for f in functions],
            "classes": [
                {
                    "name": c,
                    "description": "",
                    "constructor": "def __init__(self)",
                    "attributes": [],
                    "methods": [fn(m, f"def {m}(self)") for m in methods],
                }
                for c, methods in (classes or {}).items()
            ],
            "behaviours": [],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
            **kw,
        }
    )


LRU = spec(classes={"LRUCache": ["get", "put"]})
BANK = spec(classes={"BankAccount": ["deposit", "withdraw", "history"]})
CSV_MEAN = spec(("column_mean",), dependencies=["pandas"], purpose="mean of the `price` column")
PALINDROME = spec(("is_palindrome",))


@pytest.mark.parametrize(
    ("request_text", "answer"),
    [
        ("a class LRUCache(capacity) with get and put", LRU),
        ("a BankAccount class that keeps a transaction history", BANK),
        ("load this CSV with pandas and return the mean of a column", CSV_MEAN),
        ("load data.csv with `pandas`; return the mean of column `price`", CSV_MEAN),
        ("write `is_palindrome(s)`", PALINDROME),
        (
            "Write a function primes_up_to(n) that returns all primes <= n using the Sieve "
            "of Eratosthenes.",
            PRIMES,
        ),
        ("Return the item(s) whose value(s) match, like f(x) = x^2; a Python class is fine", LRU),
    ],
)
def test_realistic_requests_answered_by_a_fitting_spec_carry_no_warning(
    request_text: str, answer: Spec
) -> None:
    assert name_warnings(request_text, answer) == []


def test_a_request_answered_with_another_function_warns_both_ways() -> None:
    warnings = name_warnings("write `is_palindrome(s)`", PRIMES)
    assert warnings == [
        "the request names `is_palindrome`, which the spec does not define "
        "(it defines: primes_up_to)",
        "the spec defines `primes_up_to`, which the request does not mention",
    ]


def test_a_class_the_request_names_must_be_the_specs() -> None:
    other = spec(classes={"Cache": ["get", "put"]})
    assert name_warnings("a class LRUCache(capacity) with get and put", other)[0].startswith(
        "the request names `LRUCache`"
    )
    assert name_warnings("a BankAccount class that keeps a history", other)[0].startswith(
        "the request names `BankAccount`"
    )


def test_what_counts_as_a_name_the_request_uses() -> None:
    text = (
        "Fix this:\n```python\ndef helper(x):\n    return foo(x)\n```\n"
        "Use pd.read_csv(path), print(x), `json`, `CSV`, `price`, `Stack` and `c.push(1)`; "
        "class Queue too; LRUCache.get(1)"
    )
    assert used_names(text, LRU) == {
        "helper": "code",  # defined in the fenced block; foo( inside it is not counted
        "Stack": "backticked",
        "Queue": "code",
        "get": "code",  # a dotted call on a class of the spec
    }


def test_method_calls_the_spec_has_and_lacks() -> None:
    assert name_warnings("an `LRUCache` with `get(key)` and `put(key, value)`", LRU) == []
    assert name_warnings("an `LRUCache` with `evict()`", LRU) == [
        "the request names `evict`, which the spec does not define (it defines: LRUCache)"
    ]


LRU_TESTS = """
from solution import LRUCache as C

def make():
    return C(2)

def test_get_missing_key():
    c = C(2)
    c.put(1, 1)
    assert c.get(2) == -1

def test_eviction():
    c = make()
    c.put(1, 1); c.put(2, 2); c.put(3, 3)
    assert c.get(1) == -1

def test_zero_capacity():
    C(0)

class TestPut:
    def test_put_overwrites(self):
        c = C(1); c.put(1, 1); c.put(1, 2)
        assert c.get(1) == 2

def test_nothing():
    assert True
"""


def test_results_per_method_follow_the_calls_and_the_test_names() -> None:
    outcomes = {
        "test_get_missing_key": "passed",
        "test_eviction": "failed",
        "test_zero_capacity": "passed",
        "TestPut::test_put_overwrites": "passed",
        "test_nothing[1]": "error",
    }
    report = Report(tests=[Case(f"test_solution.py::{n}", o) for n, o in outcomes.items()])
    assert method_results(LRU, LRU_TESTS, report) == [
        MethodResult("LRUCache.__init__", 1, 1),  # only where no method of it is called
        # test_get_missing_key names get; test_eviction calls both (the helper builds it)
        MethodResult("LRUCache.get", 1, 2, ("test_solution.py::test_eviction",)),
        MethodResult("LRUCache.put", 1, 2, ("test_solution.py::test_eviction",)),
        MethodResult("", 0, 1, ("test_solution.py::test_nothing[1]",)),
    ]
    assert method_results(LRU, "def broken(:", report) == []  # no guess from a bad suite
    assert method_results(LRU, LRU_TESTS, None) == []
    again = MethodResult.from_dict(MethodResult("f", 1, 2, ("t",)).to_dict())
    assert again == MethodResult("f", 1, 2, ("t",))


def test_the_outline_lists_functions_classes_methods_and_dependencies() -> None:
    assert module_outline(CSV_MEAN)["dependencies"] == ["pandas"]
    outline = module_outline(LRU)
    assert outline["functions"] == [] and outline["classes"] == [
        {
            "name": "LRUCache",
            "constructor": "def __init__(self)",
            "attributes": [],
            "methods": [
                {"name": "get", "signature": "def get(self)"},
                {"name": "put", "signature": "def put(self)"},
            ],
        }
    ]
