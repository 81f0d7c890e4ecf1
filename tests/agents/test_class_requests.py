"""Class requests end to end on both sandbox backends, with a scripted endpoint on loopback:
the spec has the class, the tests use an instance, the results read per method; three drafts
where the one that forgets its state between calls passes the whole suite and is still not
picked (call sequences split it off); a class whose spec names pandas runs with pandas in the
sandbox. Fixtures written for these tests."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.dependencies import SandboxPackages
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.types import Status
from codegen.json_types import JSONObject
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.sandbox.api import Sandbox
from codegen.sandbox.image import package_set, sandbox_distributions

LEDGER_SPEC: JSONObject = {
    "purpose": "A ledger that keeps a balance and the history of its movements.",
    "functions": [],
    "classes": [
        {
            "name": "Ledger",
            "description": "Deposits and withdrawals on one balance, starting at 0.",
            "constructor": "def __init__(self) -> None",
            "attributes": [{"name": "balance", "type": "int", "description": "the balance"}],
            "methods": [
                {
                    "name": "deposit",
                    "signature": "def deposit(self, amount: int) -> int",
                    "description": "Adds amount (ValueError unless positive); the new balance.",
                },
                {
                    "name": "withdraw",
                    "signature": "def withdraw(self, amount: int) -> int",
                    "description": "Takes amount out (ValueError past the balance); the balance.",
                },
                {
                    "name": "history",
                    "signature": "def history(self) -> list[int]",
                    "description": "Every movement so far, deposits positive, in order.",
                },
            ],
        }
    ],
    "constants": [],
    "dependencies": [],
    "behaviours": ["the balance is the sum of the history"],
    "edge_cases": ["withdrawing more than the balance raises ValueError"],
    "examples": [{"setup": [], "call": "Ledger().deposit(5)", "expected": "5"}],
    "constraints": [],
}
# Named per method; the sequences they drive check too little to catch a ledger that forgets.
LEDGER_TESTS = """```python
import pytest

from solution import Ledger


def test_deposit_returns_the_balance():
    ledger = Ledger()
    assert ledger.deposit(5) == 5


def test_deposit_rejects_zero():
    with pytest.raises(ValueError):
        Ledger().deposit(0)


def test_withdraw_past_the_balance_raises():
    ledger = Ledger()
    with pytest.raises(ValueError):
        ledger.withdraw(1)


def test_history_starts_empty():
    assert Ledger().history() == []


def test_history_keeps_the_order():
    ledger = Ledger()
    ledger.deposit(3)
    ledger.deposit(4)
    assert ledger.history()[0] == 3
    assert ledger.balance >= 4
```"""
# The right ledger, as a model sends it: the class, then the rest of its methods in a block
# of their own, then a usage block.
RIGHT_SPLIT = """Here is the class:

```python
class Ledger:
    \"\"\"Deposits and withdrawals on one balance.\"\"\"

    def __init__(self) -> None:
        self.balance = 0
        self._moves: list[int] = []

    def deposit(self, amount: int) -> int:
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount
        self._moves.append(amount)
        return self.balance
```

And the remaining methods:

```python
    def withdraw(self, amount: int) -> int:
        if amount > self.balance:
            raise ValueError("insufficient balance")
        self.balance -= amount
        self._moves.append(-amount)
        return self.balance

    def history(self) -> list[int]:
        return list(self._moves)
```

Usage:

