"""How grounded a search is: how much of the corpus the index holds right now.

``none``: nothing to search (no index, or an empty one); ``partial``: the index holds some of
the corpus's chunks (a first build under way, or one cut short), with the fraction embedded;
``full``: every chunk of the corpus is in the index. With no chunks file to compare with (an
index built elsewhere), the index is taken as the whole corpus. ``building``: a corpus build
was under way when the note was taken (the caller knows; none and partial then say how far it
got, rather than suggest starting one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

NONE, PARTIAL, FULL = "none", "partial", "full"


@dataclass(frozen=True)
class Grounding:
    status: str  # none | partial | full
    chunks: int  # chunks of the corpus the index holds (what a search can find)
    embedded_fraction: float  # chunks / the corpus's chunks (0 with none to compare)
    corpus_chunks: int | None = None  # the corpus's chunks; None: no chunks file
    building: bool = False  # a corpus build was under way (only ever set short of full)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "chunks": self.chunks,
            "embedded_fraction": self.embedded_fraction,
            "corpus_chunks": self.corpus_chunks,
            "building": self.building,
        }

    def while_building(self) -> Grounding:
        """This note, taken while a corpus build runs: a full index stays full."""
        return self if self.status == FULL else replace(self, building=True)

    def describe(self) -> str:
        if self.building:
            held = (
                "no chunks written yet"
                if self.corpus_chunks is None
                else f"{self.chunks} of {self.corpus_chunks} chunks"
            )
            return f"{self.status}: building ({self.embedded_fraction:.0%} embedded: {held})"
        if self.status == NONE:
            return "none: no index to search (build it with `codegen corpus build`)"
        if self.status == PARTIAL:
            return (
                f"partial: {self.chunks} of {self.corpus_chunks} chunks embedded "
                f"({self.embedded_fraction:.0%})"
            )
        return f"full: {self.chunks} chunks"


def corpus_chunk_ids(chunks_file: Path) -> set[str] | None:
    """The chunk ids of ``chunks.jsonl`` (None when there is none)."""
    try:
        with chunks_file.open(encoding="utf-8", errors="surrogatepass") as fh:
            return {json.loads(line)["id"] for line in fh if line.strip()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError):
        return None


def grounding_of(corpus_ids: set[str] | None, index_ids: set[str]) -> Grounding:
    if corpus_ids is None:  # nothing to compare with: the index is the corpus
        n = len(index_ids)
        return Grounding(FULL if n else NONE, n, 1.0 if n else 0.0, None)
    held = len(corpus_ids & index_ids)
    total = len(corpus_ids)
    if held == 0:
        return Grounding(NONE, 0, 0.0, total)
    fraction = round(held / total, 4)
    return Grounding(FULL if held == total else PARTIAL, held, fraction, total)


def no_index(corpus_ids: set[str] | None = None) -> Grounding:
    return Grounding(NONE, 0, 0.0, len(corpus_ids) if corpus_ids is not None else None)
