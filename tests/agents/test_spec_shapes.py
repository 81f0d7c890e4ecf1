"""The spec beyond one function (issue 37, item 1): classes, constants, sequence examples and
third-party dependencies, in both JSON modes, and the older function-only shape; a spec naming a
distribution outside the sandbox's package set ends ``missing_dependency`` before any
programmer call. Scripted endpoint on loopback, real Docker sandbox where code runs."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.dependencies import SandboxPackages
from codegen.agents.llm import LLMClient, Meter
from codegen.agents.roles import analyze, spec_json
from codegen.agents.spec import SPEC_JSON_SCHEMA, Spec
from codegen.agents.suite import spec_example_tests
from codegen.agents.types import Status
from codegen.json_types import JSONObject, JSONValue
from codegen.replay.scripted import PRIMES_SPEC, ScriptedOpenAIServer, primes_handler
from codegen.sandbox.api import Sandbox
from codegen.sandbox.image import package_set, sandbox_distributions

LRU_SPEC: JSONObject = {
    "purpose": "A least-recently-used cache of fixed capacity.",
    "functions": [],
    "classes": [
        {
            "name": "LRUCache",
            "description": "Keeps at most capacity keys; putting past it evicts the oldest.",
            "constructor": "def __init__(self, capacity: int) -> None",
            "attributes": [
                {"name": "capacity", "type": "int", "description": "the most keys kept"}
            ],
            "methods": [
                {
                    "name": "get",
                    "signature": "def get(self, key: int) -> int",
                    "description": "The key's value (and marks it recent), or -1.",
                },
                {
                    "name": "put",
                    "signature": "def put(self, key: int, value: int) -> None",
                    "description": "Stores it; past capacity evicts the least recently used.",
                },
            ],
        }
    ],
    "program": None,
    "constants": [{"name": "MISSING", "value": "-1", "description": "get's answer for no key"}],
    "dependencies": ["pandas"],
    "behaviours": ["get marks a key as recently used"],
    "edge_cases": ["capacity 1 keeps only the last key put"],
    "examples": [
        {"setup": ["c = LRUCache(2)", "c.put(1, 1)"], "call": "c.get(1)", "expected": "1"},
        {"setup": [], "call": "LRUCache(1).get(5)", "expected": "-1"},
    ],
    "constraints": [],
}


def client(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=1,
        timeout_s=10,
        cache_dir=tmp_path / "llm-cache",
        modes_file=tmp_path / "modes.json",
    )


def conforms(value: JSONValue, schema: JSONObject, root: JSONObject) -> bool:
    """``value`` against the subset of JSON Schema the spec's strict schema uses."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        defs = root["$defs"]
        assert isinstance(defs, dict)
        target = defs[ref.rsplit("/", 1)[-1]]
        assert isinstance(target, dict)
        return conforms(value, target, root)
    choices = schema.get("anyOf")
    if isinstance(choices, list):
        return any(isinstance(c, dict) and conforms(value, c, root) for c in choices)
    kind = schema["type"]
    if kind == "null":
        return value is None
    if kind == "string":
        return isinstance(value, str) and value in schema.get("enum", [value])  # type: ignore[operator]
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "array":
        items = schema["items"]
        assert isinstance(items, dict)
        return isinstance(value, list) and all(conforms(v, items, root) for v in value)
    props = schema["properties"]
    assert kind == "object" and isinstance(props, dict)
    return (
        isinstance(value, dict)
        and set(value) == set(props)
        and all(isinstance(p, dict) and conforms(value[k], p, root) for k, p in props.items())
    )


def strict_objects(node: JSONValue) -> Iterator[JSONObject]:
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for value in node.values():
            yield from strict_objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from strict_objects(value)


