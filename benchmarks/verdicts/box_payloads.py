"""Issue 46's payloads against the host and the box (findings 3, 5, 6 and 7): drafts that read
each other, outcomes the host decodes without bounds, children that together hold more than a
bubblewrap job's memory, an honest integer too long for text."""

from __future__ import annotations

import resource
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from benchmarks.verdicts.payload_kit import (
    BLOCKED,
    ERROR,
    SUCCEEDED,
    Result,
    limits,
    problem,
    result,
    sandbox,
    verdict_of,
)

# -- 3: drafts of a shared-input run read each other -------------------------------------------

SIBLING_MARK = "SIBLING-SOURCE-4d2c"


def drafts_read_each_other(backend: str) -> list[Result]:
    """3: the first draft of a shared-input run looks through its stack and heap for the
    other drafts' sources and the driver's token, and returns what it found."""
    import secrets

    from codegen.sandbox import calls

    made: list[str] = []
    token_hex = secrets.token_hex

    def recording(nbytes: int | None = None) -> str:
        token = token_hex(nbytes)
        made.append(token)
        return token

    secrets.token_hex = recording  # the host's tokens, to recognise one the draft found
    spy = textwrap.dedent(
        f"""
        import gc, re, sys

        MARK = {SIBLING_MARK[:7]!r} + {SIBLING_MARK[7:]!r}

        def _strings(obj):
            if isinstance(obj, dict):
                return list(obj.keys()) + list(obj.values())
            if isinstance(obj, (list, tuple)):
                return list(obj)
            return []

        def f(x):
            found = {{"sibling": False, "token": None}}
            frame = sys._getframe()
            while frame is not None:
                token = frame.f_locals.get("token")
                if isinstance(token, str) and re.fullmatch("[0-9a-f]{{32}}", token):
                    found["token"] = token
                frame = frame.f_back
            for obj in gc.get_objects():
                for value in _strings(obj):
                    if isinstance(value, str) and MARK in value and "def " in value:
                        found["sibling"] = True
            return found
        """
    )
    sibling = f"SECRET = {SIBLING_MARK!r}\n\n\ndef f(x):\n    return 7\n"
    try:
        with sandbox(backend) as box:
            runs = calls.call_functions(box, [spy, sibling], "f", [[1]], 5.0, limits())
    finally:
        secrets.token_hex = token_hex
    outcome = runs[0][0]
    if not outcome.ok or not isinstance(outcome.value, dict):
        return [result("3_draft_reads_siblings", ERROR, f"the spy's call: {outcome}")]
    saw_sibling = bool(outcome.value.get("sibling"))
    saw_token = outcome.value.get("token") in made
    line = f"sibling's source seen={saw_sibling}; driver's token seen={saw_token}"
    attack = SUCCEEDED if saw_sibling or saw_token else BLOCKED
    return [result("3_draft_reads_siblings", attack, line)]


# -- 5: the host decodes what the box says without bounds ---------------------------------------

# What a module sends as an outcome of its own: through the driver's channel found on the
# stack (``send``, or the results file), else any writable file of its heap that is a pipe.
FORGE = """
import fcntl, gc, io, json, os, stat, sys

def _channel():
    frame = sys._getframe()
    while frame is not None:
        send = frame.f_locals.get("send")
        if callable(send):
            return send
        frame = frame.f_back
    for obj in gc.get_objects():
        try:
            if isinstance(obj, io.TextIOWrapper) and obj.writable() and obj.fileno() > 2:
                if stat.S_ISFIFO(os.fstat(obj.fileno()).st_mode):
                    return lambda item, fh=obj: (fh.write(json.dumps(item) + "\\n"), fh.flush())
        except (OSError, ValueError):
            continue
    for name in os.listdir("/proc/self/fd"):  # a bare descriptor: a pipe open for writing
        fd = int(name)
        try:
            writes = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            if fd > 2 and writes and stat.S_ISFIFO(os.fstat(fd).st_mode):
                return lambda item, fd=fd: os.write(fd, (json.dumps(item) + "\\n").encode())
        except OSError:
            continue
    return None

def f(x):
    send = _channel()
    if send is None:
        return "no channel"
    send({"status": "ok", "duration_s": 0.0, "value": VALUE_TEXT})
    return "sent"
"""


def deep_value(backend: str) -> list[Result]:
    """5a: a module sends a 700-deep value as its outcome; the host decodes it."""
    from codegen.sandbox.calls import call_function

    module = "VALUE_TEXT = '[' * 700 + ']' * 700\n" + FORGE
    with sandbox(backend) as box:
        try:
            outcomes = call_function(box, module, "f", [[1]], 5.0, limits())
        except RecursionError as exc:
            return [
                result("5a_deep_value_on_host", SUCCEEDED, f"the host raised RecursionError: {exc}")
            ]
    outcome = outcomes[0]
    if outcome.ok and outcome.value in ("no channel", "sent"):
        return [
            result(
                "5a_deep_value_on_host",
                ERROR,
                f"the forged outcome did not arrive: {outcome.value}",
            )
        ]
    attack = SUCCEEDED if outcome.ok else BLOCKED  # a 700-deep value built on the host
    return [
        result(
            "5a_deep_value_on_host",
            attack,
            f"outcome {outcome.status}: {outcome.error or 'a value'}",
        )
    ]


HUGE_MIB = 16  # of output: empty lists, each a Python object of its own once decoded
HOST_BOUND_MIB = 512


