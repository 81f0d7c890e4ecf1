"""The downstream stages: raw (all sources) -> clean -> dedupe -> chunks.

Each stage reads the previous stage's JSON-lines file and writes its own atomically, and
serves per-document work from the content-addressed ``StageCache``. Stages are deterministic
functions of their input, so a killed run restarted gives exactly the same chunks, and a run
with nothing changed recomputes nothing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

import numpy as np

from codegen.corpus.cache import StageCache
from codegen.corpus.chunk import (
    CHUNKER_VERSION,
    Budget,
    chunk_metadata,
    chunk_spans,
    count_tokens,
    make_chunks,
)
from codegen.corpus.clean import CLEAN_VERSION, DEFAULT_MAX_BYTES, clean_document, is_vendored
from codegen.corpus.dedupe import (
    CODE_LANGUAGES,
    NORMALISER_VERSION,
    Candidate,
    DedupeParams,
    Fingerprint,
    code_fingerprint,
    dedupe,
    exact_key,
    rank_of,
    signature,
)
from codegen.corpus.model import Chunk, ChunkRecord, Document, DocumentRecord, content_hash
from codegen.corpus.secrets import SECRETS_VERSION, has_secret
from codegen.corpus.stage_memo import (
    memo_get,
    memo_put,
    read_manifest,
    restore_stats,
    stage_key,
    stats_dict,
)
from codegen.corpus.store import (
    cache_path,
    chunks_path,
    clean_path,
    dedupe_report_path,
    deduped_path,
    fingerprint,
    raw_path,
    raw_sources,
    read_chunks,
    read_documents,
    write_jsonl_atomic,
)
from codegen.json_types import JSONObject, JSONValue

Progress = Callable[[str], None]


def _noop(_: str) -> None:
    return None


@dataclass
class CleanStats:
    memoized: bool = False  # True when replayed from the stage manifest
    documents_in: int = 0
    documents_out: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    by_source: Counter[str] = field(default_factory=Counter)
    cache_hits: int = 0
    bytes_in: int = 0


class CleanHit(TypedDict):
    """A cleaned document in the stage cache (``clean`` namespace)."""

    text: str | None  # None: dropped
    language: str
    dropped: str | None  # the reason
    redactions: dict[str, int]


def _clean_hit(value: JSONValue) -> CleanHit | None:
    """A cached clean result, or None when there is none (or it has another shape)."""
    if not isinstance(value, dict):
        return None
    text, language, dropped = value.get("text"), value.get("language"), value.get("dropped")
    redactions = value.get("redactions")
    if (
        not isinstance(text, str | None)
        or not isinstance(language, str)
        or not isinstance(dropped, str | None)
        or not isinstance(redactions, dict)
    ):
        return None
    counts = {k: n for k, n in redactions.items() if isinstance(n, int)}
    return CleanHit(text=text, language=language, dropped=dropped, redactions=counts)


def clean_stage(
    corpus_dir: Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = _noop,
) -> CleanStats:
    """Clean every stored raw source into ``clean.jsonl``."""
    inputs = [raw_path(corpus_dir, s) for s in raw_sources(corpus_dir)]
    memo_key = stage_key(
        CLEAN_VERSION, SECRETS_VERSION, max_bytes, *(f"{p.name}={fingerprint(p)}" for p in inputs)
    )
    outputs = [clean_path(corpus_dir)]
    if (memo := memo_get(corpus_dir, "clean", memo_key, outputs)) is not None:
        return restore_stats(CleanStats, memo)
    stats = CleanStats()
    with StageCache(cache_path(corpus_dir)) as cache:

        def records() -> Iterator[DocumentRecord]:
            for source in raw_sources(corpus_dir):
                for doc in read_documents(raw_path(corpus_dir, source)):
                    stats.documents_in += 1
                    stats.bytes_in += len(doc.text.encode("utf-8", "surrogatepass"))
                    path = str(doc.metadata.get("path") or doc.uri)
                    key = stage_key(
                        CLEAN_VERSION,
                        SECRETS_VERSION,
                        doc.hash,
                        doc.language,
                        is_vendored(path),
                        max_bytes,
                    )
                    hit = _clean_hit(cache.get_json("clean", key))
                    if hit is None:
                        res = clean_document(doc, max_bytes=max_bytes)
                        hit = CleanHit(
                            text=res.text,
                            language=res.language,
                            dropped=res.dropped,
                            redactions=res.redactions,
                        )
                        cache.put_json("clean", key, hit)
                    else:
                        stats.cache_hits += 1
                    stats.redactions.update(hit["redactions"])
                    if hit["dropped"] or hit["text"] is None:
                        stats.dropped[hit["dropped"] or "empty"] += 1
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
    memo_put(corpus_dir, "clean", memo_key, outputs, stats_dict(stats))
    return stats


def _cached_signatures(
    cache: StageCache, params: DedupeParams
) -> Callable[[Candidate, bool], np.ndarray]:
    """Signatures by content and recipe: unchanged text is never shingled again."""

    def signature_of(c: Candidate, code: bool) -> np.ndarray:
        # Word shingles ignore case and spacing, as exact_key does; code tokens keep case.
        key = stage_key(params.key(code), content_hash(c.text) if code else exact_key(c.text))
        raw = cache.get_bytes("minhash", key)
        if raw is not None:
            return np.frombuffer(raw, dtype=np.uint32)
        sig = signature(c.text, params, code)
        cache.put_bytes("minhash", key, sig.astype(np.uint32).tobytes())
        return sig

    return signature_of


def _cached_fingerprints(cache: StageCache) -> Callable[[Candidate], Fingerprint]:
    def fingerprint_of(c: Candidate) -> Fingerprint:
        key = stage_key(NORMALISER_VERSION, content_hash(c.text))
        hit = cache.get_json("fingerprint", key)
        if hit is not None:
            return Fingerprint.from_json(hit)
        found = code_fingerprint(c.text)
        cache.put_json("fingerprint", key, found.to_json())
        return found

    return fingerprint_of


@dataclass
class DedupeStats:
    memoized: bool = False  # True when replayed from the stage manifest
    documents_in: int = 0
    documents_out: int = 0
    exact_removed: int = 0
    near_removed: int = 0
    clusters: list[list[str]] = field(default_factory=list)
    removed_by_source: Counter[str] = field(default_factory=Counter)


def dedupe_stage(corpus_dir: Path, params: DedupeParams, progress: Progress = _noop) -> DedupeStats:
    """Remove exact and near duplicates across all sources into ``deduped.jsonl``."""
    memo_key = stage_key(params, fingerprint(clean_path(corpus_dir)))
    outputs = [deduped_path(corpus_dir), dedupe_report_path(corpus_dir)]
    if (memo := memo_get(corpus_dir, "dedupe", memo_key, outputs)) is not None:
        return restore_stats(DedupeStats, memo)
    docs = {d.id: d for d in read_documents(clean_path(corpus_dir))}
    candidates = [
        Candidate(d.id, d.text, rank_of(d.metadata), code=d.language in CODE_LANGUAGES)
        for d in docs.values()
    ]
    with StageCache(cache_path(corpus_dir)) as cache:
        progress(f"dedupe: {len(candidates)} documents")
        result = dedupe(
            candidates, params, _cached_signatures(cache, params), _cached_fingerprints(cache)
        )
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
    memo_put(corpus_dir, "dedupe", memo_key, outputs, stats_dict(stats))
    return stats


@dataclass
class ChunkStats:
    memoized: bool = False  # True when replayed from the stage manifest
    documents: int = 0
    chunks: int = 0
    new_chunks: int = 0
    removed_chunks: int = 0
    duplicate_chunks: int = 0
    near_duplicate_chunks: int = 0  # code chunks that copy another document's (type-2 clones)
    cache_hits: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_source: Counter[str] = field(default_factory=Counter)
    token_sizes: list[int] = field(default_factory=list)
    examples: int = 0


# Chunks near-deduplicated as code: definitions. A module header is mostly its docstring,
# which the code fingerprint ignores on purpose, so two headers importing the same modules
# would look alike; they are not compared.
CODE_UNIT_KINDS = frozenset({"function", "method", "class"})
_EXAMPLE_DIRS = re.compile(r"(?:^|/)(?:examples?|demos?|samples?)/")
_DOCTEST = re.compile(r"^\s*>>> ", re.MULTILINE)


def _tag_examples(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """Runnable examples: doctest blocks anywhere, and files under an examples/ folder."""
    in_examples_dir = bool(_EXAMPLE_DIRS.search(str(doc.metadata.get("path") or "")))
    out = []
    for c in chunks:
        kind = "example_file" if in_examples_dir else "doctest" if _DOCTEST.search(c.text) else None
        out.append(c if kind is None else replace(c, metadata={**c.metadata, "example": kind}))
    return out


def chunk_stage(
    corpus_dir: Path,
    budget: Budget,
    progress: Progress = _noop,
    params: DedupeParams | None = None,
) -> ChunkStats:
    """Chunk every kept document into ``chunks.jsonl`` (the contract the index reads).

    Chunks with the same text are one chunk. Code definitions (functions, methods, classes)
    are also near-deduplicated across documents with the documents' method
    (``codegen.corpus.dedupe``): a function copied into another module, locals renamed, is one hit
    in
    search, not two. The chunk kept is the one of the
    better document (``rank_of``); chunks of one document are never merged with each other.
    ``params`` None: the default dedupe parameters.
    """
    params = params or DedupeParams()
    target = chunks_path(corpus_dir)
    memo_key = stage_key(
        CHUNKER_VERSION, budget, params, params.key(True), fingerprint(deduped_path(corpus_dir))
    )
    if (memo := memo_get(corpus_dir, "chunk", memo_key, [target])) is not None:
        # Nothing upstream changed: the stored chunks stand, and none of them is new.
        return restore_stats(ChunkStats, {**memo, "new_chunks": 0, "removed_chunks": 0})
    previous = {c.id for c in read_chunks(target)}
    stats = ChunkStats()
    seen: set[str] = set()
    with StageCache(cache_path(corpus_dir)) as cache:

        def doc_chunks(doc: Document) -> list[Chunk]:
            # Everything a document's chunks depend on, and nothing else (not mtime).
            key = stage_key(
                CHUNKER_VERSION,
                budget,
                doc.hash,
                doc.id,
                doc.uri,
                doc.title,
                doc.language,
                doc.source,
                json.dumps(chunk_metadata(doc), sort_keys=True, default=str),
                _EXAMPLE_DIRS.search(str(doc.metadata.get("path") or "")) is not None,
            )
            cached = cache.get_json("chunks", key)
            if isinstance(cached, list):
                stats.cache_hits += 1
                return [Chunk.from_dict(r) for r in cached if isinstance(r, dict)]
            spans = chunk_spans(doc.text, doc.language, doc.title, budget)
            made = _tag_examples(doc, make_chunks(doc, doc.text, doc.language, spans))
            cache.put_json("chunks", key, [c.to_dict() for c in made])
            return made

        unique: list[Chunk] = []
        code: list[Candidate] = []
        for doc in read_documents(deduped_path(corpus_dir)):
            stats.documents += 1
            rank = rank_of(doc.metadata)
            for c in doc_chunks(doc):
                # Identical text = identical id: keep the first, so ids stay unique.
                if c.id in seen:
                    stats.duplicate_chunks += 1
                    continue
                seen.add(c.id)
                unique.append(c)
                if c.language in CODE_LANGUAGES and c.kind in CODE_UNIT_KINDS:
                    code.append(Candidate(c.id, c.text, rank, code=True, group=doc.id))
            if stats.documents % 500 == 0:
                progress(f"chunk: {stats.documents} documents, {len(unique)} chunks")
        progress(f"chunk: near-duplicate check of {len(code)} code chunks")
        near = dedupe(
            code,
            params,
            _cached_signatures(cache, params),
            _cached_fingerprints(cache),
            word_shingles_for_code=False,
        )
        removed = near.exact_removed.keys() | near.near_removed.keys()
        stats.near_duplicate_chunks = len(removed)

        def records() -> Iterator[ChunkRecord]:
            for c in unique:
                if c.id in removed:
                    continue
                stats.chunks += 1
                stats.by_kind[c.kind] += 1
                stats.by_source[c.source] += 1
                stats.token_sizes.append(_tokens(c))
                stats.examples += "example" in c.metadata
                yield c.to_dict()

        write_jsonl_atomic(target, records())
        seen -= removed
    stats.new_chunks = len(seen - previous)
    stats.removed_chunks = len(previous - seen)
    memo_put(corpus_dir, "chunk", memo_key, [target], stats_dict(stats))
    return stats


def _tokens(chunk: Chunk) -> int:
    """The chunk's size in tokens, as the chunker measured it (counted again if missing)."""
    tokens = chunk.metadata.get("tokens")
    return tokens if isinstance(tokens, int) and tokens else count_tokens(chunk.text)