```python
ledger = Ledger()
print(ledger.deposit(5))
```"""
RIGHT_BY_HISTORY = """```python
class Ledger:
    def __init__(self):
        self.moves = []

    @property
    def balance(self):
        return sum(self.moves)

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(amount)
        self.moves.append(amount)
        return self.balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError(amount)
        self.moves.append(-amount)
        return self.balance

    def history(self):
        return self.moves[:]
```"""
# Right on every call made on a fresh ledger; a deposit forgets the balance before it.
FORGETS = """```python
class Ledger:
    def __init__(self):
        self.balance = 0
        self.moves = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(amount)
        self.balance = amount
        self.moves.append(amount)
        return self.balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError(amount)
        self.balance -= amount
        self.moves.append(-amount)
        return self.balance

    def history(self):
        return list(self.moves)
```"""


def replies(spec: JSONObject, tests: str) -> object:
    def handler(role: str, body: JSONObject) -> object:
        return {
            "analyzer": spec,
            "test_designer": tests,
            "reviewer": "APPROVED\nMatches the spec.",
            "documenter": "# solution\n",
        }[role]

    return handler


def client(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=1,
        timeout_s=10,
        cache_dir=tmp_path / "llm-cache",
    )


def _open(backend: str) -> Sandbox:
    from codegen.sandbox import DEFAULT_IMAGE, open_sandbox
    from codegen.sandbox.image import image_rootfs_path, rootfs_ready

    if backend == "bwrap" and not rootfs_ready(image_rootfs_path(DEFAULT_IMAGE)):
        pytest.skip("no bubblewrap root for the sandbox image (codegen sandbox build)")
    return open_sandbox(backend, pool_size=2)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("bwrap", marks=pytest.mark.bwrap),
    ],
)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    box = _open(request.param)
    yield box
    box.close()


def test_a_class_request_passes_and_sequences_pick_the_ledger_that_remembers(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = {"programmer": [FORGETS, RIGHT_SPLIT, RIGHT_BY_HISTORY]}
    folder = tmp_path / "req-0123456789abcdef"
    with ScriptedOpenAIServer(script=script, handler=replies(LEDGER_SPEC, LEDGER_TESTS)) as server:
        out = run_crew(
            "a Ledger class with deposit, withdraw and history",
            llm=client(server, tmp_path),
            sandbox=sandbox,
            options=CrewOptions(candidates=3, max_rounds=1),
            artifacts=folder,
        )
    assert out.status is Status.PASSED, out.reason
    assert out.spec is not None and [c.name for c in out.spec.classes] == ["Ledger"]
    assert "ledger = Ledger()" in out.tests
    report = out.test_report
    assert report is not None and report.passed == report.total == 5
    # The pick: every draft passes the suite and the example; the two that remember agree on
    # every step of every sequence, the forgetful one does not.
    stored = json.loads((folder / "report.json").read_text())
    picked = stored["candidates"]
    assert {c["passed"] for c in picked["candidates"]} == {6}  # 5 tests + 1 worked example
    assert [g["size"] for g in picked["groups"]] == [2, 1]
    assert "self.balance = amount" not in out.solution
    assert out.solution.count("class Ledger") == 1 and "def history" in out.solution
    texts = [i["args"] for i in picked["inputs"]]
    assert "obj = Ledger(); obj.deposit(3); obj.deposit(4)" in texts
    split = picked["splitting_inputs"]
    assert split and all("obj.deposit" in texts[s["input"]] for s in split[:1])
    # Per-method results in report.json, read from the suite's calls and test names.
    methods = {m["name"]: (m["passed"], m["total"]) for m in stored["methods"]}
    assert methods == {
        "Ledger.__init__": (0, 0),  # every test calls a method too
        "Ledger.deposit": (2, 2),
        "Ledger.withdraw": (1, 1),
        "Ledger.history": (2, 2),
    }


STATS_SPEC: JSONObject = {
    **copy.deepcopy(LEDGER_SPEC),
    "purpose": "Summary statistics of a column of numbers, with pandas.",
    "classes": [
        {
            "name": "Column",
            "description": "A column of numbers held as a pandas Series.",
            "constructor": "def __init__(self, values: list[float]) -> None",
            "attributes": [],
            "methods": [
                {
                    "name": "median",
                    "signature": "def median(self) -> float",
                    "description": "The median of the values.",
                },
                {
                    "name": "append",
                    "signature": "def append(self, value: float) -> None",
                    "description": "Adds a value at the end.",
                },
            ],
        }
    ],
    "dependencies": ["pandas"],
    "examples": [{"setup": ["c = Column([1.0, 3.0])"], "call": "c.median()", "expected": "2.0"}],
}
STATS_CODE = """```python
import pandas as pd


class Column:
    def __init__(self, values: list[float]) -> None:
        self.series = pd.Series(values, dtype="float64")

    def median(self) -> float:
        return float(self.series.median())

    def append(self, value: float) -> None:
        self.series = pd.concat([self.series, pd.Series([value])], ignore_index=True)
```"""
STATS_TESTS = """```python
from solution import Column


def test_median_after_append():
    column = Column([1.0, 2.0])
    column.append(9.0)
    assert column.median() == 2.0
    assert column.series.dtype.name == "float64"
```"""


def test_a_class_whose_spec_names_pandas_runs_with_pandas(sandbox: Sandbox, tmp_path: Path) -> None:
    declared = sandbox_distributions("none-built", package_set())
    script = {"programmer": [STATS_CODE]}
    with ScriptedOpenAIServer(script=script, handler=replies(STATS_SPEC, STATS_TESTS)) as server:
        out = run_crew(
            "a Column class: the median of numbers, with pandas",
            llm=client(server, tmp_path),
            sandbox=sandbox,
            packages=SandboxPackages("default", (), declared),
        )
    assert out.status is Status.PASSED, (out.reason, out.test_report)
    assert out.spec is not None and out.spec.dependencies == ["pandas"]
    assert out.test_report is not None and out.test_report.passed == out.test_report.total == 1
