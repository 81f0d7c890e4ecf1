"""The one-command path of issue 41: ``codegen eval humaneval|mbpp --candidates N`` on a fresh
home against ``codegen replay serve`` of several recorded runs, one model name per run and no
reliability in the config; the evaluation estimates each model's reliability and re-picks at
its end. This script sets that up, runs the one command, and then (outside the timed run)
scores every draft on the hidden tests for the figures the run cannot know: each run alone,
the best single run and the oracle.

    .venv/bin/python -m benchmarks.pick.learned_pick --data ../shared/replays/mapcoder
    .venv/bin/python -m benchmarks.pick.learned_pick --data ../shared/replays/mapcoder-mbpp \\
        --mbpp-set ../shared/datasets/mbpp/mbpp-multiple-397.jsonl
    # --workers W; --limit N; --store: write benchmarks/results/learned_pick_<set>.json

Prints one JSON object: the evaluation's own figures (``learned`` = its ``solved_tasks``,
``first_pick`` = the pick the crew made during the run, equal votes), the estimates, the
re-pick's seconds and share of the evaluation's wall time, the replay server's requests
logged between the re-pick's start and end (must be 0), and every figure again on the
held-out tasks, first: HumanEval's ``HELD_OUT_SEED`` (40 tasks drawn before the change; docs
name them), MBPP's ``MBPP_HELD_OUT_SEED`` (100 of the 397, drawn by seed before issue 48's rule
looked at MBPP). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, machine, replay_server
from benchmarks.pick.replay_candidates import (
    import_runs,
    row_id,
    run_json,
    stored,
    write_task_file,
)

HELD_OUT_SEED = 41
HELD_OUT_COUNT = 40
# MBPP's held-out tasks, drawn by seed alone (issue 48) before any rule looked at MBPP's picks:
# a quarter of the 397-task set.
MBPP_HELD_OUT_SEED = 43
MBPP_HELD_OUT_COUNT = 100
RESULT = RESULTS / "learned_pick_{set}.json"


def held_out() -> list[str]:
    """40 HumanEval tasks by a seeded draw over HumanEval/0..163."""
    keys = [f"HumanEval/{i}" for i in range(164)]
    return sorted(
        random.Random(HELD_OUT_SEED).sample(keys, HELD_OUT_COUNT),
        key=lambda k: int(k.split("/")[1]),
    )


def mbpp_held_out(task_ids: list[str]) -> list[str]:
    """100 of the MBPP set's tasks by a seeded draw over its ids in sorted order."""
    keys = sorted(task_ids)
    return sorted(random.Random(MBPP_HELD_OUT_SEED).sample(keys, MBPP_HELD_OUT_COUNT))


def figures(
    keys: list[str],
    names: list[str],
    drafts: dict[str, list[bool]],
    first: dict[str, bool],
    learned: dict[str, bool],
) -> dict[str, Any]:
    per_run = [sum(drafts[k][j] for k in keys if k in drafts) for j in range(len(names))]
    best = max(range(len(names)), key=lambda j: per_run[j])
    return {
        "tasks": len(keys),
        "each_run": dict(zip(names, per_run, strict=True)),
        "best_single": per_run[best],
        "best_single_run": names[best],
        "first_pick": sum(first.get(k, False) for k in keys),
        "learned": sum(learned.get(k, False) for k in keys),
        "oracle": sum(any(drafts.get(k, [])) for k in keys),
        "learned_minus_best": sum(learned.get(k, False) for k in keys) - per_run[best],
        "random": round(sum(sum(drafts[k]) / len(names) for k in keys if k in drafts), 2),
    }


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--mbpp-set", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--store", action="store_true", help="write benchmarks/results/learned_pick_<set>.json"
    )
    return parser.parse_args()


