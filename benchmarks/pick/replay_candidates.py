"""Several recorded runs as the candidates of one task, through the whole crew by replay:
the crew's pick beside random pick, the best single run, CodeT's rule and the oracle, all
from the same run.

    .venv/bin/python -m benchmarks.pick.replay_candidates --data ../shared/replays/mapcoder
    .venv/bin/python -m benchmarks.pick.replay_candidates --data ../shared/replays/mapcoder-mbpp \\
        --mbpp-set ../shared/datasets/mbpp/mbpp-multiple-397.jsonl
    # --limit N tasks; --workers W tasks at a time; --equal-votes-only: pass 1 only

Every ``*.jsonl`` of ``--data`` (MapCoder's result files, name order) is one candidate:
``codegen replay import --format mapcoder F0 F1 ... REC`` makes file j's raw reply candidate
j's, and derives the analyzer's and test designer's replies from the public prompt (the real
signature and the worked examples: the docstring's ``>>>`` or prose-style examples for
HumanEval; MBPP's visible ``sample_io``, from ``--mbpp-set`` for every run alike). Then
``codegen replay serve`` and, in one fresh home:

1. ``codegen eval humaneval|mbpp --candidates N --json``: the crew with equal votes
   (``output_agreement``): ``agreement``.
2. Each run's reliability estimated from pass 1's selection records only (each draft's
   eligibility on the worked examples and its behaviour group; one-coin Dawid-Skene EM,
   ``codegen.agents.pick.reliability.estimate``; no hidden test), given to the crew as
   ``[llm] candidates = [{reliability = p_j}, ...]``, and the same evaluation again: the crew's
   pick with a history (``similarity_agreement``, the checks the drafts' posterior shows
   more likely wrong than right left out first): ``ours``. With ``--equal-votes-only`` this
   pass is skipped and ``ours`` is pass 1's pick.
3. Every draft of pass 1 (stored with the sample) scored on the hidden tests with
   ``codegen eval ... --samples-file`` (whole modules, N per task): each run alone (its draft is
   what the crew scores for it alone: a replay has no round 2), ``random`` (the mean over
   drafts), ``oracle`` (some draft correct), and ``codet`` (CodeT's dual agreement over the
   crew's suite verdicts stored in the selection record; the share of correct members of the
   group it picks).

Prints one JSON object; ``solved`` holds the figures side by side, ``against_best`` the
tasks the pick wins and loses against the best single run. MBPP is scored with the
rows' own tests (the test the authors ran). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED, replay_server


def row_id(row: dict[str, Any]) -> str:
    return str(row.get("task_id") or row["name"])


def write_task_file(rows: list[dict[str, Any]], mbpp_set: Path, out: Path) -> None:
    """MBPP: one task file for every run: the rows' prompt, entry point and own test, and the
    set's visible ``sample_io`` (the same public example for every candidate)."""
    visible = {}
    for line in mbpp_set.read_text().splitlines():
        if line.strip():
            task = json.loads(line)
            visible[row_id(task)] = task.get("sample_io") or task.get("given_tests") or []
    lines = []
    for row in rows:
        task = {
            "task_id": row_id(row),
            "prompt": row["prompt"],
            "entry_point": row["entry_point"],
            "test": row["test"],
            "sample_io": visible.get(row_id(row), []),
        }
        lines.append(json.dumps(task) + "\n")
    out.write_text("".join(lines))


def run_json(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"replay_candidates: error: {' '.join(command[1:4])} printed no JSON "
            f"(exit {done.returncode}): {done.stderr[-1500:]}"
        ) from None
    result["_exit"] = done.returncode
    return result


def stored(results_dir: Path, kind: str) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((results_dir / kind).glob("*.json"))}


def codet_share(selection: dict[str, Any], correct: list[bool]) -> float | None:
    """CodeT's dual agreement over the suite verdicts in the selection record: the share of
    correct members of the group it picks."""
    from codegen.agents.pick import dual_agreement

    cands = sorted(selection.get("candidates", []), key=lambda c: c["candidate"])
    if len(cands) != len(correct):
        return None
    names = sorted({n for c in cands for n in c["outcomes"]})
    if not names:
        return sum(correct) / len(correct)
    rows = [tuple(bool(c["outcomes"].get(n, False)) for n in names) for c in cands]
    members = dual_agreement(rows).group.members
    return sum(correct[i] for i in members) / len(members)