class ChunkReport(TypedDict):
    """What the corpus checks read from ``chunks.jsonl``."""

    leaks: list[str]  # ids of chunks a secret scan still flags
    sizes: dict[str, float]  # size_distribution of the chunks' token counts
    by_source: dict[str, int]  # chunks per source


def _chunk_report_from(memo: JSONObject) -> ChunkReport | None:
    leaks, sizes, by_source = memo.get("leaks"), memo.get("sizes"), memo.get("by_source")
    if not (isinstance(leaks, list) and isinstance(sizes, dict) and isinstance(by_source, dict)):
        return None
    return ChunkReport(
        leaks=[str(i) for i in leaks],
        sizes={k: v for k, v in sizes.items() if isinstance(v, int | float)},
        by_source={k: n for k, n in by_source.items() if isinstance(n, int)},
    )


def chunk_report(corpus_dir: Path) -> ChunkReport:
    """One pass over ``chunks.jsonl`` for the checks: secret leaks, sizes, chunks per source.

    Memoized by the file's fingerprint, and secret scans cached by chunk id, so an unchanged
    corpus is not rescanned.
    """
    target = chunks_path(corpus_dir)
    memo_key = stage_key(SECRETS_VERSION, "report")
    memo = memo_get(corpus_dir, "chunk_report", memo_key, [target])
    if memo is not None and (replayed := _chunk_report_from(memo)) is not None:
        return replayed
    leaks: list[str] = []
    sizes: list[int] = []
    by_source: Counter[str] = Counter()
    with StageCache(cache_path(corpus_dir)) as cache:
        for chunk in read_chunks(target):
            key = stage_key(SECRETS_VERSION, chunk.id)
            found = cache.get_json("secretscan", key)
            if not isinstance(found, bool):
                found = has_secret(chunk.text)
                cache.put_json("secretscan", key, found)
            if found:
                leaks.append(chunk.id)
            sizes.append(_tokens(chunk))
            by_source[chunk.source] += 1
    report = ChunkReport(leaks=leaks, sizes=size_distribution(sizes), by_source=dict(by_source))
    memo_put(corpus_dir, "chunk_report", memo_key, [target], report)
    return report


def last_dedupe_stats(corpus_dir: Path) -> DedupeStats | None:
    m = read_manifest(corpus_dir, "dedupe")
    if m is None:
        return None
    stats = m.get("stats")
    return restore_stats(DedupeStats, stats if isinstance(stats, dict) else {})


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


def dump_counter(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items()))


def to_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)
