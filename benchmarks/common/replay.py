"""`codegen replay serve` for the replay benchmarks: started on a free loopback port, its
base URL read from its first line, stopped when the block ends."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replay_server(
    codegen: str, recording: Path, log: Path, env: Mapping[str, str], who: str
) -> Iterator[str]:
    """Serves ``recording`` (each request logged to ``log``); yields its OPENAI_BASE_URL.
    ``who`` names the benchmark in the one-line error when the server does not start."""
    server = subprocess.Popen(
        [codegen, "replay", "serve", str(recording), "--port", "0", "--log", str(log)],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        if not line.startswith("OPENAI_BASE_URL="):
            raise SystemExit(f"{who}: error: replay server did not start: {line!r}")
        yield line.split("=", 1)[1]
    finally:
        server.terminate()
        server.wait(timeout=10)