def _fresh_home(
    names: list[str], files: list[Path], mbpp_set: Path | None, mbpp: bool
) -> tuple[Path, dict[str, str], list[str]]:
    """A fresh home configured with one model name per run: the home, the environment that
    points at it, and the ``--tasks`` arguments (MBPP: the task file written there)."""
    home = Path(tempfile.mkdtemp(prefix="learned-pick-"))
    (home / "dagster").mkdir()
    env = {**os.environ, "CODEGEN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    env["CODEGEN_CONFIG"] = str(home / "codegen.toml")
    # One model name per run, as five models would be configured; no reliability.
    entries = ", ".join(f'{{model = "{n}"}}' for n in names)
    (home / "codegen.toml").write_text(f"[llm]\ncandidates = [{entries}]\n")
    tasks_args: list[str] = []
    if mbpp:
        if mbpp_set is None:
            raise SystemExit("learned_pick: error: MBPP needs --mbpp-set (the 397-task set)")
        rows = [json.loads(x) for x in files[0].read_text().splitlines() if x.strip()]
        write_task_file(rows, mbpp_set, home / "tasks.jsonl")
        tasks_args = ["--tasks", str(home / "tasks.jsonl")]
    return home, env, tasks_args


def _score_drafts(
    codegen: str,
    samples: dict[str, Any],
    runs: int,
    home: Path,
    task_set: list[str],
    env: dict[str, str],
) -> dict[str, Any]:
    """Every draft on the hidden tests (not part of the timed run), N per task: the stored
    scores."""
    lines = []
    for doc in samples.values():
        sample = doc["candidates"][0]
        codes = sample.get("drafts") or [sample.get("code") or ""] * runs
        for code in codes:
            lines.append(json.dumps({"task_id": doc["task_id"], "solution": code or "# none\n"}))
    (home / "drafts.jsonl").write_text("\n".join(lines) + "\n")
    scored = run_json(
        [codegen, "eval", *task_set, "--samples-file", str(home / "drafts.jsonl"), "--json"],
        env,
    )
    return stored(Path(scored["results_dir"]), "scores")


def _passed(
    samples: dict[str, Any],
    draft_scores: dict[str, Any],
    first_scores: dict[str, Any],
    learned_scores: dict[str, Any],
) -> tuple[dict[str, list[bool]], dict[str, bool], dict[str, bool]]:
    """Per task: whether each draft, the crew's first pick and the learned pick passed."""
    drafts = {
        doc["task_id"]: [bool(s["passed"]) for s in draft_scores[k]["scores"]]
        for k, doc in samples.items()
    }
    first = {samples[k]["task_id"]: bool(first_scores[k]["scores"][0]["passed"]) for k in samples}
    learned = {
        samples[k]["task_id"]: bool(
            (learned_scores.get(k) or first_scores[k])["scores"][0]["passed"]
        )
        for k in samples
    }
    return drafts, first, learned


def _eval_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's own figures, as its JSON gave them."""
    return {
        k: result.get(k)
        for k in (
            "solved_tasks",
            "tasks_scored",
            "pass_at_k",
            "wall_s",
            "repick_seconds",
            "repick_share",
            "crew_statuses",
            "_exit",
            "errors",
        )
    }


def main() -> None:
    args = _parse_args()
    files = sorted(args.data.glob("*.jsonl"))
    names = [f.stem for f in files]
    mbpp = "mbpp" in args.data.name.lower()
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    home, env, tasks_args = _fresh_home(names, files, args.mbpp_set, mbpp)
    recording, log = home / "recording.jsonl", home / "replay-log.jsonl"
    task_set = ["mbpp", *tasks_args] if mbpp else ["humaneval"]
    extra = ["--workers", str(args.workers)] if args.workers else []
    extra += ["--limit", str(args.limit)] if args.limit else []
    import_runs(codegen, [*map(str, files), str(recording), *tasks_args], env, "learned_pick")
    with replay_server(codegen, recording, log, env, "learned_pick") as base_url:
        run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
        command = [codegen, "eval", *task_set, "--candidates", str(len(files)), "--json", *extra]
        result = run_json(command, run_env)
    repick = result.get("repick") or {}
    calls = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    during = [c for c in calls if repick and repick["started_at"] <= c["at"] <= repick["ended_at"]]
    results_dir = Path(result["results_dir"])
    samples = stored(results_dir, "samples")
    draft_scores = _score_drafts(codegen, samples, len(files), home, task_set, env)
    drafts, first, learned = _passed(
        samples, draft_scores, stored(results_dir, "scores"), stored(results_dir, "learned")
    )
    every = list(drafts)
    out: dict[str, Any] = {
        "command": " ".join(Path(command[0]).name if i == 0 else c for i, c in enumerate(command)),
        "data": str(args.data),
        "eval": _eval_figures(result),
        "picks": result.get("picks"),
        "estimates": repick.get("estimates"),
        "moved": repick.get("moved"),
        "scored_for_repick": repick.get("scored"),
        "replay_requests_total": len(calls),
        "replay_requests_during_repick": len(during),
        "all": figures(every, names, drafts, first, learned),
        "home": str(home),
    }
    if mbpp:  # drawn over the whole set, whatever --limit ran
        lines = files[0].read_text().splitlines()
        held = mbpp_held_out([row_id(json.loads(x)) for x in lines if x.strip()])
        seed = MBPP_HELD_OUT_SEED
    else:
        held, seed = held_out(), HELD_OUT_SEED
    # Held-out figures first: the ones users get.
    out = {
        "held_out": {
            "seed": seed,
            "task_ids": held,
            **figures([k for k in held if k in drafts], names, drafts, first, learned),
        },
        **out,
        "machine": f"{machine()}; load average {os.getloadavg()[0]:.1f} at the end",
    }
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if args.store and not args.limit:
        RESULT.with_name(RESULT.name.format(set="mbpp" if mbpp else "humaneval")).write_text(
            text + "\n"
        )


if __name__ == "__main__":
    main()
