"""APPS through the whole crew by replay: each of MapCoder's six runs alone, and the five ChatGPT
runs as five named candidates; every figure scored in the same run with the APPS scorer, on
the 40 held-out tasks first (``common.apps_heldout``), then on every task run.

    .venv/bin/python -m benchmarks.crew.apps_replay_crew [--limit N] [--workers W]
        [--data ../shared/replays/mapcoder-apps] [--tasks ../shared/datasets/apps/apps-128.jsonl]
        [--only single,five] [--store]

Each configuration runs as a user runs it, in a fresh home: ``codegen replay import --format
mapcoder FILE... REC --tasks TASKS`` (the programmer's replies as recorded; the analyzer's
program spec and the test designer's ``program.check`` tests derived from each task's
description and visible examples), ``codegen replay serve REC``, then one ``codegen eval apps
--tasks TASKS --json`` against it. One file alone (``single_*``): one candidate. The five
ChatGPT files (``five_chatgpt``): ``--candidates 5`` with ``[llm] candidates`` naming each
file's model (one name per run, no reliability given); the evaluation learns each model's
reliability and re-picks at its end (``EvalSession.learn``), so ``ours`` is the figure a user
gets. Then every program of a task is scored at once (``codegen.evaluation.apps``: each hidden
input on stdin, stdout compared with trailing whitespace ignored, 4 s per input): the crew's
final program, its first pick, and each file's own final program (``source_codes[-1]``, as
``scoring.apps_plain`` scores it).

Printed per subset (held-out first, then all): per file alone ``plain`` (the file's programs),
``crew`` (through the crew: nothing lost is the target, crew >= plain) and per task where the
crew is below, the cause; for the five ``random`` (the mean of the five files), ``best_single``,
``ours`` (the learned pick), ``first_pick``, ``moved`` and ``oracle`` (some file right).
``--store`` writes benchmarks/results/apps_replay_crew.json (a full run; with ``--limit`` it is
stored as such, its command saying so). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, SHARED, machine, replay_server
from benchmarks.common.apps_heldout import HELD_OUT, SEED

RESULT = RESULTS / "apps_replay_crew.json"
PLAIN = RESULTS / "apps_plain.json"  # each file's programs scored alone (scoring.apps_plain)
SUFFIX = "-APPS-Python3-0-1.jsonl"
CHATGPT = ("Direct", "CoT", "Analogical", "SelfPlanning", "MapCoder-3-5")
GPT4 = "GPT4-Turbo-Direct"
FIVE = "five_chatgpt"
MARGIN_ALL = 2  # the five's pick: at least the best single run + 2 on all tasks
LOST_SHOWN = 3  # lines of the file's program the crew's lacks, named in a cause


@dataclass
class Config:
    name: str  # single_<model>, five_chatgpt
    files: list[Path]

    @property
    def models(self) -> list[str]:
        return [model_of(f) for f in self.files]


@dataclass
class EvalRun:
    """One configuration's ``codegen eval apps``: per task the final program and status, the
    crew's first pick and, per moved pick, what moved it."""

    config: Config
    solution: dict[str, str | None] = field(default_factory=dict)
    first: dict[str, str | None] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    reason: dict[str, str] = field(default_factory=dict)
    moved: dict[str, dict[str, Any]] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0


def model_of(path: Path) -> str:
    return path.name.removesuffix(SUFFIX)


def configs(data: Path, only: set[str]) -> list[Config]:
    chatgpt = [data / f"ChatGPT-{m}{SUFFIX}" for m in CHATGPT]
    every = [*chatgpt, data / f"{GPT4}{SUFFIX}"]
    missing = [p.name for p in every if not p.is_file()]
    if missing:
        raise SystemExit(f"apps_replay_crew: error: {data}: missing {', '.join(missing)}")
    out = [Config(f"single_{model_of(f)}", [f]) for f in every] if "single" in only else []
    return out + ([Config(FIVE, chatgpt)] if "five" in only else [])