def longest_line(text: str) -> int:
    """The longest line's length, without copying the text (its memory is what is measured)."""
    best = start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        best, start = max(best, end - start), end + 1
    return best


def huge_output(backend: str) -> list[Result]:
    """5b: a module sends 16 MiB of JSON (a list of empty lists) as its outcome; the host's
    peak memory (ru_maxrss of this process) grows by more than ``HOST_BOUND_MIB`` decoding it."""
    from codegen.sandbox.calls import call_function

    count = HUGE_MIB * 1024 * 1024 // 3
    module = f"VALUE_TEXT = '[' + '[],' * {count - 1} + '[]]'\n" + FORGE
    longest: list[int] = []
    with sandbox(backend) as box:
        run = box.run

        def measured(*args: Any, **kwargs: Any) -> Any:
            done = run(*args, **kwargs)
            longest.append(longest_line(done.stdout))
            return done

        box.run = measured  # how much of the output reached the host, whole lines
        call_function(box, "def f(x):\n    return x\n", "f", [[1]], 5.0, limits())  # warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        outcomes = call_function(box, module, "f", [[1]], 30.0, limits(memory_mb=1024))
        grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    outcome = outcomes[0]
    if outcome.ok and outcome.value in ("no channel", "sent"):
        why = f"the forged outcome did not arrive: {outcome.value}"
        return [result("5b_huge_output_on_host", ERROR, why)]
    if longest[-1] < count * 3:  # cut on its way (a deadline, a cap): nothing to decode
        why = f"the output was cut to {longest[-1]} characters: {outcome.error}"
        return [result("5b_huge_output_on_host", ERROR, why)]
    built = outcome.ok and isinstance(outcome.value, list) and len(outcome.value) == count
    what = f"a list of {count} lists" if built else outcome.error or type(outcome.value).__name__
    line = (
        f"{HUGE_MIB} MiB of output: the host's peak memory grew {grown_mib:.0f} MiB "
        f"(bound {HOST_BOUND_MIB}); outcome {outcome.status}: {what}"
    )
    attack = SUCCEEDED if built or grown_mib > HOST_BOUND_MIB else BLOCKED
    return [result("5b_huge_output_on_host", attack, line)]


# -- 6: bubblewrap limits memory per process, not per job ---------------------------------------

HOG = """
import os, time
pipes, pids = [], []
for _ in range(CHILDREN):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            block = bytearray(b"\\x01") * (EACH_MB << 20)
            with open("/proc/self/status") as fh:
                rss = next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:"))
        except MemoryError:
            rss = 0
        os.write(w, str(rss).encode())
        time.sleep(30)
        os._exit(0)
    os.close(w)
    pipes.append(r)
    pids.append(pid)
held = sum(int(os.read(r, 64) or b"0") for r in pipes)
print("HELD_KIB", held, flush=True)
for pid in pids:
    os.kill(pid, 9)
"""


def bwrap_job_memory(backend: str) -> list[Result]:
    """6: eight children of one bubblewrap job, each under the job's 512 MB limit, together
    hold more than the limit (always on bubblewrap: the finding is its own)."""
    children, each_mb, limit_mb = 8, 150, 512
    script = HOG.replace("CHILDREN", str(children)).replace("EACH_MB", str(each_mb))
    with sandbox("bwrap") as box:
        run = box.run(
            {"hog.py": script}, ["python3", "hog.py"], limits(memory_mb=limit_mb, timeout_s=60.0)
        )
    held = [
        int(w)
        for line in run.stdout.splitlines()
        if line.startswith("HELD_KIB")
        for w in line.split()[1:2]
    ]
    held_mib = held[0] / 1024 if held else 0.0
    line = (
        f"{children} children x {each_mb} MiB under a {limit_mb} MB job limit held "
        f"{held_mib:.0f} MiB; oom_killed={run.oom_killed} exit={run.exit_code}"
    )
    if not held and not run.oom_killed and run.exit_code == 0:
        return [result("6_bwrap_job_memory", ERROR, line + f" {run.stderr[-200:]}")]
    attack = SUCCEEDED if held_mib > limit_mb and not run.oom_killed else BLOCKED
    return [result("6_bwrap_job_memory", attack, line)]


# -- 7: an honest value that cannot cross ends as an outage ---------------------------------


def big_int_outage(backend: str) -> list[Result]:
    """7: HumanEval+'s canonical solution returns a 10,000-digit integer: its expected output
    must be stored and the canonical solution score passed (base and plus)."""
    from codegen.evaluation import plus
    from codegen.evaluation.humaneval import PlusTask
    from codegen.evaluation.store import EvalStore

    task = problem(
        "Payload/7",
        'def power_of_ten(n):\n    """10 to the n."""\n',
        "power_of_ten",
        "def check(candidate):\n    assert candidate(3) == 1000\n",
        plus=PlusTask(base_json="[[3]]", plus_json="[[10000]]"),
        canonical_solution="    return 10 ** n\n",
    )
    store = EvalStore(Path(tempfile.mkdtemp(prefix="payload-7-")))
    with sandbox(backend) as box:
        try:
            expected = plus.expected_outputs(store, box, task, limits())
            score = plus.score_plus(box, task, task.canonical_module(), expected, limits())
        except Exception as exc:  # the finding: the host could not handle the value
            return [result("7_big_int_outage", SUCCEEDED, f"{type(exc).__name__}: {exc}")]
    line = f"canonical: {verdict_of(score)} plus={score.plus}"
    return [result("7_big_int_outage", BLOCKED if score.passed and score.plus else SUCCEEDED, line)]
