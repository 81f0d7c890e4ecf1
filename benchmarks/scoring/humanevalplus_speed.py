"""Wall time of HumanEval+ scoring of one samples file: ours (every solution in the sandbox)
against EvalPlus's own evaluator (on the host) on the same file, in the same run.

Both score the same samples file against the same dataset file with the same worker count:

- ours: ``python -m codegen eval humaneval --plus DATASET --samples-file SAMPLES --json`` in a
  fresh ``$CODEGEN_HOME`` (``CODEGEN_EVAL__WORKERS`` and ``CODEGEN_SANDBOX__POOL_SIZE`` set to
  ``--workers``);
- EvalPlus: ``python -m evalplus.evaluate --dataset humaneval --samples COPY --parallel N``
  from a separate virtualenv (``evalplus==0.3.1`` from the package index, created once under
  ``--evalplus-venv``, default ``<user cache>/multiagent-codegen/evalplus-0.3.1-venv``; never
  the project's lock), with ``HUMANEVAL_OVERRIDE_PATH=DATASET`` and an environment built from
  nothing but ``PATH``, ``HOME``, ``LANG`` and its cache dir (no secret reaches it). It
  executes the candidates in the host process: the issue allows that for this comparison only.

Cold: ours computes the canonical outputs (fresh home), EvalPlus its ground-truth pickle (fresh
``XDG_CACHE_HOME``). Warm: both caches kept; our solutions get a trailing comment so no
verdict is cached, EvalPlus reads a fresh copy of the samples file so it loads no old
``_eval_results.json``. The warm pair runs ``--warm-runs`` times, alternating; the ratio uses
the best of each. Prints JSON: walls, ratio ours/EvalPlus (warm), workers, load average, solved
counts, the per-task base/plus verdicts that differ between the two (cold runs), and the tasks
whose verdict a scorer changed between its own runs.

    PYTHONPATH=$PWD python -m benchmarks.scoring.humanevalplus_speed \
        ../shared/datasets/humanevalplus/HumanEvalPlus.jsonl.gz \
        ../shared/replays/mapcoder-humanevalplus/ChatGPT-CoT-Python3-0-1.jsonl
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
from dataclasses import dataclass
from pathlib import Path

EVALPLUS_VERSION = "0.3.1"
# (base, plus) per task; plus means base and plus, as both scorers report pass@1 on HumanEval+.
Verdicts = dict[str, tuple[bool, bool]]


@dataclass(frozen=True)
class Run:
    wall_s: float
    verdicts: Verdicts

    def solved(self) -> dict[str, int]:
        return {
            "base": sum(b for b, _ in self.verdicts.values()),
            "plus": sum(p for _, p in self.verdicts.values()),
        }


def _load() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


def evalplus_python(venv: Path) -> Path:
    """The venv's interpreter with ``evalplus`` at EVALPLUS_VERSION, created once."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import evalplus, sys; print(evalplus.__version__)"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True, check=False)
        if found.returncode == 0 and found.stdout.strip() == EVALPLUS_VERSION:
            return python
        shutil.rmtree(venv)
    print(f"creating {venv} with evalplus=={EVALPLUS_VERSION} (once)", file=sys.stderr)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", f"evalplus=={EVALPLUS_VERSION}"]
    subprocess.run(pip, check=True)
    return python


def run_evalplus(
    python: Path, dataset: Path, samples: Path, workers: int, cache: Path, work: Path
) -> Run:
    """EvalPlus's evaluator on a fresh copy of ``samples`` (so no old results are loaded)."""
    work.mkdir(parents=True)
    copy = work / "samples.jsonl"
    shutil.copyfile(samples, copy)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": str(cache),
        "HUMANEVAL_OVERRIDE_PATH": str(dataset.resolve()),
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [str(python), "-m", "evalplus.evaluate", "--dataset", "humaneval"]
    command += ["--samples", str(copy), "--parallel", str(workers)]
    started = time.perf_counter()
    done = subprocess.run(
        command, env=env, cwd=work, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"evalplus.evaluate exited {done.returncode}: {done.stderr[-2000:]}")
    results = json.loads((work / "samples_eval_results.json").read_text())["eval"]
    verdicts: Verdicts = {}
    for task_id, rows in results.items():
        row = rows[0]
        base = row["base_status"] == "pass"
        verdicts[task_id] = (base, base and row["plus_status"] == "pass")
    return Run(wall, verdicts)