def test_the_schema_is_strict_and_a_class_spec_fits_it() -> None:
    objects = list(strict_objects(SPEC_JSON_SCHEMA))
    # the spec, function, attribute, class, program, program example, constant, example
    assert len(objects) == 8
    for node in objects:
        props = node["properties"]
        assert isinstance(props, dict)
        assert node["required"] == list(props) and node["additionalProperties"] is False
    assert "default" not in json.dumps(SPEC_JSON_SCHEMA)
    assert conforms(LRU_SPEC, SPEC_JSON_SCHEMA, SPEC_JSON_SCHEMA)
    assert not conforms(PRIMES_SPEC, SPEC_JSON_SCHEMA, SPEC_JSON_SCHEMA)  # the old shape


@pytest.mark.parametrize("profile", ["full", "vllm-0.5"])  # json_schema; json_object
def test_a_class_spec_with_dependencies_round_trips(tmp_path: Path, profile: str) -> None:
    with ScriptedOpenAIServer(
        handler=lambda role, body: LRU_SPEC, structured_outputs=profile
    ) as server:
        analysis = analyze(client(server, tmp_path), Meter(), "an LRU cache class")
        sent = (server.requests[-1].body or {}).get("response_format") or {}
    expected_mode = {"full": "json_schema", "vllm-0.5": "json_object"}[profile]
    assert analysis.structured_outputs == expected_mode
    if profile == "full":
        assert sent["json_schema"]["schema"] == SPEC_JSON_SCHEMA
    else:  # the schema travels in the prompt
        assert json.dumps(SPEC_JSON_SCHEMA, sort_keys=True) in server.requests[-1].prompt_text
    spec = analysis.spec
    assert spec.model_dump(mode="json") == LRU_SPEC
    assert [m.name for m in spec.classes[0].methods] == ["get", "put"]
    assert spec.dependencies == ["pandas"] and spec.names() == ["LRUCache", "MISSING"]
    # The agents see every part a request has (an example without setup shows none).
    shown = copy.deepcopy(LRU_SPEC)
    del shown["examples"][1]["setup"]  # type: ignore[index,union-attr]
    del shown["program"]  # a module that is no program reads as it always did
    assert json.loads(spec_json(spec)) == shown


def test_the_old_function_only_shape_parses_and_reads_as_before() -> None:
    spec = Spec.model_validate(PRIMES_SPEC)
    assert spec.classes == [] and spec.dependencies == [] and spec.constants == []
    assert all(e.setup == [] for e in spec.examples)
    # The agents are shown it exactly as before: recorded replies still match.
    assert json.loads(spec_json(spec)) == PRIMES_SPEC
    with pytest.raises(ValueError, match="no function, no class and no program"):
        Spec.model_validate({**PRIMES_SPEC, "functions": []})


def test_a_sequence_example_becomes_a_trusted_test() -> None:
    tests = spec_example_tests(Spec.model_validate(LRU_SPEC))
    namespace: dict[str, object] = {}
    exec(tests, namespace)  # compiles: two test functions
    assert {"test_spec_example_0", "test_spec_example_1"} <= set(namespace)
    assert "exec('c = LRUCache(2)\\nc.put(1, 1)', namespace)" in tests


# -- through the crew ------------------------------------------------------------------------
CSV_SPEC: JSONObject = {
    **copy.deepcopy(LRU_SPEC),
    "purpose": "Column means of a table with pandas.",
    "classes": [
        {
            "name": "Table",
            "description": "Rows of numbers; mean of a column.",
            "constructor": "def __init__(self, rows: list[dict[str, float]]) -> None",
            "attributes": [],
            "methods": [
                {
                    "name": "mean",
                    "signature": "def mean(self, column: str) -> float",
                    "description": "The column's mean.",
                }
            ],
        }
    ],
    "constants": [],
    "examples": [
        {"setup": ["t = Table([{'a': 1.0}, {'a': 3.0}])"], "call": "t.mean('a')", "expected": "2.0"}
    ],
}
CSV_CODE = """```python
import pandas as pd


class Table:
    def __init__(self, rows: list[dict[str, float]]) -> None:
        self.frame = pd.DataFrame(rows)

    def mean(self, column: str) -> float:
        return float(self.frame[column].mean())
```"""
CSV_TESTS = """```python
from solution import Table


def test_mean_over_calls():
    t = Table([{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}])
    assert t.mean("a") == 2.0
    assert t.mean("b") == 3.0
    assert t.frame.shape == (2, 2)
```"""


