"""The document and chunk records every stage of the corpus pipeline passes along."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NotRequired, TypeAlias, TypedDict

from codegen.json_types import JSONValue

# Source-specific facts about a document (repo, path, stars, tags, updated_at, ...): flat JSON
# scalars and lists of strings, so every stage, the chunk store and the index can carry them.
MetadataValue: TypeAlias = str | int | float | bool | list[str] | None
Metadata: TypeAlias = dict[str, MetadataValue]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class DocumentRecord(TypedDict):
    """A document as one line of a raw, clean or deduped JSON-lines stage."""

    id: str
    source: str
    uri: str
    title: str
    text: str
    language: str
    licence: str | None
    metadata: Metadata
    hash: NotRequired[str]  # written for readers outside Python; recomputed, never trusted


class ChunkRecord(TypedDict):
    """A chunk as one line of ``chunks.jsonl`` (the contract the index reads)."""

    id: str
    document_id: str
    source: str
    uri: str
    title: str
    text: str
    language: str
    start_line: int
    end_line: int
    kind: str
    metadata: Metadata


class RecordError(ValueError):
    """A stored record does not have the shape its reader expects."""


def _str(data: Mapping[str, JSONValue], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise RecordError(f"{key} is not a string: {value!r}")
    return value


def _int(data: Mapping[str, JSONValue], key: str) -> int:
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(f"{key} is not an integer: {value!r}")
    return value


def _optional_str(data: Mapping[str, JSONValue], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RecordError(f"{key} is not a string: {value!r}")
    return value


def parse_metadata(value: JSONValue) -> Metadata:
    """Metadata read back from JSON: flat scalars and string lists, as it was written."""
    if not isinstance(value, dict):
        raise RecordError(f"metadata is not an object: {value!r}")
    out: Metadata = {}
    for key, item in value.items():
        if isinstance(item, list):
            if not all(isinstance(s, str) for s in item):
                raise RecordError(f"metadata {key} is not a list of strings: {item!r}")
            out[key] = [s for s in item if isinstance(s, str)]
        elif isinstance(item, dict):
            raise RecordError(f"metadata {key} is nested: {item!r}")
        else:
            out[key] = item
    return out


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
    metadata: Metadata = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return content_hash(self.text)

    def to_dict(self) -> DocumentRecord:
        return DocumentRecord(
            id=self.id,
            source=self.source,
            uri=self.uri,
            title=self.title,
            text=self.text,
            language=self.language,
            licence=self.licence,
            metadata=dict(self.metadata),
            hash=self.hash,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Document:
        """From a stored record (parsed JSON); the stored ``hash`` is ignored."""
        return cls(
            id=_str(data, "id"),
            source=_str(data, "source"),
            uri=_str(data, "uri"),
            title=_str(data, "title"),
            text=_str(data, "text"),
            language=_str(data, "language"),
            licence=_optional_str(data, "licence"),
            metadata=parse_metadata(data.get("metadata", {})),
        )


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
    metadata: Metadata = field(default_factory=dict)

    def to_dict(self) -> ChunkRecord:
        return ChunkRecord(
            id=self.id,
            document_id=self.document_id,
            source=self.source,
            uri=self.uri,
            title=self.title,
            text=self.text,
            language=self.language,
            start_line=self.start_line,
            end_line=self.end_line,
            kind=self.kind,
            metadata=dict(self.metadata),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> Chunk:
        """From a stored record (parsed JSON)."""
        kind = data.get("kind", "text")
        if not isinstance(kind, str):
            raise RecordError(f"kind is not a string: {kind!r}")
        return cls(
            id=_str(data, "id"),
            document_id=_str(data, "document_id"),
            source=_str(data, "source"),
            uri=_str(data, "uri"),
            title=_str(data, "title"),
            text=_str(data, "text"),
            language=_str(data, "language"),
            start_line=_int(data, "start_line"),
            end_line=_int(data, "end_line"),
            kind=kind,
            metadata=parse_metadata(data.get("metadata", {})),
        )
