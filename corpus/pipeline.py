"""The downstream stages: raw (all sources) -> clean -> dedupe -> chunks.

Each stage reads the previous stage's JSON-lines file and writes its own atomically, and
serves per-document work from the content-addressed ``StageCache``. Stages are deterministic
functions of their input, so a killed run restarted gives exactly the same chunks, and a run
with nothing changed recomputes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpus.cache import StageCache
from corpus.chunk import CHUNKER_VERSION, Budget, Span, chunk_spans, count_tokens, make_chunks
from corpus.clean import CLEAN_VERSION, DEFAULT_MAX_BYTES, clean_document, is_vendored
from corpus.dedupe import Candidate, DedupeParams, dedupe, exact_key, rank_of, signature
from corpus.model import Chunk, Document
from corpus.store import (
    cache_path,
    chunks_path,
    clean_path,
    dedupe_report_path,
    deduped_path,
    raw_path,
    raw_sources,
    read_chunks,
    read_documents,
    read_jsonl,
    write_jsonl_atomic,
)

Progress = Callable[[str], None]


def _key(*parts: object) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8", "replace")).hexdigest()


def _noop(_: str) -> None:
    return None


@dataclass
class CleanStats:
    documents_in: int = 0
    documents_out: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    by_source: Counter[str] = field(default_factory=Counter)
    cache_hits: int = 0
    bytes_in: int = 0


def clean_stage(
    corpus_dir: Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = _noop,
) -> CleanStats:
    """Clean every stored raw source into ``clean.jsonl``."""
    stats = CleanStats()
    with StageCache(cache_path(corpus_dir)) as cache:

        def records() -> Iterator[dict[str, Any]]:
            for source in raw_sources(corpus_dir):
                for doc in read_documents(raw_path(corpus_dir, source)):
                    stats.documents_in += 1
                    stats.bytes_in += len(doc.text.encode("utf-8", "surrogatepass"))
                    path = str(doc.metadata.get("path") or doc.uri)
                    key = _key(CLEAN_VERSION, doc.hash, doc.language, is_vendored(path), max_bytes)
                    hit = cache.get_json("clean", key)
                    if hit is None:
                        res = clean_document(doc, max_bytes=max_bytes)
                        hit = {
                            "text": res.text,
                            "language": res.language,
                            "dropped": res.dropped,
                            "redactions": res.redactions,
                        }
                        cache.put_json("clean", key, hit)
                    else:
                        stats.cache_hits += 1
                    stats.redactions.update(hit["redactions"])
                    if hit["dropped"]:
                        stats.dropped[hit["dropped"]] += 1
                        continue
                    stats.documents_out += 1
                    stats.by_source[doc.source] += 1
                    if stats.documents_in % 500 == 0:
                        progress(f"clean: {stats.documents_in} documents")
                    yield Document(
                        id=doc.id,
                        source=doc.source,
                        uri=doc.uri,
                        title=doc.title,
                        text=hit["text"],
                        language=hit["language"],
                        licence=doc.licence,
                        metadata={**doc.metadata, "raw_hash": doc.hash},
                    ).to_dict()

        write_jsonl_atomic(clean_path(corpus_dir), records())
    return stats


@dataclass
class DedupeStats:
    documents_in: int = 0
    documents_out: int = 0
    exact_removed: int = 0
    near_removed: int = 0
    clusters: list[list[str]] = field(default_factory=list)
    removed_by_source: Counter[str] = field(default_factory=Counter)


def dedupe_stage(corpus_dir: Path, params: DedupeParams, progress: Progress = _noop) -> DedupeStats:
    """Remove exact and near duplicates across all sources into ``deduped.jsonl``."""
    docs = {d.id: d for d in read_documents(clean_path(corpus_dir))}
    candidates = [Candidate(d.id, d.text, rank_of(d.metadata)) for d in docs.values()]
    with StageCache(cache_path(corpus_dir)) as cache:

        def signature_of(c: Candidate) -> np.ndarray:
            key = _key(params.key(), exact_key(c.text))
            raw = cache.get_bytes("minhash", key)
            if raw is not None:
                return np.frombuffer(raw, dtype=np.uint32)
            sig = signature(c.text, params)
            cache.put_bytes("minhash", key, sig.astype(np.uint32).tobytes())
            return sig

        progress(f"dedupe: {len(candidates)} documents")
        result = dedupe(candidates, params, signature_of)
    removed = {**result.exact_removed, **result.near_removed}
    stats = DedupeStats(
        documents_in=len(candidates),
        documents_out=len(result.keep),
        exact_removed=len(result.exact_removed),
        near_removed=len(result.near_removed),
        clusters=result.clusters,
        removed_by_source=Counter(docs[i].source for i in removed),
    )
    write_jsonl_atomic(deduped_path(corpus_dir), (docs[i].to_dict() for i in result.keep))
    report = [
        {"kept": c[0], "removed": c[1:], "uris": [docs[i].uri for i in c]} for c in result.clusters
    ]
    exact = [
        {"kept": k, "removed": [r], "uris": [docs[k].uri, docs[r].uri], "exact": True}
        for r, k in sorted(result.exact_removed.items())
    ]
    write_jsonl_atomic(dedupe_report_path(corpus_dir), [*exact, *report])
    return stats


@dataclass
class ChunkStats:
    documents: int = 0
    chunks: int = 0
    new_chunks: int = 0
    removed_chunks: int = 0
    duplicate_chunks: int = 0
    cache_hits: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_source: Counter[str] = field(default_factory=Counter)
    token_sizes: list[int] = field(default_factory=list)
    examples: int = 0


_EXAMPLE_DIRS = re.compile(r"(?:^|/)(?:examples?|demos?|samples?)/")
_DOCTEST = re.compile(r"^\s*>>> ", re.MULTILINE)


def _tag_examples(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """Runnable examples: doctest blocks anywhere, and files under an examples/ folder."""
    in_examples_dir = bool(_EXAMPLE_DIRS.search(str(doc.metadata.get("path") or "")))
    out = []
    for c in chunks:
        kind = "example_file" if in_examples_dir else "doctest" if _DOCTEST.search(c.text) else None
        out.append(
            c
            if kind is None
            else Chunk(**{**c.to_dict(), "metadata": {**c.metadata, "example": kind}})
        )
    return out


def chunk_stage(corpus_dir: Path, budget: Budget, progress: Progress = _noop) -> ChunkStats:
    """Chunk every kept document into ``chunks.jsonl`` (the contract the index reads)."""
    target = chunks_path(corpus_dir)
    previous = {r["id"] for r in read_jsonl(target)}
    stats = ChunkStats()
    seen: set[str] = set()
    with StageCache(cache_path(corpus_dir)) as cache:

        def records() -> Iterator[dict[str, Any]]:
            for doc in read_documents(deduped_path(corpus_dir)):
                stats.documents += 1
                key = _key(CHUNKER_VERSION, doc.hash, doc.language, doc.title, budget)
                cached = cache.get_json("spans", key)
                if cached is None:
                    spans = chunk_spans(doc.text, doc.language, doc.title, budget)
                    cache.put_json("spans", key, [list(s.__dict__.values()) for s in spans])
                else:
                    stats.cache_hits += 1
                    spans = [Span(*s) for s in cached]
                for c in _tag_examples(doc, make_chunks(doc, doc.text, doc.language, spans)):
                    # Identical text = identical id: keep the first, so ids stay unique.
                    if c.id in seen:
                        stats.duplicate_chunks += 1
                        continue
                    seen.add(c.id)
                    stats.chunks += 1
                    stats.by_kind[c.kind] += 1
                    stats.by_source[c.source] += 1
                    stats.token_sizes.append(count_tokens(c.text))
                    stats.examples += "example" in c.metadata
                    yield c.to_dict()
                if stats.documents % 500 == 0:
                    progress(f"chunk: {stats.documents} documents, {stats.chunks} chunks")

        write_jsonl_atomic(target, records())
    stats.new_chunks = len(seen - previous)
    stats.removed_chunks = len(previous - seen)
    return stats


def size_distribution(sizes: list[int]) -> dict[str, float]:
    if not sizes:
        return {"count": 0}
    arr = np.asarray(sizes)
    return {
        "count": int(arr.size),
        "min": int(arr.min()),
        "p10": float(np.percentile(arr, 10)),
        "median": float(np.median(arr)),
        "p90": float(np.percentile(arr, 90)),
        "max": int(arr.max()),
        "mean": round(float(arr.mean()), 1),
    }


def chunk_sizes(corpus_dir: Path) -> list[int]:
    return [count_tokens(c.text) for c in read_chunks(chunks_path(corpus_dir))]


def dump_counter(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items()))


def to_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)