def import_runs(codegen: str, sources: list[str], env: dict[str, str], script: str) -> None:
    """``codegen replay import --format mapcoder`` of the runs into one recording; ``script``
    names the caller in the error."""
    imported = subprocess.run(
        [codegen, "replay", "import", "--format", "mapcoder", *sources],
        env=env,
        capture_output=True,
        text=True,
    )
    if imported.returncode != 0:
        raise SystemExit(f"{script}: error: import: {imported.stderr[-800:]}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "replays" / "mapcoder")
    parser.add_argument("--mbpp-set", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument(
        "--equal-votes-only",
        action="store_true",
        help="skip pass 2: the crew's pick is the one with equal votes (output_agreement)",
    )
    return parser.parse_args()


def _fresh_home(
    files: list[Path], mbpp_set: Path | None, mbpp: bool
) -> tuple[Path, dict[str, str], list[str]]:
    """A fresh home: the home, the environment that points at it, and the ``--tasks``
    arguments (MBPP: the task file written there)."""
    home = Path(tempfile.mkdtemp(prefix="replay-candidates-"))
    (home / "dagster").mkdir()
    env = {**os.environ, "CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    rows = [json.loads(x) for x in files[0].read_text().splitlines() if x.strip()]
    tasks_args: list[str] = []
    if mbpp:
        if mbpp_set is None:
            raise SystemExit("replay_candidates: error: MBPP needs --mbpp-set (the 397-task set)")
        tasks_file = home / "tasks.jsonl"
        write_task_file(rows, mbpp_set, tasks_file)
        tasks_args = ["--tasks", str(tasks_file)]
    return home, env, tasks_args


@dataclass
class _CrewPasses:
    """Passes 1 and 2 of the crew: their evaluations' JSON, pass 1's samples, the estimated
    reliability and each pass's wall seconds."""

    equal: dict[str, Any]
    weighted: dict[str, Any]
    samples: dict[str, dict[str, Any]]
    reliability: Any
    walls: dict[str, float] = field(default_factory=dict)


def _run_crew(
    codegen: str,
    home: Path,
    env: dict[str, str],
    crew_args: list[str],
    names: tuple[str, ...],
    equal_votes_only: bool,
) -> _CrewPasses:
    """Pass 1 (equal votes) and, unless ``equal_votes_only``, pass 2 (the history estimated
    from pass 1) of ``codegen eval`` + ``crew_args`` against the replay server."""
    recording, log = home / "recording.jsonl", home / "replay-log.jsonl"
    walls: dict[str, float] = {}
    try:
        with replay_server(codegen, recording, log, env, "replay_candidates") as base_url:
            run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
            crew = [codegen, "eval", *crew_args]
            started = time.perf_counter()
            equal = run_json(crew, run_env)
            walls["crew_equal_votes"] = time.perf_counter() - started
            samples = stored(Path(equal["results_dir"]), "samples")

            # The estimate an evaluation with several models now makes itself at its end
            # (codegen.evaluation.learned; benchmarks/pick/learned_pick.py runs that one command).
            from codegen.agents.pick import estimate, votes_of

            task_votes = [
                v
                for doc in samples.values()
                for c in doc["candidates"][:1]
                if c.get("selection") and (v := votes_of(c["selection"], names)) is not None
            ]
            reliability = estimate(task_votes)
            priors = [min(0.99, max(0.01, reliability.accuracy.get(n, 0.5))) for n in names]
            entries = ", ".join(f"{{reliability = {p:.4f}}}" for p in priors)
            weighted = equal
            if not equal_votes_only:
                (home / "codegen.toml").write_text(f"[llm]\ncandidates = [{entries}]\n")
                started = time.perf_counter()
                weighted = run_json(crew, run_env)
                walls["crew_with_history"] = time.perf_counter() - started
    finally:
        (home / "codegen.toml").unlink(missing_ok=True)
    return _CrewPasses(equal, weighted, samples, reliability, walls)


def _score_drafts(
    codegen: str,
    home: Path,
    env: dict[str, str],
    scoring_args: tuple[list[str], list[str]],
    samples: dict[str, dict[str, Any]],
    count: int,
) -> tuple[dict[str, Any], list[str], float]:
    """Every draft of pass 1 on the hidden tests, N per task in candidate order; ``scoring_args``:
    the task set and the ``--workers`` arguments. The evaluation's JSON, the tasks without
    N drafts (their code counted N times) and the scoring's wall seconds."""
    task_set, workers = scoring_args
    drafts_file = home / "drafts.jsonl"
    lines, missing = [], []
    for key, doc in samples.items():
        sample = doc["candidates"][0]
        drafts = sample.get("drafts") or []
        if len(drafts) != count:
            missing.append(key)
            drafts = [sample.get("code") or ""] * count
        task_id = doc.get("task_id") or key
        for code in drafts:
            lines.append(json.dumps({"task_id": task_id, "solution": code or "# no code\n"}))
    drafts_file.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    scoring = ["--samples-file", str(drafts_file), "--json", *workers]
    scored = run_json(
        [codegen, "eval", *task_set, *scoring],
        env,
    )
    return scored, missing, time.perf_counter() - started


@dataclass
class _Tally:
    """Tasks solved by each run and each way of picking, and the tasks where they differ."""

    per_run: list[int]
    random_pick: float = 0.0
    oracle: float = 0.0
    codet: float = 0.0
    agreement: int = 0
    ours: int = 0
    per_task: dict[str, dict[str, Any]] = field(default_factory=dict)
    ours_by_task: dict[str, tuple[bool, list[bool]]] = field(default_factory=dict)


def _tally(
    samples: dict[str, dict[str, Any]],
    draft_scores: dict[str, dict[str, Any]],
    pick_equal: dict[str, dict[str, Any]],
    pick_weighted: dict[str, dict[str, Any]],
    count: int,
) -> _Tally:
    t = _Tally(per_run=[0] * count)
    for key, doc in samples.items():
        verdicts = [bool(s["passed"]) for s in draft_scores[key]["scores"]]
        for j, ok in enumerate(verdicts):
            t.per_run[j] += ok
        t.random_pick += sum(verdicts) / count
        t.oracle += any(verdicts)
        selection = doc["candidates"][0].get("selection") or {}
        share = codet_share(selection, verdicts)
        t.codet += share if share is not None else sum(verdicts) / count
        a = bool(pick_equal[key]["scores"][0]["passed"])
        w = bool(pick_weighted[key]["scores"][0]["passed"])
        t.agreement += a
        t.ours += w
        t.ours_by_task[key] = (w, verdicts)
        if w != max(verdicts) or a != w:
            t.per_task[key] = {"drafts": verdicts, "agreement": a, "ours": w}
    return t


def _result(
    args: argparse.Namespace,
    names: tuple[str, ...],
    passes: _CrewPasses,
    scoring: tuple[dict[str, Any], list[str]],
    t: _Tally,
    home: Path,
) -> dict[str, Any]:
    """The JSON printed; ``scoring``: the draft scoring's JSON and the tasks without drafts."""
    scored, missing = scoring
    equal, weighted = passes.equal, passes.weighted
    best = max(range(len(names)), key=lambda j: t.per_run[j])
    # The tasks behind ``ours_minus_best``: the pick right where the best run is wrong, and
    # the other way round.
    against_best = {
        "won": [k for k, (w, v) in t.ours_by_task.items() if w and not v[best]],
        "lost": [k for k, (w, v) in t.ours_by_task.items() if v[best] and not w],
    }
    return {
        "data": str(args.data),
        "tasks": len(passes.samples),
        "candidates": list(names),
        "solved": {
            "random": round(t.random_pick, 2),
            "best_single": t.per_run[best],
            "best_single_run": names[best],
            "codet": round(t.codet, 2),
            "agreement": t.agreement,
            "ours": t.ours,
            "ours_rule": "output_agreement"
            if args.equal_votes_only
            else "similarity_agreement with the estimated history and fallible checks",
            "oracle": int(t.oracle),
            "ours_minus_best": t.ours - t.per_run[best],
        },
        "each_run": dict(zip(names, t.per_run, strict=True)),
        "reliability": {n: round(passes.reliability.accuracy.get(n, 0.0), 3) for n in names},
        "tasks_without_drafts": missing,
        "crew_statuses": weighted.get("crew_statuses"),
        "eval_exits": [equal["_exit"], weighted["_exit"], scored["_exit"]],
        "errors": [equal.get("errors"), weighted.get("errors"), scored.get("errors")],
        "wall_s": {k: round(v, 1) for k, v in passes.walls.items()},
        "differing_tasks": t.per_task,
        "against_best": against_best,
        "home": str(home),
    }


def main() -> None:
    # A stop (SIGTERM) unwinds like Ctrl-C: the replay server is terminated in `finally` and
    # subprocess.run kills the eval it waits on, so nothing is left behind.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    args = _parse_args()
    files = sorted(args.data.glob("*.jsonl"))
    names = tuple(f.stem for f in files)
    count = len(files)
    mbpp = "mbpp" in args.data.name.lower()
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    home, env, tasks_args = _fresh_home(files, args.mbpp_set, mbpp)
    task_set = ["mbpp", *tasks_args] if mbpp else ["humaneval"]
    extra = [*(["--limit", str(args.limit)] if args.limit else [])]
    extra += ["--workers", str(args.workers)] if args.workers else []
    recording = home / "recording.jsonl"
    import_runs(codegen, [*map(str, files), str(recording), *tasks_args], env, "replay_candidates")
    crew_args = [*task_set, "--candidates", str(count), "--json", *extra]
    passes = _run_crew(codegen, home, env, crew_args, names, args.equal_votes_only)
    workers = ["--workers", str(args.workers)] if args.workers else []
    scored, missing, seconds = _score_drafts(
        codegen, home, env, (task_set, workers), passes.samples, count
    )
    passes.walls["scoring_drafts"] = seconds
    draft_scores = stored(Path(scored["results_dir"]), "scores")
    pick_equal = stored(Path(passes.equal["results_dir"]), "scores")
    pick_weighted = stored(Path(passes.weighted["results_dir"]), "scores")
    t = _tally(passes.samples, draft_scores, pick_equal, pick_weighted, count)
    result = _result(args, names, passes, (scored, missing), t, home)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
