"""The sandbox executions every selection rule reads: each program on the tests and hidden
tests (``DRIVER``), and on the shared inputs (``call_functions``), cached by digest."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

# Runs inside the sandbox: each program in a forked child (a crash or an infinite loop costs
# only that child), each test under a timer; one JSON line per program as it finishes.
DRIVER = r"""
import json, os, signal, sys
task = json.load(open("task.json"))
tests = [compile(t, "<test>", "exec") for t in task["tests"]]
MAX_TIMEOUTS = 3  # a program that hangs on this many tests fails the rest unrun

class Timeout(BaseException):
    pass

def on_alarm(*_):
    raise Timeout()

signal.signal(signal.SIGALRM, on_alarm)

def timed(fn, seconds):
    # True, False, or None on a timeout.
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        fn()
        return True
    except Timeout:
        return None
    except BaseException:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

def run_program(program):
    ns = {}
    if not timed(lambda: exec(program, ns), 2.0):
        return [False] * len(tests), False
    passes, timeouts = [], 0
    for test in tests:
        if timeouts >= MAX_TIMEOUTS:
            passes.append(False)
            continue
        ok = timed(lambda: exec(test, dict(ns)), 0.5)
        timeouts += ok is None
        passes.append(bool(ok))
    def hidden():
        exec(task["hidden"], ns)
        ns["check"](ns[task["entry_point"]])
    return passes, bool(timed(hidden, 5.0))

for index, program in enumerate(task["programs"]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sys.stdout = sys.stderr = open(os.devnull, "w")
        passes, correct = run_program(program)
        os.write(write, json.dumps({"passes": passes, "correct": correct}).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    signal.setitimer(signal.ITIMER_REAL, 20.0)
    try:
        while True:
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.waitpid(pid, 0)
    except Timeout:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        chunks = []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.close(read)
    try:
        row = json.loads(b"".join(chunks))
    except ValueError:
        row = {"passes": [False] * len(tests), "correct": False}
    print(json.dumps({"index": index, **row}), flush=True)
"""


# The shared-input run's limits: the crew's own (codegen.agents.pick.agreement), unless
# --call-limit / --max-timeouts override them for a measurement.
CALLS: dict[str, float] = {}


def call_settings() -> tuple[float, float, int]:
    from codegen.agents.pick import CALL_LIMIT_S, DRAFT_DEADLINE_S, MAX_TIMEOUTS

    return (
        CALLS.get("call_limit_s", CALL_LIMIT_S),
        CALLS.get("module_deadline_s", DRAFT_DEADLINE_S),
        int(CALLS.get("max_timeouts", MAX_TIMEOUTS)),
    )


def execute_tests(sandbox: Any, task: dict[str, Any]) -> dict[str, Any]:
    """Today's execution: every program on every assertion and on the hidden tests."""
    from codegen.sandbox.types import Limits

    payload = {k: task[k] for k in ("programs", "tests", "hidden", "entry_point")}
    limits = Limits(timeout_s=600, memory_mb=1024, max_output_bytes=16_000_000)
    started = time.perf_counter()
    result = sandbox.run(
        {"driver.py": DRIVER, "task.json": json.dumps(payload)},
        ["python3", "-I", "-B", "driver.py"],
        limits,
    )
    rows: dict[int, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "index" in data:
            rows[int(data["index"])] = data
    blank = {"passes": [False] * len(task["tests"]), "correct": False}
    return {
        "digest": task_digest(task),
        "passes": [rows.get(i, blank)["passes"] for i in range(len(task["programs"]))],
        "correct": [bool(rows.get(i, blank)["correct"]) for i in range(len(task["programs"]))],
        "timed_out": result.timed_out,
        "seconds": round(result.duration_s, 2),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }


def execute_inputs(sandbox: Any, task: dict[str, Any]) -> dict[str, Any]:
    """Every program on the shared inputs, in one execution (``call_functions``)."""
    from codegen.agents.pick import BehaviourTable
    from codegen.sandbox.calls import call_functions
    from codegen.sandbox.types import Limits

    call_limit, deadline, max_timeouts = call_settings()
    started = time.perf_counter()
    outcomes = call_functions(
        sandbox,
        task["programs"],
        task["entry_point"],
        task["inputs"],
        call_limit,
        Limits(memory_mb=1024),
        module_deadline_s=deadline,
        max_timeouts=max_timeouts,
        max_value_chars=2000,
    )
    call_seconds = time.perf_counter() - started
    return {
        "inputs_digest": inputs_digest(task),
        "classes": BehaviourTable.of(outcomes).classes,
        "call_seconds": round(call_seconds, 2),
    }


def task_digest(task: dict[str, Any]) -> str:
    blob = json.dumps([task["programs"], task["tests"], task["hidden"], DRIVER])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def inputs_digest(task: dict[str, Any]) -> str:
    blob = json.dumps([task["programs"], task["inputs"], *call_settings()])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
