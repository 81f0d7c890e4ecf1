"""APPS scored in the sandbox beside a plain run of the same programs, on MapCoder's six runs.

For each file of ``replays/mapcoder-apps/``: ``codegen eval apps --tasks apps-128.jsonl
--samples-file F --json`` (each row's ``source_codes[-1]`` run fenced by the program driver),
and a plain run of the same final programs on the same hidden inputs: each program as
``python3 prog.py < input`` in a plain container of the sandbox image (``docker run
--network none``, nothing runs on the host), the same time limit per input, stdout compared
with the expected lines, trailing whitespace of each line and of the whole output ignored,
the exit code not looked at (a plain run compares stdout only). Both stop a task at its first
failing input. Prints JSON per file: sandbox solved, plain solved, the file's ``is_solved``
count, and every task where the three differ, with a cause where one can be told. Stores it
in benchmarks/results/apps_plain.json.

    .venv/bin/python -m benchmarks.scoring.apps_plain [--tasks FILE] [--runs DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS, SHARED, machine

RUNS = (
    "ChatGPT-Direct-APPS-Python3-0-1",
    "ChatGPT-CoT-APPS-Python3-0-1",
    "ChatGPT-Analogical-APPS-Python3-0-1",
    "ChatGPT-SelfPlanning-APPS-Python3-0-1",
    "ChatGPT-MapCoder-3-5-APPS-Python3-0-1",
    "GPT4-Turbo-Direct-APPS-Python3-0-1",
)

# Runs inside the plain container: written apart from the sandbox's driver on purpose (it is
# the reference the driver is checked against), so it shares none of its code.
PLAIN_RUNNER = r"""
import json, os, subprocess, sys, tempfile

def norm(text):
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))

job = json.load(sys.stdin)
out = {}
for task, source in job["programs"].items():
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "prog.py"), "w") as fh:
        fh.write(source)
    verdict = {"solved": True, "why": "", "nonzero_exit_passed": 0}
    for number, case in enumerate(job["cases"][task], start=1):
        try:
            run = subprocess.run(["python3", "prog.py"], input=case["input"].encode(),
                                 capture_output=True, timeout=job["timeout_s"], cwd=folder)
        except subprocess.TimeoutExpired:
            verdict = {"solved": False, "why": f"input {number}: timeout"}
            break
        got = norm(run.stdout.decode("utf-8", "replace"))
        if got != norm(case["expected"]):
            tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            verdict = {"solved": False, "why": f"input {number}: exit {run.returncode}, "
                       f"stdout {got[:80]!r} {tail[0][:120]}"}
            break
        if run.returncode != 0:
            verdict["nonzero_exit_passed"] += 1
    out[task] = verdict
