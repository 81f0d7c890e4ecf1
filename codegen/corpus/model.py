"""The document and chunk records every stage of the corpus pipeline passes along."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Document:
    """One source item: a file, a Q&A thread, an issue, a docs page, a blog post."""

    id: str
    source: str  # connector name: local, github_repos, github_issues, stackoverflow, docs, blogs
    uri: str
    title: str
    text: str
    language: str  # "python", "markdown", "html", "text", ...
    licence: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return content_hash(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hash": self.hash}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        data = {k: v for k, v in data.items() if k != "hash"}
        return cls(**data)


@dataclass(frozen=True)
class Chunk:
    """A retrievable span of a document, citable by uri and line span."""

    id: str  # hash of content and chunker version
    document_id: str
    source: str
    uri: str
    title: str
    text: str
    language: str
    start_line: int
    end_line: int
    kind: str = "text"  # function, class, method, module_header, section, qa, issue, text
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return cls(**data)
