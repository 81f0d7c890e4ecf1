"""On-disk layout of corpus stages, shared by the corpus assets and the index.

Each stage is a JSON-lines file under the corpus directory, written to a temporary file and
renamed into place so a failed or killed run never leaves a half-written stage behind.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeAlias, TypedDict

from codegen.corpus.model import Chunk, ChunkRecord, Document, DocumentRecord, RecordError
from codegen.durable import durable_replace
from codegen.json_types import JSONObject


class ClusterRecord(TypedDict, total=False):
    """One line of ``dedupe_clusters.json``: the document kept and the copies removed."""

    kept: str
    removed: list[str]
    uris: list[str]
    exact: bool  # only on exact duplicates


# Every kind of line the corpus stages write.
StageRecord: TypeAlias = DocumentRecord | ChunkRecord | ClusterRecord


def raw_path(corpus_dir: Path, source: str) -> Path:
    return corpus_dir / "raw" / f"{source}.jsonl"


def chunks_path(corpus_dir: Path) -> Path:
    return corpus_dir / "chunks.jsonl"


def _sha256_file(path: Path) -> str | None:
    if not path.exists():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_jsonl_atomic(path: Path, records: Iterable[StageRecord]) -> int:
    """Write to a temporary file, then rename over ``path``.

    When the new content is byte-identical to the old file, the old file is kept untouched
    (same mtime), so stages downstream can tell that nothing changed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = 0
    digest = hashlib.sha256()
    # surrogatepass: a lone surrogate from a hostile JSON API survives the round trip.
    with tmp.open("w", encoding="utf-8", errors="surrogatepass") as fh:
        for record in records:
            line = json.dumps(record, ensure_ascii=False) + "\n"
            digest.update(line.encode("utf-8", "surrogatepass"))
            fh.write(line)
            count += 1
    if _sha256_file(path) == digest.hexdigest():
        tmp.unlink()
    else:
        durable_replace(tmp, path)
    return count


def fingerprint(path: Path) -> str:
    """Cheap identity of a stage file: size and modification time (files are only ever
    replaced whole, so a changed file always gets a new mtime)."""
    try:
        st = path.stat()
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


def read_jsonl(path: Path) -> Iterator[JSONObject]:
    """The parsed lines of a stage file; the typed readers below turn them into records."""
    if not path.exists():
        return
    with path.open(encoding="utf-8", errors="surrogatepass") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise RecordError(f"{path.name}: a line is not a JSON object")
                yield record


def read_documents(path: Path) -> Iterator[Document]:
    for record in read_jsonl(path):
        yield Document.from_dict(record)


def read_chunks(path: Path) -> Iterator[Chunk]:
    for record in read_jsonl(path):
        yield Chunk.from_dict(record)


def clean_path(corpus_dir: Path) -> Path:
    return corpus_dir / "clean.jsonl"


def deduped_path(corpus_dir: Path) -> Path:
    return corpus_dir / "deduped.jsonl"


def dedupe_report_path(corpus_dir: Path) -> Path:
    return corpus_dir / "dedupe_clusters.json"


def state_dir(corpus_dir: Path) -> Path:
    """Incremental cursors (since, fromdate, ETag) per source."""
    return corpus_dir / "state"


def cache_path(corpus_dir: Path) -> Path:
    return corpus_dir / "cache" / "stages.sqlite"


def raw_sources(corpus_dir: Path) -> list[str]:
    """Sources with a stored raw stage, in name order."""
    folder = corpus_dir / "raw"
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []
