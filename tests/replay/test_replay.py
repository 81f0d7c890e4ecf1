"""Record and replay: importers for the public formats, the replay server over real HTTP with
the real ``openai`` SDK, the crew evaluated from a replay, and ``--record`` round trips.

Fixtures are small files written here in the public formats' shapes (MapCoder, CodeT, LDB,
human-eval); none of the recorded files in ../shared/replays is used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from codegen.agents.spec import Spec
from codegen.evaluation.humaneval import get_problem
from codegen.orchestration.cli import main
from codegen.replay.importers import codet_test_assertions, codet_truncate, import_file
from codegen.replay.recording import DERIVED, RECORDED, read_recording
from codegen.replay.server import ReplayServer

API_KEY = "sk-replay-test-0123456789-not-a-real-key"


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def mapcoder_row(task_id: str, reply: str, solved: bool) -> dict[str, Any]:
    p = get_problem(task_id.replace("/", "-"))
    return {
        "task_id": task_id,
        "prompt": p.prompt,
        "entry_point": p.entry_point,
        "canonical_solution": p.canonical_solution,
        "test": p.test,
        "source_codes": [reply],
        "responses": [reply],
        "prompt_tokens": [10],
        "completion_tokens": [20],
        "no_of_try": 1,
        "is_solved": solved,
        "language": "Python3",
    }


def canonical_reply(task_id: str, fence: str = "```python") -> str:
    p = get_problem(task_id.replace("/", "-"))
    return f"Here is the code.\n\n{fence}\n{p.prompt}{p.canonical_solution}```\n"


@pytest.fixture
def mapcoder_file(tmp_path: Path) -> Path:
    rows = [
        mapcoder_row("HumanEval/0", canonical_reply("HumanEval/0"), True),
        mapcoder_row("HumanEval/2", canonical_reply("HumanEval/2", "```"), True),
        mapcoder_row("HumanEval/7", canonical_reply("HumanEval/7"), True),
    ]
    return jsonl(tmp_path / "GPT4-fixture.jsonl", rows)


@pytest.fixture
def recording(mapcoder_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "replay.jsonl"
    code = main(["replay", "import", "--format", "mapcoder", str(mapcoder_file), str(out)])
    assert code == 0, capsys.readouterr().err
    return out


@pytest.fixture
def server(recording: Path) -> Iterator[ReplayServer]:
    import io

    with ReplayServer(read_recording(recording), log=io.StringIO()) as srv:
        yield srv


def client(srv: ReplayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)


def ask(srv: ReplayServer, headers: dict[str, str], **kw: Any) -> Any:
    return client(srv).chat.completions.create(
        model="gpt-4-turbo",
        messages=[{"role": "user", "content": "write it"}],
        extra_headers=headers,
        **kw,
    )


def programmer(task: str, candidate: int = 0, round_no: int = 1) -> dict[str, str]:
    return {
        "X-Codegen-Agent": "programmer",
        "X-Codegen-Task": task,
        "X-Codegen-Candidate": str(candidate),
        "X-Codegen-Round": str(round_no),
    }


def test_mapcoder_import_keeps_replies_as_sent_and_derives_the_other_roles(
    recording: Path, mapcoder_file: Path
) -> None:
    loaded = read_recording(recording)
    rows = [json.loads(x) for x in mapcoder_file.read_text().splitlines()]
    code = {e.task: e for e in loaded.entries if e.role == "programmer"}
    assert {t: e.content for t, e in code.items()} == {
        r["task_id"]: r["responses"][-1] for r in rows
    }
    assert all(e.source == RECORDED and (e.candidate, e.round) == (0, 1) for e in code.values())
    derived = [e for e in loaded.entries if e.role != "programmer"]
    assert {e.role for e in derived} == {"analyzer", "test_designer", "reviewer", "documenter"}
    assert all(e.source == DERIVED for e in derived)
    spec = Spec.model_validate_json(
        next(e.content for e in derived if e.role == "analyzer" and e.task == "HumanEval/0")
    )
    assert spec.functions[0].name == "has_close_elements"
    assert spec.examples and "0.5" in spec.examples[0].call
    tests = next(
        e.content for e in derived if e.role == "test_designer" and e.task == "HumanEval/0"
    )
    assert "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False" in tests
    for e in derived:  # built from the public prompt: nothing of the hidden check
        assert "def check(" not in e.content and "METADATA" not in e.content
    assert "derived" in loaded.header["notes"]


def test_server_answers_by_task_streaming_or_not(server: ReplayServer, recording: Path) -> None:
    expected = {
        e.task: e.content for e in read_recording(recording).entries if e.role == "programmer"
    }
    for task in ("HumanEval/7", "HumanEval/0"):
        reply = ask(server, programmer(task))
        assert reply.choices[0].message.content == expected[task]
        assert reply.usage is not None and reply.usage.completion_tokens > 0
    stream = ask(server, programmer("HumanEval/2"), stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == expected["HumanEval/2"]
    models = client(server).models.list()
    assert [m.id for m in models.data] == ["replay"]
    log = server.served
    assert [(r["task"], r["status"], r["served"]["task"]) for r in log] == [
        ("HumanEval/7", 200, "HumanEval/7"),
        ("HumanEval/0", 200, "HumanEval/0"),
        ("HumanEval/2", 200, "HumanEval/2"),
    ]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (programmer("HumanEval/3"), "no task 'HumanEval/3'"),
        (
            {**programmer("HumanEval/0"), "X-Codegen-Agent": "critic"},
            "no replies for role 'critic'",
        ),
        (programmer("HumanEval/0", round_no=2), "candidate 0, round 2"),
        (programmer("HumanEval/0", candidate=4), "candidate 4, round 1"),
        ({"X-Codegen-Agent": "programmer"}, "no X-Codegen-Task header"),
        ({"X-Codegen-Task": "HumanEval/0"}, "no X-Codegen-Agent header"),
    ],
)
def test_what_the_recording_cannot_answer_is_a_404_never_a_made_up_reply(
    server: ReplayServer, headers: dict[str, str], message: str
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        ask(server, headers)
    assert message in str(caught.value)
    assert server.served[-1]["status"] == 404 and "served" not in server.served[-1]


def codet_fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "codet"
    folder.mkdir()
    tasks = []
    for key in ("HumanEval-0", "HumanEval-2"):
        p = get_problem(key)
        tasks.append(
            {"task_id": p.task_id, "prompt": "\n" + p.prompt, "entry_point": p.entry_point}
        )
    jsonl(folder / "HumanEval_for_code_generation.jsonl", tasks)
    jsonl(folder / "HumanEval_for_test_case_generation.jsonl", tasks)
    samples = [
        get_problem("HumanEval-0").canonical_solution + "\n\ndef unrelated():\n    pass\n",
        "    return True\n# trailing comment\nprint('x')\n",
    ]
    jsonl(
        folder / "X_code_solution.jsonl",
        [{"prompt": t["prompt"], "samples": samples} for t in tasks],
    )
    test_sample = (
        "has_close_elements([1.0, 2.0], 0.5) == False\n"
        "assert has_close_elements([1.0], 0.5) == False\nassert True\nprint(1)"
    )
    jsonl(
        folder / "X_test_case.jsonl", [{"prompt": tasks[0]["prompt"], "samples": [test_sample, ""]}]
    )
    return folder / "X_code_solution.jsonl"


def test_codet_import_truncation_and_test_cases(tmp_path: Path) -> None:
    source = codet_fixture(tmp_path)
    entries = import_file("codet", source)
    code = [e for e in entries if e.role == "programmer"]
    assert len(code) == 4 and {(e.task, e.candidate) for e in code} == {
        ("HumanEval/0", 0),
        ("HumanEval/0", 1),
        ("HumanEval/2", 0),
        ("HumanEval/2", 1),
    }
    assert code[0].content.endswith("def unrelated():\n    pass\n")  # as sent
    assert "def unrelated" not in codet_truncate(code[0].content)  # CodeT's cut, for scoring
    assert codet_truncate(code[1].content) == "    return True"
    tests = [e for e in entries if e.role == "test_designer" and e.source == RECORDED]
    assert [e.seq for e in tests] == [0, 1] and tests[0].task == "HumanEval/0"
    assert codet_test_assertions(
        "has_close_elements([1.0, 2.0], 0.5) == False\nassert True", "has_close_elements"
    ) == ["assert has_close_elements([1.0, 2.0], 0.5) == False"]
    assert "assert has_close_elements([1.0], 0.5) == False" in tests[0].content
    assert tests[1].content == ""  # an empty test sample stays empty
    # HumanEval/2 had no test samples: its test designer reply is derived from the prompt.
    assert any(
        e.role == "test_designer" and e.source == DERIVED
        for e in entries
        if e.task == "HumanEval/2"
    )


def test_ldb_and_human_eval_imports(tmp_path: Path) -> None:
    p = get_problem("HumanEval-0")
    ldb = jsonl(
        tmp_path / "ldb.jsonl",
        [
            {
                "task_id": "HumanEval/0",
                "prompt": p.prompt,
                "entry_point": p.entry_point,
                "seed": "    return True\n",
                "implementations": [
                    p.prompt + "    return True\n",
                    p.prompt + p.canonical_solution,
                ],
                "test_feedback": [["assert ... # failed"], []],
                "generated_test": ["assert has_close_elements([1.0, 2.0], 0.5) == False"],
                "solution": p.prompt + p.canonical_solution,
                "is_solved": True,
                "debug_iter": 1,
            }
        ],
    )
    entries = import_file("ldb", ldb, recorded_only=True)
    assert [(e.role, e.round) for e in entries] == [
        ("programmer", 1),
        ("programmer", 2),
        ("test_designer", None),
    ]
    samples = jsonl(
        tmp_path / "samples.jsonl",
        [
            {"task_id": "HumanEval/0", "completion": "    return True\n"},
            {"task_id": "HumanEval/0", "solution": p.prompt + p.canonical_solution},
        ],
    )
    entries = import_file("human-eval", samples, recorded_only=True)
    assert [(e.candidate, e.content) for e in entries] == [
        (0, "    return True\n"),
        (1, p.prompt + p.canonical_solution),
    ]


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("mapcoder", "", "empty: nothing to import"),
        ("mapcoder", '{"task_id": "HumanEval/0", "responses": []}\n', ":1: responses must end"),
        ("mapcoder", '{"task_id": "HumanEval/0",\n', ":1: not valid JSON"),
        ("ldb", '{"task_id": "Nope/1", "implementations": []}\n', ":1: unknown task_id"),
        ("human-eval", '{"task_id": "HumanEval/0"}\n', ":1: neither completion nor solution"),
    ],
)
def test_bad_import_input_is_one_line(
    fmt: str, content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(content)
    out = tmp_path / "out.jsonl"
    assert main(["replay", "import", "--format", fmt, str(source), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("codegen: error:") and message in err[0], err
    assert not out.exists()


def test_serve_refuses_a_bad_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "programmer"}\n')
    assert main(["replay", "serve", str(bad), "--port", "0"]) == 2
    assert "no codegen_recording header" in capsys.readouterr().err


def point_at(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)


def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["eval", "humaneval", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


@pytest.mark.docker
def test_crew_evaluation_replayed_from_an_imported_recording(
    server: ReplayServer,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(monkeypatch, server.base_url)
    tasks = ["HumanEval/0", "HumanEval/2", "HumanEval/7"]
    code, result = run_eval(capsys, *[a for t in tasks for a in ("--task", t)])
    assert code == 0, result
    assert result["pass_at_k"] == {"pass@1": 1.0} and result["crew_statuses"] == {"passed": 3}
    served = [r for r in server.served if r["role"] == "programmer"]
    assert sorted(r["task"] for r in served) == tasks
    assert all(r["status"] == 200 and r["served"]["task"] == r["task"] for r in served)
    assert all(r["status"] == 200 for r in server.served), [
        r for r in server.served if r["status"] != 200
    ]


@pytest.mark.docker
def test_a_replay_whose_round_2_was_never_recorded_ends_unrecorded_and_is_scored(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    # One recorded reply, wrong: the docstring examples fail, the crew asks for round 2, which
    # the recording does not hold (the replay server's own 404 code, not an outage).
    p = get_problem("HumanEval-0")
    wrong = f"```python\n{p.prompt}    return None\n```\n"
    rows = [mapcoder_row("HumanEval/0", wrong, False)]
    recording = tmp_path / "replay.jsonl"
    assert (
        main(
            [
                "replay",
                "import",
                "--format",
                "mapcoder",
                str(jsonl(tmp_path / "m.jsonl", rows)),
                str(recording),
            ]
        )
        == 0
    )
    with ReplayServer(read_recording(recording), log=io.StringIO()) as srv:
        point_at(monkeypatch, srv.base_url)
        code, result = run_eval(capsys, "--task", "HumanEval/0")
        assert code == 0, result
        assert result["crew_statuses"] == {"unrecorded": 1}
        assert result["model_failures"] == {"unrecorded": 1} and result["errors"] == {}
        assert result["pass_at_k"] == {"pass@1": 0.0}  # scored with the code so far
        misses = [r for r in srv.served if r["status"] == 404]
        assert misses and misses[0]["role"] == "programmer" and misses[0]["round"] == 2
        served = len(srv.served)
        code, again = run_eval(capsys, "--task", "HumanEval/0")
        assert code == 0 and again["cached_tasks"] == 1 and len(srv.served) == served


@pytest.mark.docker
def test_record_then_replay_gives_the_same_evaluation(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    from codegen.replay.scripted import ScriptedOpenAIServer
    from codegen.testing.scripted_crew import make_handler

    tasks = ["HumanEval/11", "HumanEval/12"]
    args = [a for t in tasks for a in ("--task", t)]
    record = tmp_path / "own.jsonl"
    with ScriptedOpenAIServer(handler=make_handler(solve=["HumanEval-11"])) as scripted:
        point_at(monkeypatch, scripted.base_url)
        code, first = run_eval(capsys, *args, "--record", str(record))
        calls = [r for r in scripted.requests if r.method == "POST"]
    assert code == 0, first
    assert first["pass_at_k"] == {"pass@1": 0.5}
    loaded = read_recording(record)
    assert len(loaded.entries) == len(calls)
    assert {(e.role, e.task) for e in loaded.entries} >= {
        (role, t) for role in ("analyzer", "test_designer", "programmer", "reviewer") for t in tasks
    }
    assert API_KEY not in record.read_text() and "Authorization" not in record.read_text()
    # Replay it in a fresh home (no cache): same verdicts, every request answered exactly.
    fresh = tmp_path / "fresh_home"
    fresh.mkdir()
    monkeypatch.setenv("CODEGEN_HOME", str(fresh))
    from codegen.settings import get_settings

    get_settings.cache_clear()
    with ReplayServer(loaded, log=io.StringIO()) as srv:
        point_at(monkeypatch, srv.base_url)
        code, again = run_eval(capsys, *args)
    assert code == 0, again
    assert again["pass_at_k"] == first["pass_at_k"]
    assert again["crew_statuses"] == first["crew_statuses"]
    assert len(srv.served) == len(calls) and all(r["status"] == 200 for r in srv.served)


@pytest.mark.docker
def test_generate_record_writes_every_step_into_one_recording(
    tmp_path: Path, isolated_home: Path
) -> None:
    import os
    import subprocess
    import sys

    from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler

    record = tmp_path / "generate.jsonl"
    with ScriptedOpenAIServer(handler=primes_handler) as scripted:
        env = {**os.environ, "OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": API_KEY}
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "codegen"),
                "generate",
                "--json",
                "--record",
                str(record),
                "Write primes_up_to(n) returning all primes <= n.",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        posts = [r for r in scripted.requests if r.method == "POST"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    request_id = json.loads(proc.stdout)["request_id"]
    loaded = read_recording(record)
    # Steps may run in other processes or threads; each appends under the file lock: nothing
    # lost or torn.
    assert len(loaded.entries) == len(posts)
    assert {e.role for e in loaded.entries} == {
        "analyzer",
        "test_designer",
        "programmer",
        "reviewer",
        "documenter",
    }
    assert {e.task for e in loaded.entries} == {request_id}
    assert API_KEY not in record.read_text()
