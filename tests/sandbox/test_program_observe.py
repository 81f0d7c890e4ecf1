"""The program driver's observe mode (a pick among programs) on both backends: every program on
every stream in one execution, nothing judged, each run's exit, timeout, cap and stdout under
the comparison coming back; a program that hangs is not run again after its timeout."""

from __future__ import annotations

import time
from typing import Any

import pytest

from codegen.sandbox.api import Sandbox
from codegen.sandbox.programs import NEVER_RAN, Stream, observe_programs

PROGRAMS = {
    "sums": "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
    "sums_with_spaces": "import sys\nprint(sum(map(int, sys.stdin.read().split())), '  ')\n\n",
    "echoes_arguments": "import sys\nprint(*sys.argv[1:])\nraise SystemExit(3)\n",
    "hangs": "import time\ntime.sleep(30)\n",
    "writes_megabytes": "print('y' * 5_000_000)\n",
}
STREAMS = [Stream("1 2\n"), Stream("3 4\n", ("-n", "5")), Stream("")]


def test_every_program_on_every_stream_in_one_execution(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    executions = []
    run = sb.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        executions.append(1)
        return run(*args, **kwargs)

    monkeypatch.setattr(sb, "run", counted)
    started = time.monotonic()
    runs = observe_programs(sb, list(PROGRAMS.values()), STREAMS, "trailing_whitespace", 0.5)
    took = time.monotonic() - started
    got = dict(zip(PROGRAMS, runs, strict=True))
    assert len(executions) == 1
    assert [r.prefix for r in got["sums"]] == ["3", "7", "0"]
    assert all(r.exit_code == 0 and not r.timed_out for r in got["sums"])
    # trailing whitespace is not part of the output under this comparison
    assert [r.digest for r in got["sums_with_spaces"]] == [r.digest for r in got["sums"]]
    assert [(r.prefix, r.exit_code) for r in got["echoes_arguments"]] == [
        ("", 3),
        ("-n 5", 3),
        ("", 3),
    ]
    hung = got["hangs"]
    assert hung[0].timed_out and hung[1:] == [NEVER_RAN, NEVER_RAN]
    assert all(r.output_capped and not r.timed_out for r in got["writes_megabytes"])
    assert took < 30  # one hang at 0.5 s, no execution-wide limit reached