def csv_handler(spec: JSONObject) -> object:
    def handler(role: str, body: JSONObject) -> object:
        replies = {
            "analyzer": spec,
            "test_designer": CSV_TESTS,
            "programmer": CSV_CODE,
            "reviewer": "APPROVED\nMatches the spec.",
            "documenter": "# Table\n",
        }
        return replies[role]

    return handler


def default_packages() -> SandboxPackages:
    chosen = package_set()
    return SandboxPackages("default", (), sandbox_distributions("none-built", chosen))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    box = open_sandbox("docker", pool_size=1)
    yield box
    box.close()


@pytest.mark.docker
def test_a_distribution_outside_the_set_ends_before_the_programmer(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # PEP 503 names: "Pandas" is the set's pandas; "Scikit_Learn" is missing.
    spec = {**CSV_SPEC, "dependencies": ["Pandas", "Scikit_Learn", "json"]}
    with ScriptedOpenAIServer(handler=csv_handler(spec)) as server:
        out = run_crew(
            "column means with pandas and scikit-learn",
            llm=client(server, tmp_path),
            sandbox=sandbox,
            packages=default_packages(),
        )
    assert out.status is Status.MISSING_DEPENDENCY, out.reason
    assert [r.role for r in server.requests] == ["analyzer"]  # no programmer, no tests
    assert "needs Scikit_Learn," in out.reason and "Pandas" not in out.reason
    assert '[sandbox] packages = ["scikit-learn"]' in out.reason
    assert out.reason.endswith("codegen sandbox build --offline")
    assert out.spec is not None and out.to_dict()["status"] == "missing_dependency"


@pytest.mark.docker
def test_a_class_spec_naming_pandas_passes_in_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=csv_handler(CSV_SPEC)) as server:
        out = run_crew(
            "a Table class: column means with pandas",
            llm=client(server, tmp_path),
            sandbox=sandbox,
            packages=default_packages(),
        )
    assert out.status is Status.PASSED, out.reason
    assert out.test_report is not None and out.test_report.passed == out.test_report.total == 1
    assert "from solution import Table" in out.tests
    programmer = server.requests_for("programmer")[0].prompt_text
    assert '"dependencies": [\n    "pandas"\n  ]' in programmer
    assert "Import only the standard library" in programmer


@pytest.mark.docker
def test_the_old_shape_still_passes_with_the_check_on(sandbox: Sandbox, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        out = run_crew(
            "primes up to n",
            llm=client(server, tmp_path),
            sandbox=sandbox,
            packages=default_packages(),
        )
    assert out.status is Status.PASSED, out.reason
    assert out.spec is not None and out.spec.dependencies == []


LRU_CODE = """
class LRUCache:
    def __init__(self, capacity):
        self.capacity, self.data = capacity, {}

    def get(self, key):
        if key not in self.data:
            return -1
        self.data[key] = self.data.pop(key)
        return self.data[key]

    def put(self, key, value):
        self.data.pop(key, None)
        self.data[key] = value
        if len(self.data) > self.capacity:
            del self.data[next(iter(self.data))]
"""


@pytest.mark.docker
def test_a_sequence_example_passes_and_fails_in_the_sandbox(sandbox: Sandbox) -> None:
    # The setup runs by exec in a namespace copied from the solution: the class it constructs
    # must be there (the sandbox's solution module answers only the names asked for).
    from codegen.agents.roles import execute_tests

    tests = spec_example_tests(Spec.model_validate(LRU_SPEC))
    right = execute_tests(sandbox, LRU_CODE, tests, None)
    assert [t.outcome for t in right.tests] == ["passed", "passed"], right.tests
    wrong = execute_tests(sandbox, LRU_CODE.replace("return -1", "return None"), tests, None)
    assert [t.outcome for t in wrong.tests] == ["passed", "failed"], wrong.tests
