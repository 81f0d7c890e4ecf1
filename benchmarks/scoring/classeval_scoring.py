"""ClassEval scored here against the authors' published table, in the Docker sandbox.

Runs ``codegen eval classeval --tasks FILE`` with ``--canonical`` (the reference solutions),
then ``--samples-file`` on the five greedy ``class_H`` reply files and the two five-sample
``t0.2`` files, and prints JSON: per file our class success (count of classes solved and
pass@k), method and test-class success, their partial variants, beside the published figures
of the same run (``published_pass_at_k_result.json``: ``pass_1_greedy`` for greedy files,
``pass_1``/``pass_5`` for the t0.2 ones; their ``fun_success`` is our
``test_class_success``), and every failing test class of the reference solutions with its
reason. Stores the JSON in benchmarks/results/classeval_scoring.json.

    .venv/bin/python -m benchmarks.scoring.classeval_scoring [--tasks FILE] [--replies DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

from benchmarks.common import ROOT, SHARED, machine

GREEDY = (
    "Gemini-Pro",
    "deepseek-coder-6.7b-instruct",
    "GPT-3.5-Turbo",
    "Magicoder-S-DS-6.7B",
    "WizardCoder-15B-V1.0",
)
SAMPLED = ("GPT-3.5-Turbo", "Gemini-Pro")
FIGURES = (
    "class_success",
    "class_partial_success",
    "method_success",
    "method_partial_success",
    "test_class_success",
    "test_class_partial_success",
)


def run(tasks: Path, extra: list[str]) -> tuple[dict, float]:
    from codegen.orchestration.cli import main as cli

    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli(["eval", "classeval", "--tasks", str(tasks), *extra, "--json"])
    wall = time.perf_counter() - started
    if code != 0:
        sys.exit(f"codegen eval classeval {' '.join(extra)} exited {code}")
    return json.loads(out.getvalue()), wall


def ours(result: dict, wall: float) -> dict:
    figures = result["classeval"]
    return {
        "classes_solved": figures["classes_solved"],
        **{name: figures[name] for name in FIGURES},
        "verdicts_isolated": figures["verdicts_isolated"],
        "verdicts": figures["verdicts"],
        "verdicts_by_fence": figures.get("verdicts_by_fence"),
        "wall_s": round(wall, 1),
    }


def published_of(table: dict, key: str, model: str) -> dict:
    found = table[key][model]
    return {
        "class_success": found["class_success"],
        "class_partial_success": found["class_partial_success"],
        "test_class_success": found["fun_success"],
        "test_class_partial_success": found["fun_partial_success"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", type=Path, default=SHARED / "datasets/classeval/ClassEval_data.json.gz"
    )
    parser.add_argument("--replies", type=Path, default=SHARED / "replays/classeval")
    args = parser.parse_args()
    os.environ.setdefault("CODEGEN_SANDBOX__BACKEND", "docker")
    table = json.loads((args.replies / "published_pass_at_k_result.json").read_text())
    load_at_start = round(os.getloadavg()[0], 2)  # the 5 s limit's verdicts move with load
    canonical, wall = run(args.tasks, ["--canonical"])
    figures = canonical["classeval"]
    report: dict = {
        "command": ".venv/bin/python -m benchmarks.scoring.classeval_scoring",
        "machine": machine() + ", Docker sandbox",
        "load_1m_at_start": load_at_start,
        "sandbox": os.environ["CODEGEN_SANDBOX__BACKEND"],
        "canonical": {
            **ours(canonical, wall),
            "failing_test_classes": [
                f"{f['task']} {f['test_class']} ({f['result']})" for f in figures["failures"]
            ],
            "failures": [
                {k: f[k] for k in ("task", "test_class", "result", "reason", "isolated")}
                for f in figures["failures"]
            ],
        },
        "greedy": {},
        "sampled": {},
    }
    report["canonical"].update(canonical_isolation(canonical))
    for model in GREEDY:
        name = f"{model}_class_H_greedy"
        result, wall = run(args.tasks, ["--samples-file", str(args.replies / f"{name}.json")])
        published = published_of(table, "pass_1_greedy", name)
        report["greedy"][slug(name)] = {
            "file": f"{name}.json",
            "ours": ours(result, wall),
            "published": published,
            "published_classes_solved": round(published["class_success"] * 100),
            "difference": figures_solved(result) - round(published["class_success"] * 100),
        }
    for model in SAMPLED:
        name = f"{model}_class_H_t0.2"
        result, wall = run(args.tasks, ["--samples-file", str(args.replies / f"{name}.json")])
        report["sampled"][slug(name)] = {
            "file": f"{name}.json",
            "ours": ours(result, wall),
            "published_pass@1": published_of(table, "pass_1", name),
            "published_pass@5": published_of(table, "pass_5", name),
        }
    text = json.dumps(report, indent=2)
    print(text)
    (ROOT / "benchmarks/results/classeval_scoring.json").write_text(text + "\n")


def slug(name: str) -> str:
    """A file's stem as a key the results page can address (no dots)."""
    return name.replace(".", "")


def figures_solved(result: dict) -> int:
    return int(result["classeval"]["classes_solved"])


def canonical_isolation(result: dict) -> dict:
    """Reference solutions that pass (every verdict is decided isolated: there is no other
    way), and, counted apart, the test-class verdicts that ended ``cannot_isolate`` and those
    the time limit decided (a verdict the machine's load can change), from the stored scores."""
    stored = [
        json.loads(path.read_text())
        for path in sorted((Path(result["results_dir"]) / "scores").glob("*.json"))
    ]
    scores = [dict(entry["scores"][0], task_id=entry["task_id"]) for entry in stored]
    classes = [c for s in scores for c in s.get("test_classes") or ()]
    return {
        "passed": sum(s["passed"] for s in scores),
        "passed_isolated": sum(s["passed"] and bool(s.get("isolated")) for s in scores),
        "verdicts_not_isolated": sum(not c.get("isolated") for c in classes),
        "verdicts_cannot_isolate": sum("cannot_isolate" in str(c.get("reason")) for c in classes),
        "verdicts_by_time_limit": sorted(
            f"{s['task_id']} {c['test_class']}"
            for s in scores
            for c in s.get("test_classes") or ()
            if c.get("time_limit_s") is not None
        ),
    }


if __name__ == "__main__":
    main()