json.dump(out, sys.stdout)
"""


def expected(output: object) -> str:
    """The expected stdout as the plain run compares it: each value as ``print`` writes it."""
    values = output if isinstance(output, list) else [output]
    return "\n".join(v if isinstance(v, str) else str(v) for v in values)


def plain_run(image: str, rows: list[dict], tasks: dict[str, dict], timeout_s: float) -> dict:
    job = {
        "timeout_s": timeout_s,
        "programs": {str(r["task_id"]): r["source_codes"][-1] for r in rows},
        "cases": {
            str(r["task_id"]): [
                {"input": c["input"], "expected": expected(c["output"])}
                for c in tasks[str(r["task_id"])]["test_list"]
            ]
            for r in rows
        },
    }
    command = ["docker", "run", "--rm", "-i", "--network", "none", "--user", "10001"]
    command += ["--memory", "1g", "--entrypoint", "python3", image, "-c", PLAIN_RUNNER]
    done = subprocess.run(command, input=json.dumps(job).encode(), capture_output=True)
    if done.returncode != 0:
        sys.exit(f"plain run failed: {done.stderr.decode()[-500:]}")
    return json.loads(done.stdout)


def sandbox_run(tasks: Path, samples: Path) -> dict:
    from codegen.orchestration.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(
            ["eval", "apps", "--tasks", str(tasks), "--samples-file", str(samples), "--json"]
        )
    if code != 0:
        sys.exit(f"codegen eval apps --samples-file {samples.name} exited {code}")
    return json.loads(out.getvalue())


def cause(task: dict, ours: dict, plain: dict, file_solved: bool) -> str:
    stub = " (a task with a starter_code stub)" if task.get("starter_code", "").strip() else ""
    if ours["category"] == "passed" and plain["solved"] and not file_solved:
        return "the file's executor failed it; the program prints the expected output" + stub
    if ours["category"] != "passed" and not plain["solved"] and file_solved:
        return f"fails here, in both runs: {ours['message'][:200]}"
    if ours["category"] == "runtime_error" and plain["solved"]:
        why = ours["message"][:160]
        return f"stdout right but a non-zero exit (a plain run looks at stdout only): {why}"
    if "timeout" in (ours["category"], plain.get("why", "")):
        return (
            f"the time limit: sandbox {ours['message'][:120]}; plain {plain.get('why', '')[:120]}"
        )
    return (
        f"sandbox {ours['category']}: {ours['message'][:120]}; plain: {plain.get('why', '')[:120]}"
    )


def compare(rows: list[dict], tasks: dict[str, dict], result: dict, plain: dict) -> dict:
    per_task = result["apps"]["per_task"]
    differ = []
    for row in rows:
        task = str(row["task_id"])
        ours, theirs, file_solved = per_task[task], plain[task], bool(row["is_solved"])
        verdicts = (ours["category"] == "passed", theirs["solved"], file_solved)
        if len(set(verdicts)) > 1:
            differ.append(
                {
                    "task": task,
                    "sandbox": ours["category"],
                    "plain": "passed" if theirs["solved"] else "failed",
                    "file_is_solved": file_solved,
                    "cause": cause(tasks[task], ours, theirs, file_solved),
                }
            )
    sandbox_solved = int(result["apps"]["solved_tasks"])
    plain_solved = sum(v["solved"] for v in plain.values())
    return {
        "sandbox_solved": sandbox_solved,
        "plain_solved": plain_solved,
        "file_is_solved": sum(bool(r["is_solved"]) for r in rows),
        "within_3": abs(sandbox_solved - plain_solved) <= 3,
        "sandbox_categories": result["apps"]["categories"],
        "verdicts_by_fence": result["apps"]["verdicts_by_fence"],
        "plain_solved_with_nonzero_exit": sorted(
            t for t, v in plain.items() if v["solved"] and v.get("nonzero_exit_passed")
        ),
        "differences": differ,
    }


def main() -> None:
    from codegen.evaluation.apps import TIME_LIMIT_S
    from codegen.sandbox import DEFAULT_IMAGE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=SHARED / "datasets/apps/apps-128.jsonl")
    parser.add_argument("--runs", type=Path, default=SHARED / "replays/mapcoder-apps")
    parser.add_argument("--only", help="one run's name (a file stem) instead of all six")
    args = parser.parse_args()
    os.environ.setdefault("CODEGEN_SANDBOX__BACKEND", "docker")
    tasks = {str(t["id"]): t for t in map(json.loads, args.tasks.read_text().splitlines())}
    report: dict = {
        "command": ".venv/bin/python -m benchmarks.scoring.apps_plain",
        "machine": machine(),
        "sandbox": os.environ["CODEGEN_SANDBOX__BACKEND"],
        "plain_image": DEFAULT_IMAGE,
        "time_limit_s": TIME_LIMIT_S,
        "load_1m_at_start": round(os.getloadavg()[0], 2),
        "runs": {},
    }
    for name in [args.only] if args.only else RUNS:
        path = args.runs / f"{name}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        started = time.perf_counter()
        result = sandbox_run(args.tasks, path)
        sandbox_s = time.perf_counter() - started
        started = time.perf_counter()
        plain = plain_run(DEFAULT_IMAGE, rows, tasks, TIME_LIMIT_S)
        plain_s = time.perf_counter() - started
        entry = compare(rows, tasks, result, plain)
        entry["wall_s"] = {"sandbox": round(sandbox_s, 1), "plain": round(plain_s, 1)}
        report["runs"][name.replace(".", "")] = entry
        print(f"{name}: {entry['sandbox_solved']} / {entry['plain_solved']} / "
              f"{entry['file_is_solved']}", file=sys.stderr)  # fmt: skip
    text = json.dumps(report, indent=2)
    print(text)
    if not args.only:
        (RESULTS / "apps_plain.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