def final_programs(path: Path, keys: set[str]) -> dict[str, str]:
    """Each task's final extracted program (``source_codes[-1]``), first row per task."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            key, codes = str(row.get("name", row.get("task_id"))), row.get("source_codes") or [""]
            if key in keys:
                found.setdefault(key, codes[-1])
    return found


def _codegen() -> str:
    return shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"


def _home(base: Path, config: Config) -> dict[str, str]:
    own = base / config.name
    (own / "dagster").mkdir(parents=True)
    env = {
        **os.environ,
        "CODEGEN_HOME": str(own),
        "DAGSTER_HOME": str(own / "dagster"),
        "CODEGEN_CONFIG": str(own / "codegen.toml"),
        "CODEGEN_LLM__CACHE": "false",
    }
    entries = ", ".join(f'{{model = "{m}"}}' for m in config.models)
    (own / "codegen.toml").write_text(f"[llm]\ncandidates = [{entries}]\n")
    return env


def run_eval(config: Config, tasks: Path, keys: list[str], base: Path, workers: int) -> EvalRun:
    """The configuration as a user runs it (module docstring); its progress on stderr."""
    codegen, env = _codegen(), _home(base, config)
    own = Path(env["CODEGEN_HOME"])
    recording, log = own / "recording.jsonl", own / "replay-log.jsonl"
    imported = subprocess.run(
        [
            *(codegen, "replay", "import", "--format", "mapcoder", *map(str, config.files)),
            *(str(recording), "--tasks", str(tasks)),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if imported.returncode != 0:
        raise SystemExit(f"apps_replay_crew: error: import: {imported.stderr[-800:]}")
    run, started = EvalRun(config), time.perf_counter()
    with replay_server(codegen, recording, log, env, "apps_replay_crew") as base_url:
        command = [codegen, "eval", "apps", "--tasks", str(tasks), "--json"]
        command += ["--workers", str(workers), *(a for k in keys for a in ("--task", k))]
        if len(config.files) > 1:
            command += ["--candidates", str(len(config.files))]
        run_env = {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none"}
        done = subprocess.run(command, env=run_env, stdout=subprocess.PIPE, text=True)
    run.wall_s = round(time.perf_counter() - started, 1)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(
            f"apps_replay_crew: error: codegen eval apps printed no JSON (exit {done.returncode})"
        ) from None
    served = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    run.requests = dict(Counter(f"{r.get('role')} {r['status']}" for r in served))
    run.report = {k: report.get(k) for k in ("solved_tasks", "tasks_scored", "crew_statuses")}
    repick = report.get("repick") or {}
    run.report |= {k: repick.get(k) for k in ("evidence", "questions", "none_right")}
    # Each model's learned reliability, by model name (the endpoint is the replay's port).
    run.report["estimates"] = {
        key.split(" @ ")[0]: value for key, value in (repick.get("estimates") or {}).items()
    }
    _read_results(run, Path(report["results_dir"]))
    return run


def _read_results(run: EvalRun, results_dir: Path) -> None:
    models = run.config.models
    for path in sorted((results_dir / "samples").glob("*.json")):
        doc = json.loads(path.read_text())
        key, sample = doc["task_id"], doc["candidates"][0]
        run.first[key] = run.solution[key] = sample.get("code") or None
        run.status[key] = str(sample.get("status", ""))
        run.reason[key] = str(sample.get("reason") or "")[:300]
        learned_file = results_dir / "learned" / path.name
        if not learned_file.exists():
            continue
        learned = json.loads(learned_file.read_text())
        picks = learned["picks"][0]
        run.solution[key] = learned["codes"][0] or None
        if picks.get("moved"):
            selection = picks.get("selection") or {}
            run.moved[key] = {
                "first_model": models[picks["first"]],
                "learned_model": models[picks["learned"]],
                "rule": selection.get("rule"),
                "why": str(selection.get("why") or "")[:300],
            }


Verdict = dict[str, Any]  # {"passed", "category", "message"}


def score_all(
    codes: dict[str, dict[str, str | None]], problems: dict[str, Any]
) -> dict[str, dict[str, Verdict]]:
    """Every labelled program of every task scored at once, each distinct program once (one
    verdict for one program)."""
    from codegen.composition import sandbox_image, sandbox_limits
    from codegen.evaluation.apps import score_programs
    from codegen.sandbox import open_sandbox
    from codegen.settings import get_settings

    settings = get_settings().sandbox
    limits = sandbox_limits(settings)
    box = open_sandbox(settings.backend, image=sandbox_image(settings), pool_size=2)
    verdicts: dict[str, dict[str, Verdict]] = {}

    def one(key: str) -> None:
        labelled = {label: (c.strip() if c else "") for label, c in codes[key].items()}
        unique = sorted({c for c in labelled.values() if c})
        scores = score_programs(box, problems[key], unique, limits) if unique else []
        by_code = {
            c: {"passed": s.passed, "category": str(s.category), "message": s.message[:200]}
            for c, s in zip(unique, scores, strict=True)
        }
        none = {"passed": False, "category": "no_code", "message": "no program"}
        verdicts[key] = {label: by_code.get(c, none) for label, c in labelled.items()}
        print(f"scored {key}", file=sys.stderr)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(one, list(codes)))
    finally:
        box.close()
    return verdicts


def cause(
    run: EvalRun, key: str, crew: Verdict, plain_code: str, crew_code: str | None
) -> tuple[str, str]:
    """Why the crew's program fails a task the file's own program solves: its kind (counted
    on the results page) and the whole reason."""
    status, why = run.status.get(key, "not run"), run.reason.get(key, "")
    if not crew_code:
        return f"no program ({status})", f"the crew gave no program (status {status}: {why})"
    if crew_code.strip() != plain_code.strip():
        kept = {line.strip() for line in crew_code.splitlines()}
        lost = [x.strip() for x in plain_code.splitlines() if x.strip() and x.strip() not in kept]
        shown = "; ".join(lost[:LOST_SHOWN]) + (" ..." if len(lost) > LOST_SHOWN else "")
        return "another program", (
            f"the crew's program differs from the file's source_codes[-1] (status {status}"
            + (f"; lines of the file's program it lacks: {shown}" if lost else "")
            + f"); it fails: {crew['category']}: {crew['message']}"
        )
    return "the same program", (
        f"the same program, another verdict (flaky or near the time limit): {crew['message']}"
    )


def figures(
    keys: list[str], runs: list[EvalRun], verdicts: dict[str, dict[str, Verdict]], plain: dict
) -> dict[str, Any]:
    def solved(label: str) -> int:
        return sum(verdicts[k].get(label, {}).get("passed", False) for k in keys)

    out: dict[str, Any] = {"tasks": len(keys)}
    for run in runs:
        name, n = run.config.name, len(run.config.files)
        crew = solved(f"{name}|crew")
        if n == 1:
            model = run.config.models[0]
            lost = [
                k
                for k in keys
                if verdicts[k][f"{name}|plain0"]["passed"]
                and not verdicts[k][f"{name}|crew"]["passed"]
            ]
            crew_of = {k: verdicts[k][f"{name}|crew"] for k in lost}
            causes = {
                k: cause(run, k, crew_of[k], plain[model][k], run.solution.get(k)) for k in lost
            }
            out[name] = {
                "plain": solved(f"{name}|plain0"),
                "crew": crew,
                "crew_minus_plain": crew - solved(f"{name}|plain0"),
                "below_plain_tasks": lost,
                "below_plain_by_kind": dict(Counter(kind for kind, _ in causes.values())),
                "below_plain": [{"task": k, "cause": why} for k, (_, why) in causes.items()],
            }
            continue
        each = [solved(f"{name}|plain{j}") for j in range(n)]
        best = max(range(n), key=lambda j: each[j])
        out[name] = {
            "random": round(sum(each) / n, 2),
            "best_single": each[best],
            "best_single_file": run.config.models[best],
            "ours": crew,
            "ours_minus_best": crew - each[best],
            "first_pick": solved(f"{name}|first"),
            "oracle": sum(
                any(verdicts[k][f"{name}|plain{j}"]["passed"] for j in range(n)) for k in keys
            ),
            "each": dict(zip(run.config.models, each, strict=True)),
            "moved": sum(k in run.moved for k in keys),
        }
    return out


def acceptance(
    held: dict[str, Any], every: dict[str, Any], stored: dict[str, int] | None
) -> dict[str, bool]:
    """Each file alone through the crew at least its own programs (in this run; on a full run
    also the stored plain score); the five's pick at least the best single run on the held-out
    tasks and at least it + 2 on all."""
    checks: dict[str, bool] = {}
    for name, row in every.items():
        if name.startswith("single_"):
            checks[f"{name}: crew >= plain"] = row["crew"] >= row["plain"]
            if stored is not None:
                model = name.removeprefix("single_")
                checks[f"{name}: crew >= apps_plain.json ({stored[model]})"] = (
                    row["crew"] >= stored[model]
                )
        elif name == FIVE:
            part = held.get(name, {})
            checks[f"{FIVE} held-out: ours >= best_single"] = part.get("ours", 0) >= part.get(
                "best_single", 0
            )
            checks[f"{FIVE} all: ours >= best_single + {MARGIN_ALL}"] = (
                row["ours"] >= row["best_single"] + MARGIN_ALL
            )
    return checks


def stored_plain() -> dict[str, int]:
    runs = json.loads(PLAIN.read_text())["runs"]
    return {
        name.removesuffix(SUFFIX.removesuffix(".jsonl")): row["sandbox_solved"]
        for name, row in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "replays" / "mapcoder-apps")
    parser.add_argument(
        "--tasks", type=Path, default=SHARED / "datasets" / "apps" / "apps-128.jsonl"
    )
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks by id")
    parser.add_argument("--workers", type=int, default=2, help="tasks through the crew at once")
    parser.add_argument("--only", default="single,five")
    parser.add_argument("--store", action="store_true", help=f"write {RESULT.name}")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="apps-replay-crew-"))
    os.environ.update({"CODEGEN_HOME": str(base), "DAGSTER_HOME": str(base)})
    result = run(args, base)
    text = json.dumps(result, indent=1)
    print(text)
    if args.store:
        RESULT.write_text(text + "\n")


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    from codegen.evaluation.tasks import read_task_file
    from codegen.settings import get_settings

    problems = {p.task_id: p for p in read_task_file(args.tasks).problems.values()}
    ordered = sorted(problems, key=int)
    keys = ordered[: args.limit] if args.limit else ordered
    held = [k for k in keys if k in HELD_OUT]
    runs: list[EvalRun] = []
    codes: dict[str, dict[str, str | None]] = {k: {} for k in keys}
    plain: dict[str, dict[str, str]] = {}
    started = time.perf_counter()
    for config in configs(args.data, set(args.only.split(","))):
        print(f"{config.name}: {len(keys)} tasks through the crew", file=sys.stderr)
        done = run_eval(config, args.tasks, keys if args.limit else [], base, args.workers)
        runs.append(done)
        for j, path in enumerate(config.files):
            plain[model_of(path)] = final_programs(path, set(keys))
            for k in keys:
                codes[k][f"{config.name}|plain{j}"] = plain[model_of(path)].get(k)
        for k in keys:
            codes[k][f"{config.name}|crew"] = done.solution.get(k)
            codes[k][f"{config.name}|first"] = done.first.get(k)
        print(f"{config.name}: done in {done.wall_s}s: {done.report}", file=sys.stderr)
    crew_s = time.perf_counter() - started
    verdicts = score_all(codes, problems)
    # Everything the figures are made of, kept in the home (a figure that fails to compute
    # must not cost the run).
    state = {
        "codes": codes,
        "verdicts": verdicts,
        "runs": [r.__dict__ | {"config": r.config.name} for r in runs],
    }
    (base / "state.json").write_text(json.dumps(state, default=str))
    # Per task, for a look at the tasks that are not held out (never at the held-out ones).
    (base / "verdicts.json").write_text(
        json.dumps({k: verdicts[k] for k in keys if k not in HELD_OUT}, indent=1)
    )
    held_figures = figures(held, runs, verdicts, plain)
    all_figures = figures(keys, runs, verdicts, plain)
    return {
        "command": "python -m benchmarks.crew.apps_replay_crew"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --only {args.only}" if args.only != "single,five" else ""),
        "held_out_seed": SEED,
        "held_out": held_figures,
        "all": all_figures,
        "acceptance": acceptance(held_figures, all_figures, None if args.limit else stored_plain()),
        "models": {r.config.name: r.config.models for r in runs},
        "moved": {r.config.name: r.moved for r in runs if len(r.config.files) > 1},
        "eval_reports": {r.config.name: r.report for r in runs},
        "crew_statuses": {r.config.name: dict(Counter(r.status.values())) for r in runs},
        "requests": {r.config.name: r.requests for r in runs},
        "wall_s": {
            **{r.config.name: r.wall_s for r in runs},
            "crew_total": round(crew_s, 1),
            "scoring": round(time.perf_counter() - started - crew_s, 1),
        },
        "sandbox": get_settings().sandbox.backend,
        "held_out_tasks_run": len(held),
        "machine": f"{machine()}; load average {os.getloadavg()[0]:.1f} at the end",
        "home": str(base),
    }


if __name__ == "__main__":
    main()
