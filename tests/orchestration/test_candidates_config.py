"""``[llm] candidates`` as a number or a list of per-candidate entries (issue 21, item 3): how it
reads, how ``--candidates N`` takes from it, the one-line errors of bad config, and how a
candidate's key variable is checked before a request is stored or handed to the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen import composition
from codegen.agents.llm import CandidateRoute, LLMRoute
from codegen.orchestration.cli import main
from codegen.requests.route import publish_daemon_environment, refusal
from codegen.requests.store import RequestStore
from codegen.settings import BadSettings, CandidateModel, get_settings, load_settings

KEY = "sk-candidate-canary-2718"
ENV = "CODEGEN_TEST_GPU_KEY"

QWEN = (
    '{model = "qwen2.5-coder:32b", base_url = "http://gpu-box:8000/v1", '
    f'api_key_env = "{ENV}", temperature = 0.4}}'
)
TWO = f'[llm]\ncandidates = [\n  {{model = "gpt-4o"}},\n  {QWEN},\n]\n'


def configure(home: Path, text: str) -> None:
    (home / "codegen.toml").write_text(text)
    get_settings.cache_clear()


def test_a_number_or_a_list_and_n_takes_the_first_entries_or_repeats_them(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings().llm.candidates == 1
    configure(isolated_home, "[llm]\ncandidates = 3\n")
    llm = load_settings().llm
    assert llm.candidates == 3 and llm.candidate_entries() == [CandidateModel()] * 3
    assert llm.candidates_for(5) == 5
    configure(isolated_home, TWO)
    llm = load_settings().llm
    assert [c.model for c in llm.candidate_entries()] == ["gpt-4o", "qwen2.5-coder:32b"]
    first = llm.candidates_for(1)
    assert isinstance(first, list) and [c.model for c in first] == ["gpt-4o"]
    longer = llm.candidates_for(5)
    assert isinstance(longer, list)
    assert [c.model for c in longer] == ["gpt-4o", "qwen2.5-coder:32b"] * 2 + ["gpt-4o"]
    # The environment overrides the file, with a number or a JSON list (as `codegen eval
    # --candidates N` hands it to backfill runs).
    monkeypatch.setenv("CODEGEN_LLM__CANDIDATES", "4")
    assert load_settings().llm.candidates == 4
    monkeypatch.setenv("CODEGEN_LLM__CANDIDATES", json.dumps([{"model": "m1"}, {"model": "m2"}]))
    assert [c.model for c in load_settings().llm.candidate_entries()] == ["m1", "m2"]


def test_the_route_carries_each_candidates_model_endpoint_and_key_variable_never_the_key(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(isolated_home, TWO)
    monkeypatch.setenv(ENV, KEY)
    route = composition.llm_route(load_settings())
    assert route.candidates == (
        CandidateRoute(model="gpt-4o"),
        CandidateRoute(
            model="qwen2.5-coder:32b",
            base_url="http://gpu-box:8000/v1",
            api_key_env=ENV,
            temperature=0.4,
        ),
    )
    text = json.dumps(route.to_dict())
    assert KEY not in text and ENV in text
    assert LLMRoute.from_dict(json.loads(text)) == route
    # A route stored before candidates travelled reads as none (the runner's own default).
    assert LLMRoute.from_dict({"base_url": "http://a/v1"}).candidates == ()


# Each case: the file, the key as the message names it, and why (the file's path between them).
BAD = {
    "unknown key": (
        '[llm]\ncandidates = [{model = "a"}, {modle = "b"}]\n',
        "[llm] candidates[1]",
        "unknown key 'modle' (did you mean 'model'?)",
    ),
    "empty list": ("[llm]\ncandidates = []\n", "[llm] candidates", "an empty list"),
    "literal key": (
        f'[llm]\ncandidates = [{{model = "a", api_key = "{KEY}"}}]\n',
        "[llm] candidates[0].api_key",
        "a key is never a setting",
    ),
    "key in api_key_env": (
        f'[llm]\ncandidates = [{{model = "a", api_key_env = "{KEY}"}}]\n',
        "[llm] candidates[0].api_key_env",
        "must name an environment variable",
    ),
    "credentials in base_url": (
        f'[llm]\ncandidates = [{{base_url = "http://u:{KEY}@gpu:8000/v1"}}]\n',
        "[llm] candidates[0].base_url",
        "holds credentials",
    ),
    "not a table": ('[llm]\ncandidates = ["gpt-4o"]\n', "[llm] candidates[0]", "must be a table"),
    "zero": ("[llm]\ncandidates = 0\n", "[llm] candidates", "must be 1-20"),
    "too many": (
        "[llm]\ncandidates = [" + ", ".join(["{}"] * 21) + "]\n",
        "[llm] candidates",
        "21 entries: at most 20",
    ),
    "a flag": ("[llm]\ncandidates = true\n", "[llm] candidates", "must be a number of drafts"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_candidates_config_is_one_line_naming_the_key_never_its_value(
    case: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, key, why = BAD[case]
    configure(isolated_home, text)
    expected = f"{key} of {isolated_home / 'codegen.toml'}: {why}"
    with pytest.raises(BadSettings) as raised:
        load_settings()
    assert expected in str(raised.value), str(raised.value)
    assert main(["info"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error: bad settings"), lines
    assert expected in lines[0] and KEY not in lines[0], lines


def test_generate_refuses_in_one_line_a_candidate_whose_key_variable_is_unset(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(isolated_home, TWO)
    monkeypatch.delenv(ENV, raising=False)
    assert main(["generate", "Write primes_up_to(n).", "--launch", "here"]) == 2  # refused
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and ENV in lines[0] and "candidates[1]" in lines[0], lines
    assert not RequestStore(isolated_home / "requests").all()  # nothing was stored


def test_the_daemon_is_refused_a_candidate_key_it_lacks_or_holds_another_of(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(isolated_home, TWO)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-main")
    monkeypatch.setenv(ENV, KEY)
    route = composition.llm_route(load_settings())
    # A daemon whose own candidates do not name the variable publishes no hash of it.
    lacking = publish_daemon_environment(isolated_home, route.base_url)
    problem = refusal(isolated_home, route, lacking)
    assert problem and f"no {ENV}" in problem and "candidates[1]" in problem, problem
    assert "http://gpu-box:8000/v1" in problem and "\n" not in problem and KEY not in problem
    same = publish_daemon_environment(isolated_home, route.base_url, [ENV])
    assert refusal(isolated_home, route, same) is None
    assert KEY not in (isolated_home / "daemon" / "llm.json").read_text()
    monkeypatch.setenv(ENV, "sk-another-gpu-key")
    problem = refusal(isolated_home, route, same)
    assert problem and f"a different {ENV} from this shell's" in problem, problem
    assert "\n" not in problem
    monkeypatch.delenv(ENV)
    problem = refusal(isolated_home, route, same)
    assert problem and "not set in this shell" in problem, problem


def test_the_readme_example_reads_as_it_says(isolated_home: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page[page.index("## Candidates from several models") :]
    block = section[section.index("```toml\n") + 8 :]
    configure(isolated_home, block[: block.index("```")])
    llm = load_settings().llm
    five = llm.candidates_for(5)
    assert isinstance(five, list)
    assert [c.model for c in five] == ["gpt-4o", "qwen2.5-coder:32b"] * 2 + ["gpt-4o"]
    assert five[1].base_url == "http://gpu-box:8000/v1" and five[1].api_key_env == "GPU_BOX_KEY"
