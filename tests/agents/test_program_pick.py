"""Picking among programs: drafts of a stdin/stdout program from several candidate models (a
scripted endpoint, one model per draft), run as whole programs on the spec's worked examples
and mutations of them, in one sandbox execution, and grouped by what they print."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext

import pytest

from codegen.agents.draft_pick import select_draft
from codegen.agents.llm import CandidateRoute, LLMClient
from codegen.agents.options import CrewOptions
from codegen.agents.pick import STREAM_LIMIT_S, Selection
from codegen.agents.runner import advance
from codegen.agents.state import CrewState
from codegen.agents.steps import Crew
from codegen.json_types import JSONObject
from codegen.replay.scripted import PRIMES_DOCS, ScriptedOpenAIServer
from codegen.sandbox.api import Sandbox

pytestmark = pytest.mark.docker

REQUEST = "A program that reads n and then n numbers from standard input and prints their median."
SPEC: JSONObject = {
    "purpose": "Print the median of n integers read from standard input.",
    "functions": [],
    "behaviours": ["prints the middle value of the sorted numbers"],
    "edge_cases": ["n = 1 prints the one number"],
    "examples": [],
    "constraints": ["standard library only"],
    "program": {
        "name": "median",
        "usage": "median < numbers.txt",
        "reads": ["stdin"],
        "writes": ["stdout"],
        "input_format": "The first line holds n (1 ≤ n ≤ 99, odd). The second line holds n "
        "integers a_i (1 ≤ a_i ≤ 10^9).",
        "output_format": "One line: the median.",
        "comparison": "trailing_whitespace",
        # The middle value of this example is its median: a draft that forgets to sort is
        # right on it, and wrong once the list is reordered.
        "examples": [{"stdin": "5\n5 1 3 2 4\n", "arguments": [], "stdout": "3\n"}],
    },
}
TESTS = "```python\ndef test_nothing_but_the_examples():\n    assert True\n```"
# Each a program as models write them: a main() and the __main__ guard that calls it.
SORTS = (
    "def main():\n    n = int(input())\n    a = sorted(map(int, input().split()))\n"
    "    print(a[n // 2])\n"
)
SORTS_TOO = (
    "import sys\n\n\ndef main():\n    data = sys.stdin.read().split()\n"
    "    values = sorted(int(x) for x in data[1:])\n    print(values[len(values) // 2])\n"
)
UNSORTED = (
    "def main():\n    n = int(input())\n    a = list(map(int, input().split()))\n"
    "    print(a[n // 2])\n"
)
HANGS = "import time\n\n\ndef main():\n    time.sleep(60)\n"
GUARD = '\n\nif __name__ == "__main__":\n    main()\n'


def _fenced(code: str) -> str:
    return f"```python\n{code}```"


def _handler(drafts: dict[str, str]):  # type: ignore[no-untyped-def]
    def answer(role: str, body: JSONObject) -> object:
        if role == "programmer":
            return _fenced(drafts[str(body.get("model"))] + GUARD)
        return {
            "analyzer": SPEC,
            "test_designer": TESTS,
            "reviewer": "APPROVED",
            "documenter": PRIMES_DOCS,
        }[role]

    return answer


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    from codegen.sandbox import open_sandbox

    sandbox = open_sandbox("docker", pool_size=2)
    yield sandbox
    sandbox.close()


def _picked(box: Sandbox, drafts: dict[str, str]) -> Selection:
    """The drafts of ``drafts`` (model -> program), one per candidate model, through the
    spec, tests, context and draft steps, then the pick."""
    with ScriptedOpenAIServer(handler=_handler(drafts)) as server:
        routes = tuple(CandidateRoute(model=m) for m in drafts)
        llm = LLMClient(
            base_url=server.base_url, api_key="sk-test", max_retries=0, candidates=routes
        )
        state = CrewState(
            request_id="req-0123456789abcdef",
            request=REQUEST,
            options=CrewOptions(candidates=len(drafts)),
        )
        crew = Crew(llm=llm.for_task(state.request_id), sandbox=lambda: nullcontext(box))  # type: ignore[arg-type,return-value]
        for step in ("spec", "tests", "context", "draft"):
            state = advance(step, crew, state)
        assert state.draft is not None, state
        assert [d.code for d in state.draft.drafts] == [c + GUARD for c in drafts.values()]
        _, selection, _ = select_draft(crew.llm, None, lambda _: None, box, state, None)
    return selection


def test_the_two_drafts_that_agree_on_mutated_inputs_win(box: Sandbox) -> None:
    # The one that forgets to sort comes first: a pick of the first draft would take it.
    selection = _picked(box, {"model-a": UNSORTED, "model-b": SORTS, "model-c": SORTS_TOO})
    assert selection.chosen in (1, 2), selection.why
    inputs = selection.inputs
    assert inputs[0].origin == "example" and inputs[0].args == "5\n5 1 3 2 4\n"
    assert {i.origin for i in inputs[1:]} == {"mutation"}
    assert selection.inputs_time_limit_s == STREAM_LIMIT_S
    classes = {c.candidate: c.classes for c in selection.candidates}
    assert classes[1] == classes[2]  # the sorting drafts print the same on every stream
    split = [
        k for k, (a, b) in enumerate(zip(classes[0] or [], classes[1] or [], strict=True)) if a != b
    ]
    assert split and 0 not in split  # same on the example, apart on mutations of it
    winners = next(g for g in selection.groups if selection.chosen in g.members)
    assert sorted(winners.members) == [1, 2]
    # The record shows each input by its stdin and what each group printed there.
    shown = inputs[split[0]].outputs
    assert len(shown) >= 2 and all(text.startswith("'") for text in shown.values())
    assert Selection.from_dict(selection.to_dict()) == selection


def test_a_draft_that_hangs_is_timed_out_not_picked(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("codegen.agents.pick.programs.STREAM_LIMIT_S", 0.5)
    selection = _picked(box, {"model-a": HANGS, "model-b": SORTS})
    assert selection.chosen == 1, selection.why
    hung = next(c for c in selection.candidates if c.candidate == 0).classes or []
    # Timed out on the first stream, then not run again (unknown, not a timeout each time).
    assert hung[0] == -2 and set(hung[1:]) == {-4}
    assert selection.inputs[0].outputs[-2] == "time limit"
    assert selection.inputs_time_limit_s == 0.5
    assert selection.inputs_seconds is not None and selection.inputs_seconds < 10
