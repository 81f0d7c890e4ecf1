"""A program request end to end (scripted endpoint on loopback, each sandbox backend): "a
program that reads n and then n numbers from standard input and prints their median". The
spec holds the program's interface; the tests feed stdin and check stdout through the in-box
``program`` fixture; the spec's worked runs join the suite; report.json, the CLI and the UI
show the interface and each test's stdin, expected and actual output. A suite that never runs
the program does not make it pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest

from codegen.agents.crew import run_crew
from codegen.agents.llm import LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.report import RequestReport
from codegen.agents.runner import run_steps
from codegen.agents.state import CrewState
from codegen.agents.steps import Crew
from codegen.agents.types import Status
from codegen.assets.codegen_metadata import solution_metadata
from codegen.json_types import JSONObject
from codegen.orchestration.cli.outcome import show_outcome, summarize
from codegen.replay.scripted import MEDIAN_SPEC, ScriptedOpenAIServer, median_handler
from codegen.sandbox.api import Sandbox

REQUEST = "a program that reads n and then n numbers from standard input and prints their median"

# Prints the middle number as given, unsorted: 3 for "1 3 2", where the median is 2.
UNSORTED = """```python
import sys

numbers = sys.stdin.read().split()[1:]
print(numbers[len(numbers) // 2])
```"""


def client(server: ScriptedOpenAIServer, tmp_path: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=1,
        timeout_s=10,
        cache_dir=tmp_path / "llm-cache",
        modes_file=tmp_path / "modes.json",
    )


def _open(backend: str) -> Sandbox:
    from codegen.sandbox import DEFAULT_IMAGE, open_sandbox
    from codegen.sandbox.image import image_rootfs_path, rootfs_ready

    if backend == "bwrap" and not rootfs_ready(image_rootfs_path(DEFAULT_IMAGE)):
        pytest.skip("no bubblewrap root for the sandbox image (codegen sandbox build)")
    return open_sandbox(backend, pool_size=1)


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


def test_a_median_program_passes_with_its_interface_and_runs_shown(
    sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "req-0123456789abcdef"
    with ScriptedOpenAIServer(handler=median_handler) as server:
        state = CrewState(request_id=folder.name, request=REQUEST, options=CrewOptions())
        crew = Crew(
            llm=client(server, tmp_path).for_task(state.request_id),
            sandbox=lambda: nullcontext(sandbox),
            artifacts=folder,
        )
        state = run_steps(crew, state)
    out = state.outcome()
    assert out.status is Status.PASSED, out.reason
    assert out.spec is not None and out.spec.program is not None
    assert out.spec.program.usage == "median < numbers.txt"
    # The designer's five tests and the spec's two worked runs, each one a run of the program.
    assert 'program.check(stdin="3\\n1 3 2\\n", stdout="2\\n")' in out.tests
    assert "def test_spec_example_program_1(program):" in out.tests
    report = out.test_report
    assert report is not None and report.passed == report.total == 7
    assert all(len(t.program_runs) == 1 for t in report.tests)
    assert "print(values[middle])" in out.solution  # the bare script, read as a program

    stored = json.loads((folder / "report.json").read_text())
    assert stored["module"]["program"] == {
        "name": "median",
        "usage": "median < numbers.txt",
        "reads": ["stdin"],
        "writes": ["stdout"],
        "input_format": MEDIAN_SPEC["program"]["input_format"],
        "output_format": MEDIAN_SPEC["program"]["output_format"],
        "comparison": "trailing_whitespace",
        "examples": 2,
    }
    even = next(t for t in stored["test_report"]["tests"] if "even_count" in t["name"])
    assert even["program_runs"] == [
        {
            "stdin": "4\n4 1 3 2\n",
            "arguments": [],
            "expected_stdout": "2.5\n",
            "stdout": "2.5\n",
            "expected_exit_code": 0,
            "exit_code": 0,
            "timed_out": False,
            "output_capped": False,
            "comparison": "trailing_whitespace",
        }
    ]
    assert {m["name"]: (m["passed"], m["total"]) for m in stored["methods"]} == {"median": (7, 7)}

    summary = summarize(RequestReport.load(folder), None, folder)
    show_outcome(summary, as_json=False)
    printed = capsys.readouterr().out
    assert "module     program median < numbers.txt  [7/7 tests passed]" in printed
    assert "reads stdin; writes stdout; stdout compared: trailing_whitespace" in printed
    assert (
        "run        test_even_count_prints_the_mean passed: stdin '4\\n4 1 3 2\\n' -> "
        "stdout '2.5\\n' (expected '2.5\\n'), exit 0 (expected 0)"
    ) in printed
    assert len(summary["program_runs"]) == 7  # type: ignore[arg-type]

    shown = solution_metadata(state, folder)
    runs = shown["program_runs"]
    assert "test_odd_count passed: stdin '3\\n1 3 2\\n'" in str(getattr(runs, "value", runs))
    assert "program median < numbers.txt" in str(getattr(shown["module"], "value", ""))


def _spec_without_runs() -> JSONObject:
    program = {**MEDIAN_SPEC["program"], "examples": []}  # type: ignore[dict-item]
    return {**MEDIAN_SPEC, "program": program}


@pytest.mark.docker
def test_a_wrong_program_fails_and_a_suite_that_never_runs_it_does_not_pass(
    tmp_path: Path,
) -> None:
    box = _open("docker")
    try:
        with ScriptedOpenAIServer(
            script={"programmer": [UNSORTED]}, handler=median_handler
        ) as server:
            wrong = run_crew(
                REQUEST,
                llm=client(server, tmp_path),
                sandbox=box,
                options=CrewOptions(max_rounds=1),
            )
        unchecked_script: dict[str, list[object]] = {
            "analyzer": [_spec_without_runs()],
            "test_designer": ["```python\ndef test_median_exists():\n    assert True\n```"],
        }
        with ScriptedOpenAIServer(script=unchecked_script, handler=median_handler) as server:
            unchecked = run_crew(REQUEST, llm=client(server, tmp_path / "b"), sandbox=box)
    finally:
        box.close()
    assert wrong.status is Status.FAILED_TESTS, wrong.reason
    report = wrong.test_report
    assert report is not None
    failed = {t.name.split("::")[-1]: t for t in report.tests if t.outcome == "failed"}
    assert "test_spec_example_program_1" in failed  # a worked run of the spec: 2.5 wanted
    (run,) = failed["test_odd_count"].program_runs
    assert (run.stdin, run.expected_stdout, run.stdout) == ("3\n1 3 2\n", "2\n", "3\n")
    assert unchecked.status is Status.FAILED_TESTS
    assert "none ran the program `median`" in unchecked.reason
