"""What a search returns and what a retriever must offer; the crew depends only on this."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    uri: str
    start_line: int
    end_line: int
    score: float
    text: str
    source: str = ""
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def citation(self) -> str:
        return f"{self.uri}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "citation": self.citation}


class Retriever(Protocol):
    def search(
        self, query: str, k: int = 8, *, source: str | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Ranked hits, best first; an empty index returns an empty list."""
        ...