def run_ours(dataset: Path, samples: Path, workers: int, home: Path) -> Run:
    env = {
        **os.environ,
        "CODEGEN_HOME": str(home),
        "CODEGEN_EVAL__WORKERS": str(workers),
        "CODEGEN_SANDBOX__POOL_SIZE": str(workers),
    }
    command = [sys.executable, "-m", "codegen", "eval", "humaneval", "--plus", str(dataset)]
    command += ["--samples-file", str(samples), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"codegen eval exited {done.returncode}: {done.stderr[-2000:]}")
    scores_dir = Path(json.loads(done.stdout)["results_dir"]) / "scores"
    verdicts: Verdicts = {}
    for path in sorted(scores_dir.glob("*.json")):
        doc = json.loads(path.read_text())
        first = doc["scores"][0]
        verdicts[doc["task_id"]] = (bool(first["passed"]), bool(first["plus"]))
    return Run(wall, verdicts)


def disagreements(ours: Run, theirs: Run) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for task_id in sorted(set(ours.verdicts) | set(theirs.verdicts)):
        a, b = ours.verdicts.get(task_id), theirs.verdicts.get(task_id)
        if a != b:
            out.append({"task": task_id, "ours": a, "evalplus": b})
    return out


def unstable(runs: list[Run]) -> dict[str, list[tuple[bool, bool] | None]]:
    """Per task whose verdicts differ between ``runs``: the verdict of each run."""
    tasks = sorted(set().union(*(r.verdicts for r in runs)))
    seen = {t: [r.verdicts.get(t) for r in runs] for t in tasks}
    return {t: v for t, v in seen.items() if len(set(v)) > 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("samples", type=Path)
    parser.add_argument("--workers", type=int, help="both sides (default: [eval] workers)")
    parser.add_argument("--warm-runs", type=int, default=1, help="warm pairs, alternating")
    parser.add_argument("--evalplus-venv", type=Path, help="where evalplus's venv lives")
    parser.add_argument("--no-evalplus", action="store_true", help="time ours only")
    args = parser.parse_args()
    from codegen.settings import get_settings, user_cache_dir

    workers = args.workers or get_settings().eval.workers
    venv = args.evalplus_venv or user_cache_dir() / f"evalplus-{EVALPLUS_VERSION}-venv"
    python = None if args.no_evalplus else evalplus_python(venv)
    loads = [_load()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, cache = root / "home", root / "evalplus-cache"
        ours_cold = run_ours(args.dataset, args.samples, workers, home)
        loads.append(_load())
        theirs_cold = theirs_warm = None
        if python is not None:
            theirs_cold = run_evalplus(
                python, args.dataset, args.samples, workers, cache, root / "ep-cold"
            )
            loads.append(_load())
        rows = [json.loads(line) for line in args.samples.read_text().splitlines() if line]
        ours_warm: list[Run] = []
        theirs_warm_runs: list[Run] = []
        for i in range(args.warm_runs):
            changed = root / f"samples-warm-{i}.jsonl"
            mark = f"\n# warm run {i}\n"
            changed.write_text(
                "".join(json.dumps({**r, "solution": r["solution"] + mark}) + "\n" for r in rows)
            )
            ours_warm.append(run_ours(args.dataset, changed, workers, home))
            loads.append(_load())
            if python is not None:
                work = root / f"ep-warm-{i}"
                theirs_warm_runs.append(
                    run_evalplus(python, args.dataset, args.samples, workers, cache, work)
                )
                loads.append(_load())
    best_ours = min(ours_warm, key=lambda r: r.wall_s)
    report: dict[str, object] = {
        "samples": str(args.samples),
        "dataset": str(args.dataset),
        "tasks": len(ours_cold.verdicts),
        "workers": {"ours": workers, "evalplus": workers},
        "ours": {
            "cold_wall_s": round(ours_cold.wall_s, 1),
            "warm_wall_s": [round(r.wall_s, 1) for r in ours_warm],
            "solved": ours_cold.solved(),
        },
        "load_1_5_15": loads,
    }
    if theirs_cold is not None:
        theirs_warm = min(theirs_warm_runs, key=lambda r: r.wall_s)
        report["evalplus"] = {
            "version": EVALPLUS_VERSION,
            "cold_wall_s": round(theirs_cold.wall_s, 1),
            "warm_wall_s": [round(r.wall_s, 1) for r in theirs_warm_runs],
            "solved": theirs_cold.solved(),
        }
        report["ratio_ours_over_evalplus_warm"] = round(best_ours.wall_s / theirs_warm.wall_s, 2)
        report["ratio_ours_over_evalplus_cold"] = round(ours_cold.wall_s / theirs_cold.wall_s, 2)
        differ = disagreements(ours_cold, theirs_cold)
        report["verdict_disagreements"] = len(differ)
        report["disagreeing_tasks"] = differ
        # Tasks whose verdict one scorer changed between its own runs (time limits under load).
        report["unstable_tasks"] = {
            "ours": unstable([ours_cold, *ours_warm]),
            "evalplus": unstable([theirs_cold, *theirs_warm_runs]),
        }
    else:
        report["evalplus"] = "not run (--no-evalplus)"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
