"""Runs inside the sandbox (standard library only, the image's python3): run a batch of whole
programs (APPS: stdin in, stdout out) on a task's inputs and judge each run. Shipped as a file
by ``codegen.evaluation.apps`` with the supervisor, ``fence`` and ``program_run`` (one run,
and the comparison) beside it; never imported on the host.

Each program runs as a plain run does (``program_run``): ``python3 prog.py`` as a fresh
process, the input text on its stdin (then closed: a program that waits for more reads end of
file), stdout and stderr read by the driver with a cap each, killed (its whole session) at the
time limit or when its stdout passes the cap. Before it executes, the child enters the file
fence (``fence.enter``: it may write only its sample's scratch folder). The driver compares the
output with the expected text (trailing whitespace of each line and of the whole output
ignored) and writes the verdict; the program never sees the expected output, the token or
another sample's source: the driver read and removed its files before the first program ran,
each program is exec'ed (nothing of the driver's memory survives), each sample has a fresh
scratch folder of a random name, removed with every process of it before the next sample.

Per sample, one line under the batch token: the category of its first failing input (or
``passed``), the outcome of each input run (a sample stops at its first failing input), the
fence, and the time limit that applied.

Mode ``observe`` (a pick among drafts: no expected output) runs every program on every input
stream (stdin and arguments) and judges nothing: per run its exit code, ``timed_out``,
``output_capped``, and its stdout normalised under the batch's comparison as a digest with a
short prefix (for ``float``, the tokens too when short, so the host groups numbers within the
tolerance). A program that hits the time limit ``max_timeouts`` times is not run again: its
remaining streams come back ``not_run``.
"""

import hashlib
import json
import os
import signal
import sys
import tempfile

DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, DRIVER_DIR)  # -I leaves the script's dir out
from program_run import MAX_FENCE_TEXT, PROGRAM, _last_line, _run, normalised  # noqa: E402
from supervisor import _ancestors, _clear_sample, _kill_leftovers, _non_dumpable, _take  # noqa: E402

sys.path[:] = [p for p in sys.path if p not in (DRIVER_DIR, "", ".")]


def judge(run, expected, job):
    """(category, message) of one run against the expected text."""
    if run["timed_out"]:
        return "timeout", f"killed at the time limit ({job['timeout_s']} s)"
    if run["output_capped"]:
        return "wrong_answer", f"killed: stdout past {job['max_output_bytes']} bytes"
    if run["exit"] != 0:
        why = _last_line(run["stderr"])
        return "runtime_error", f"exit {run['exit']}" + (f": {why}" if why else "")
    got, wanted = normalised(run["stdout"]), normalised(expected)
    if got == wanted:
        return "passed", ""
    return "wrong_answer", f"expected {wanted[:120]!r}, got {got[:120]!r}"


def _sample(scratch, source, cases, job, keep):
    """Every input of ``cases`` until the first that fails: the sample's verdict line."""
    with open(os.path.join(scratch, PROGRAM), "w", encoding="utf-8") as fh:
        fh.write(source)
    outcomes, category, message, fence_said, total = [], "passed", "", "", 0.0
    for number, case in enumerate(cases):
        run = _run(scratch, case["input"], job)
        if job["own_pid_namespace"]:  # what a run left behind (a daemon) ends before the next
            _kill_leftovers(keep)
        fence_said = fence_said or run["fence"]
        total += run["duration_s"]
        category, message = judge(run, case["expected"], job)
        outcomes.append(category)
        if category != "passed":
            message = f"input {number + 1} of {len(cases)}: {message}"
            break
    return {
        "category": category,
        "message": message[:500],
        "inputs": outcomes,
        "duration_s": round(total, 4),
        "isolated": True,
        "fence": fence_said[:MAX_FENCE_TEXT] or "none: no input ran",
        "time_limit_s": job["timeout_s"],
    }


def _compared(stdout, comparison):
    """``stdout`` as ``comparison`` sees it: whole, without trailing whitespace, or tokens."""
    if comparison == "exact":
        return stdout
    if comparison == "float":
        return " ".join(stdout.split())
    return normalised(stdout)


def _observed(run, job):
    """What a pick compares of one run (no verdict: there is no expected output)."""
    text = _compared(run["stdout"], job["comparison"])
    seen = {
        "exit": run["exit"],
        "timed_out": run["timed_out"],
        "output_capped": run["output_capped"],
        "digest": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
        "prefix": text[: job["prefix_chars"]],
        "duration_s": run["duration_s"],
    }
    if job["comparison"] == "float" and len(text) <= job["max_token_chars"]:
        seen["tokens"] = text
    return seen


def _observe_sample(scratch, source, streams, job, keep):
    """Every stream of ``streams`` on one program, until it has timed out ``max_timeouts``
    times: the sample's line."""
    with open(os.path.join(scratch, PROGRAM), "w", encoding="utf-8") as fh:
        fh.write(source)
    runs, fence_said, timeouts = [], "", 0
    for stream in streams:
        if timeouts >= job["max_timeouts"]:
            runs.append({"not_run": True})
            continue
        run = _run(scratch, stream["stdin"], job, stream["arguments"])
        if job["own_pid_namespace"]:
            _kill_leftovers(keep)
        fence_said = fence_said or run["fence"]
        timeouts += run["timed_out"]
        runs.append(_observed(run, job))
    return {
        "runs": runs,
        "isolated": True,
        "fence": fence_said[:MAX_FENCE_TEXT] or "none: no input ran",
        "time_limit_s": job["timeout_s"],
    }


_OBSERVE = ("comparison", "max_timeouts", "prefix_chars", "max_token_chars")


def _main():
    _non_dumpable()
    batch_token = _take("token.txt").strip()
    batch = json.loads(_take("batch.json"))
    keep = _ancestors()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a program that closes its stdin early
    names = ("timeout_s", "memory_bytes", "max_output_bytes", "own_pid_namespace")
    observe = batch.get("mode") == "observe"
    job = {k: batch[k] for k in names + (_OBSERVE if observe else ())}
    scratch = None
    for i, source in enumerate(batch["programs"]):
        _clear_sample(scratch, batch["own_pid_namespace"], keep)
        scratch = tempfile.mkdtemp(prefix="scratch-", dir=DRIVER_DIR)
        if observe:
            found = _observe_sample(scratch, source, batch["streams"], job, keep)
        else:
            found = _sample(scratch, source, batch["cases"], job, keep)
        line = json.dumps({"i": i, **found})
        sys.stdout.write("\n" + batch_token + " " + line + "\n")
        sys.stdout.flush()
    _clear_sample(scratch, batch["own_pid_namespace"], keep)


if __name__ == "__main__":
    _main()
