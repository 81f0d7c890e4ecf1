"""The one long-lived thread that starts every bwrap of a bubblewrap sandbox (bwrap.py)."""

from __future__ import annotations

import concurrent.futures
import queue
import subprocess
import threading
from collections.abc import Callable
from typing import TypeAlias

# What the spawner thread runs, and where its result (or exception) goes.
_Spawn: TypeAlias = tuple[
    Callable[[], "subprocess.Popen[bytes]"], "concurrent.futures.Future[subprocess.Popen[bytes]]"
]


class Spawner:
    """Starts every bwrap from one long-lived thread.

    ``--die-with-parent`` is PR_SET_PDEATHSIG, which fires when the parent *thread* exits:
    a sandbox started from a short-lived worker thread would be killed with that thread.
    This thread lives exactly as long as the sandbox object, so its boxes do too.
    """

    def __init__(self) -> None:
        self._queue: queue.Queue[_Spawn | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="sandbox-bwrap", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    def call(self, fn: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        future: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        self._queue.put((fn, future))
        return future.result()

    def stop(self) -> None:
        self._queue.put(None)
