"""The bounded record of what a loopback server was asked (``server.requests``).

A server that runs for a whole evaluation (``codegen replay serve``) or that a client feeds
without end must not keep every request: the history holds the newest ``max_items`` entries
whose recorded sizes add up to at most ``max_bytes``, dropping the oldest first, and counts
every entry it was given in ``total``. Readers index, slice, iterate and compare it as the
list it used to be.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import SupportsIndex, TypeVar, overload

T = TypeVar("T")

# Far above what one test, benchmark or evaluation of the repository sends (a ClassEval crew
# run is about 2,000 requests), far below what would hold a host's memory.
MAX_HISTORY_ITEMS = 10_000
MAX_HISTORY_BYTES = 256 * 1024 * 1024


class History(deque[T]):
    """A deque of the newest entries within a count and a byte budget (``append`` only)."""

    def __init__(
        self, max_items: int = MAX_HISTORY_ITEMS, max_bytes: int = MAX_HISTORY_BYTES
    ) -> None:
        super().__init__()
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.total = 0  # every entry ever appended, kept or dropped
        self._sizes: deque[int] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def append(self, item: T, size: int = 0) -> None:
        """Keep ``item`` (``size``: the bytes it stands for, a request's body say)."""
        with self._lock:
            self.total += 1
            while super().__len__() and (
                super().__len__() >= self.max_items or self._bytes + size > self.max_bytes
            ):
                super().popleft()
                self._bytes -= self._sizes.popleft()
            super().append(item)
            self._sizes.append(size)
            self._bytes += size

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self._sizes.clear()
            self._bytes = 0

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...  # type: ignore[override]
    def __getitem__(self, index: SupportsIndex | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self)[index]
        return super().__getitem__(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)
