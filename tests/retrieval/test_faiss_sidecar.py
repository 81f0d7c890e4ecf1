"""The faiss sidecar answers the dense leg of large LanceDB indexes, and never from stale rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codegen.corpus.model import Chunk
from codegen.retrieval.ann import FaissSidecar
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.stores import Filters

DIM = 16


def _chunks(n: int, start: int = 0) -> list[Chunk]:
    return [
        Chunk(
            id=f"c{i:05d}",
            document_id=f"d{i}",
            source="docs" if i % 2 else "local",
            uri=f"file:///src/m{i}.py",
            title=f"t{i}",
            text=f"def f{i}(): return {i}",
            language="python",
            start_line=1,
            end_line=2,
        )
        for i in range(start, start + n)
    ]


def _vectors(n: int, seed: int) -> np.ndarray:
    # Clustered like real embeddings: 20 centres plus noise, unit length.
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_sidecar_search_matches_exact_and_is_dropped_on_write(tmp_path: Path) -> None:
    store = LanceDBStore(uri=str(tmp_path / "lance"), ann_min_rows=500)
    store.reset("test-embedder", DIM)
    chunks, vectors = _chunks(2000), _vectors(2000, seed=1)
    store.upsert(chunks, vectors)
    # The queries come from other centres than the rows; the calibration gets real queries of
    # that kind (as sync_index passes the quality check's), never the ones scored below.
    store.refresh(lambda: _vectors(100, seed=2)[50:])
    sidecar_files = FaissSidecar.paths(tmp_path / "lance", "chunks")
    assert all(p.exists() for p in sidecar_files)

    queries = _vectors(100, seed=2)[:50]
    by_id = {c.id: c for c in chunks}
    recalls = []
    for q in queries:
        exact = {chunks[i].id for i in np.argsort(-(vectors @ q))[:10]}
        hits = store.search("", q, 10, mode="vector")
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for hit in hits:  # the whole hit comes from the sidecar's payload file
            chunk = by_id[hit.chunk_id]
            assert (hit.uri, hit.text, hit.title, hit.source) == (
                chunk.uri,
                chunk.text,
                chunk.title,
                chunk.source,
            )
            assert (hit.start_line, hit.end_line) == (chunk.start_line, chunk.end_line)
            assert hit.metadata["language"] == "python"
        recalls.append(len(exact & {h.chunk_id for h in hits}) / 10)
    assert np.mean(recalls) >= 0.95

    # A filtered query cannot use the sidecar; it still honours the filter.
    filtered = store.search("", queries[0], 5, mode="vector", filters=Filters(source="docs"))
    assert filtered and all(h.source == "docs" for h in filtered)

    # Any write removes the sidecar, so a new row is found at once (exact LanceDB path)...
    new = _chunks(1, start=5000)
    store.upsert(new, queries[:1])
    assert not any(p.exists() for p in sidecar_files)
    assert store.search("", queries[0], 1, mode="vector")[0].chunk_id == new[0].id
    # ...and a fresh store (another process) rebuilds it on refresh, with the new row in it.
    reopened = LanceDBStore(uri=str(tmp_path / "lance"), ann_min_rows=500)
    reopened.refresh()
    assert all(p.exists() for p in sidecar_files)
    assert reopened.search("", queries[0], 1, mode="vector")[0].chunk_id == new[0].id
