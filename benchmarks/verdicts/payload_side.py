"""One payload of issue 46 against one tree, in a subprocess of its own (``payloads`` starts
it): PYTHONPATH set to that tree, a temporary working directory and a fresh CODEGEN_HOME and
DAGSTER_HOME. The subprocess mounts this checkout's ``benchmarks`` package by its path (the
tree's own benchmarks may differ), so the payloads (``judged_payloads``, ``box_payloads``,
``setting_payloads``) run unchanged against any tree: each imports the tree's ``codegen``
through public APIs that exist before and after the fix (the sandbox's ``run_pytest``, the
HumanEval-shaped and ClassEval scorers, the shared-input runner, HumanEval+'s expected outputs,
Dagster's ``validate_run_config``, the wheelhouse, the inbox, the scripted server).

Each payload returns one or more results: ``succeeded`` (the attack worked: a wrong candidate
came out passed, the host raised RecursionError, ...), ``blocked`` (the defence was observed:
the verdict is a failure, the field is refused, ...) or ``error`` (the harness could not mount
the attack: an exception of the payload itself, a control that failed). An exception is never
read as blocked. Reads one JSON spec on stdin, ``{"payload", "backend"}``; prints one JSON line
``{"tree", "results": [{"id", "attack", "detail"}]}``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from benchmarks.verdicts import box_payloads, judged_payloads, setting_payloads
from benchmarks.verdicts.payload_kit import ERROR, Result, result

PAYLOADS: dict[str, Callable[[str], list[Result]]] = {
    "1a": judged_payloads.planted_init,
    "1b": judged_payloads.test_file_swapped,
    "1c": judged_payloads.cross_sample_plant,
    "2a": judged_payloads.class_forces_old_way_humaneval,
    "2b": judged_payloads.class_forces_old_way_pytest,
    "2c": judged_payloads.class_forces_old_way_classeval,
    "3": box_payloads.drafts_read_each_other,
    "4": setting_payloads.launch_overrides,
    "5a": box_payloads.deep_value,
    "5b": box_payloads.huge_output,
    "6": box_payloads.bwrap_job_memory,
    "7": box_payloads.big_int_outage,
    "8a": judged_payloads.stop_iteration,
    "8b": setting_payloads.unhashed_package_set,
    "8c": setting_payloads.inbox_symlink,
    "8d": setting_payloads.server_negative_length,
}


def run_side() -> None:
    spec = json.loads(sys.stdin.read())
    import codegen

    tree = str(Path(codegen.__file__).resolve().parents[1])
    try:
        results = PAYLOADS[spec["payload"]](spec["backend"])
    except BaseException as exc:  # the harness failed: never read as blocked
        tail = traceback.format_exc().strip().splitlines()[-3:]
        line = f"{type(exc).__name__}: {exc} | {' / '.join(tail)}"
        results = [result(spec["payload"], ERROR, line)]
    # A module the tree lacks can still be found elsewhere (an editable install's finder):
    # then the payload ran another tree's code, and says nothing of this one.
    strays = sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("codegen.")
        and getattr(module, "__file__", None)
        and not Path(module.__file__).resolve().is_relative_to(tree)
    )
    if strays:
        why = f"{strays[0]} came from outside {tree}: {sys.modules[strays[0]].__file__}"
        results = [result(spec["payload"], ERROR, why)]
    print(json.dumps({"tree": tree, "results": results}), flush=True)
    os._exit(0)  # leftover threads of a payload (a server, a pool) never hold the exit
