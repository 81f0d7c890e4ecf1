"""A spec for another request ends ``off_target`` (not ``passed`` with a warning): decided once,
after the spec, before any programmer call. Partial overlap stays a warning; a request that
names no code is never flagged. The scripted endpoint says when it answers a request it has
no script for."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.report import all_pass, counted
from codegen.agents.spec import Spec, name_warnings, off_target
from codegen.agents.state import Ended, SpecResult
from codegen.agents.types import Status
from codegen.assets.codegen_checks import spec_check_result
from codegen.replay.scripted import CANNED, PRIMES_SPEC, ScriptedOpenAIServer
from codegen.sandbox.api import Sandbox

PRIMES = Spec.model_validate(PRIMES_SPEC)
LRU_REQUEST = "Write a class LRUCache(capacity) with get(key) and put(key, value)."
# The spec ends these requests before any code runs: a sandbox is never opened.
NO_SANDBOX = cast(Sandbox, object())


def lru(*methods: str) -> Spec:
    return Spec.model_validate(
        {
            "purpose": "an LRU cache",
            "functions": [],
            "classes": [
                {
                    "name": "LRUCache",
                    "description": "",
                    "constructor": "def __init__(self, capacity: int)",
                    "attributes": [],
                    "methods": [
                        {"name": m, "signature": f"def {m}(self, key)", "description": ""}
                        for m in methods
                    ],
                }
            ],
            "behaviours": [],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    )


def test_a_class_request_answered_with_primes_is_off_target() -> None:
    reason = off_target(LRU_REQUEST, PRIMES)
    assert reason is not None
    assert reason.startswith(
        "the spec answers another request: the request asks for `LRUCache`, `get`, `put`; "
        "the spec defines `primes_up_to` (Return all prime numbers"
    )
    assert off_target("write `is_palindrome(s)`", PRIMES) is not None


def test_partial_overlap_stays_a_warning() -> None:
    partial = lru("get")  # has LRUCache and get, lacks put
    assert off_target(LRU_REQUEST, partial) is None
    assert name_warnings(LRU_REQUEST, partial) == [
        "the request names `put`, which the spec does not define (it defines: LRUCache)"
    ]
    assert off_target(LRU_REQUEST, lru("get", "put")) is None


@pytest.mark.parametrize(
    "request_text",
    [
        "write a function that reverses a string",
        "Return the item(s) whose value(s) match, like f(x) = x^2",
        "a Table class: column means with pandas",
    ],
)
def test_a_request_naming_no_code_is_never_off_target(request_text: str) -> None:
    assert off_target(request_text, PRIMES) is None


def client(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url, api_key="sk-test", cache_dir=tmp_path / "llm", max_retries=0
    )


def test_the_crew_ends_off_target_after_the_spec_with_the_scripted_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(handler=CANNED["primes"]) as server:
        out = run_crew(LRU_REQUEST, llm=client(server, tmp_path), sandbox=NO_SANDBOX)
        roles = [r.role for r in server.requests]
    assert out.status is Status.OFF_TARGET, out.reason
    assert roles == ["analyzer"]  # no test designer, programmer or reviewer for the wrong thing
    assert "asks for `LRUCache`, `get`, `put`; the spec defines `primes_up_to`" in out.reason
    # The scripted endpoint said, on its console and in the spec the report shows, why.
    assert "[scripted endpoint: no script for this request; its one script answers " in out.reason
    assert capsys.readouterr().err.splitlines() == [
        f"scripted endpoint: no script for {LRU_REQUEST!r}; answering with its one script "
        "(primes_up_to)"
    ]


def test_the_scripted_endpoint_is_quiet_on_the_request_it_knows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = CANNED["primes"]
    body = {"messages": [{"role": "user", "content": "<request>\nprimes up to n\n</request>"}]}
    assert answer("analyzer", body) == PRIMES_SPEC
    assert capsys.readouterr().err == ""


def test_the_spec_check_is_red_when_the_spec_ended_the_request() -> None:
    from dagster import AssetCheckSeverity

    assert spec_check_result(SpecResult(spec=PRIMES)).passed
    for status in (Status.OFF_TARGET, Status.MISSING_DEPENDENCY):
        result = spec_check_result(SpecResult(spec=PRIMES, ended=Ended(status, "why")))
        assert not result.passed and result.severity is AssetCheckSeverity.ERROR
        assert result.description == f"{status.value}: why"


def test_counts_agree_with_their_nouns() -> None:
    assert [counted(n, "test") for n in (0, 1, 2)] == ["0 tests", "1 test", "2 tests"]
    assert [all_pass(n) for n in (1, 5)] == ["the 1 test passes", "all 5 tests pass"]


def log_top(program: str, *functions: str) -> Spec:
    """A command-line tool's spec: the program ``program`` and the functions it is built of."""
    return Spec.model_validate(
        {
            "purpose": "prints the ten most frequent IP addresses of a log file",
            "functions": [
                {"name": f, "signature": f"def {f}(lines: list[str])", "description": ""}
                for f in functions
            ],
            "program": {
                "name": program,
                "usage": f"{program} FILE [-n N]",
                "reads": ["files", "arguments"],
                "writes": ["stdout", "exit_code"],
                "input_format": "an access log, one request a line, the IP address first",
                "output_format": "one line per address: the count, a space, the address",
                "examples": [],
            },
            "behaviours": [],
            "edge_cases": [],
            "examples": [],
            "constraints": [],
        }
    )


@pytest.mark.parametrize(
    "request_text",
    [
        "Write log_top(path), a command-line tool that prints the ten most frequent IPs.",
        "A tool `log_top` that reads a log file and prints the ten most frequent IP addresses.",
        "A tool `logtop` that reads a log file and prints the ten most frequent IP addresses.",
    ],
)
def test_a_request_naming_the_specs_command_line_program_is_on_target(request_text: str) -> None:
    name = "logtop" if "`logtop`" in request_text else "log_top"
    spec = log_top(name, "count_addresses", "parse_line")
    assert off_target(request_text, spec) is None
    # The functions are where the program's logic lives: the request had no reason to name them.
    assert name_warnings(request_text, spec) == []


def test_a_request_naming_another_program_is_still_off_target() -> None:
    reason = off_target("Write word_count(path), a command-line tool.", log_top("log_top"))
    assert reason is not None and "the spec defines `log_top`" in reason


def test_a_program_spec_that_retells_the_problems_names_is_on_target() -> None:
    """A judge's statement names its problem's vocabulary (``gcd``, the stub it showed): a
    program's spec that repeats them answers the request; a function's spec still must define
    what the request calls."""
    request = (
        "Write a Python 3 program that reads standard input and writes standard output.\n\n"
        "For a multiset of integers, print the `gcd` of the lcm of every pair: gcd(a, b)..."
    )
    program = log_top("solution").model_copy(
        update={"purpose": "print gcd of the pairwise lcm of the integers read"}
    )
    assert off_target(request, program) is None
    unmentioned = log_top("solution")
    reason = off_target(request, unmentioned)
    assert reason is not None and "asks for `gcd`" in reason
    function_spec = PRIMES.model_copy(update={"purpose": "uses gcd(a, b) of the pairs"})
    assert off_target(request, function_spec) is not None
