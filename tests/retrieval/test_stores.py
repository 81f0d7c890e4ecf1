"""The vector-store contract, run against LanceDB always and Weaviate when WEAVIATE_URL is set."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from codegen.corpus.model import Chunk
from codegen.retrieval.index import StoreConfig, open_store
from codegen.retrieval.stores import Filters, VectorStore, keyword_text, rrf_fuse

DIM = 8


def _chunk(i: int, text: str, *, source: str = "local", language: str = "python") -> Chunk:
    return Chunk(
        id=f"c{i:03d}",
        document_id=f"d{i}",
        source=source,
        uri=f"file:///src/m{i}.py",
        title=f"t{i}",
        text=text,
        language=language,
        start_line=i,
        end_line=i + 3,
        kind="function",
        metadata={"n": i},
    )


def _vec(i: int) -> np.ndarray:
    # Near-orthogonal unit vectors: chunk i is the unique nearest neighbour of _vec(i).
    v = np.full(DIM, 0.01, dtype=np.float32)
    v[i % DIM] = 1.0
    v[(i * 3 + 1) % DIM] += 0.2 * (i // DIM)
    return v / np.linalg.norm(v)


TEXTS = [
    "def read_config(path): return json.load(open(path))",
    "def parseHeaderLine(line): return line.split(':', 1)",
    "class LRUCache: eviction of least recently used entries",
    "def retry_with_backoff(fn, attempts): sleep exponentially between attempts",
    "Markdown guide: how to install the package with pip",
    "def checksum(data): return hashlib.sha256(data).hexdigest()",
]
CHUNKS = [
    _chunk(
        i,
        t,
        source="docs" if "Markdown" in t else "local",
        language="markdown" if "Markdown" in t else "python",
    )
    for i, t in enumerate(TEXTS)
]
VECTORS = np.stack([_vec(i) for i in range(len(TEXTS))])


@pytest.fixture(params=["lancedb", "weaviate"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    if request.param == "lancedb":
        yield open_store(StoreConfig(kind="lancedb", uri=str(tmp_path / "lance")))
        return
    url = os.environ.get("WEAVIATE_URL")
    if not url:
        pytest.skip("WEAVIATE_URL is not set: no Weaviate server to run the contract against")
    collection = f"Test{uuid.uuid4().hex[:10]}"
    s = open_store(StoreConfig(kind="weaviate", weaviate_url=url, collection=collection))
    yield s
    s.drop()  # type: ignore[attr-defined]


@pytest.fixture
def filled(store: VectorStore) -> VectorStore:
    store.reset("test-embedder@1", DIM)
    store.upsert(CHUNKS, VECTORS)
    store.refresh()
    return store


def test_new_store_is_empty_and_knows_no_embedder(store: VectorStore) -> None:
    assert store.embedder_identity() is None
    assert store.count() == 0
    assert store.ids() == set()


def test_upsert_records_identity_ids_and_citations(filled: VectorStore) -> None:
    assert filled.embedder_identity() == "test-embedder@1"
    assert filled.ids() == {c.id for c in CHUNKS}
    hit = filled.search("", _vec(2), 1, mode="vector")[0]
    assert (hit.chunk_id, hit.uri, hit.start_line, hit.end_line) == ("c002", CHUNKS[2].uri, 2, 5)
    assert hit.text == TEXTS[2]
    assert hit.metadata["n"] == 2 and hit.metadata["language"] == "python"
    assert hit.score == pytest.approx(1.0, abs=1e-3)


def test_upsert_same_id_replaces_instead_of_duplicating(filled: VectorStore) -> None:
    changed = _chunk(3, "def retry_forever(fn): loop until it works")
    filled.upsert([changed], _vec(3)[None, :])
    filled.refresh()
    assert filled.count() == len(CHUNKS)
    assert filled.search("", _vec(3), 1, mode="vector")[0].text == changed.text


def test_delete_stale_ids(filled: VectorStore) -> None:
    assert filled.delete(["c000", "c001", "no-such-id"]) == 3
    filled.refresh()
    assert filled.ids() == {c.id for c in CHUNKS[2:]}
    hits = filled.search("read config json", _vec(0), 10, mode="hybrid")
    assert "c000" not in {h.chunk_id for h in hits}


def test_vector_search_ranks_nearest_first(filled: VectorStore) -> None:
    for i in range(len(CHUNKS)):
        hits = filled.search("", _vec(i), 3, mode="vector")
        assert hits[0].chunk_id == CHUNKS[i].id
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_keyword_search_is_bm25_over_text_and_split_identifiers(filled: VectorStore) -> None:
    assert filled.search("sha256 checksum", None, 2, mode="keyword")[0].chunk_id == "c005"
    # "header" only occurs inside the camelCase identifier parseHeaderLine.
    assert filled.search("header", None, 2, mode="keyword")[0].chunk_id == "c001"
    assert filled.search("zebra", None, 5, mode="keyword") == []


def test_hybrid_fuses_both_rankings(filled: VectorStore) -> None:
    # The words point at c005, the vector at c000: both must be in the fused top 2.
    hits = filled.search("sha256 checksum hexdigest", _vec(0), 2, mode="hybrid")
    assert {h.chunk_id for h in hits} == {"c000", "c005"}


def test_filters_on_source_and_language(filled: VectorStore) -> None:
    for mode in ("vector", "keyword", "hybrid"):
        hits = filled.search(
            "install package pip read config",
            _vec(4),
            5,
            mode=mode,
            filters=Filters(source="local"),
        )
        assert hits and all(h.source == "local" for h in hits), mode
        docs = filled.search(
            "install package pip read config",
            _vec(4),
            5,
            mode=mode,
            filters=Filters(language="markdown"),
        )
        assert [h.chunk_id for h in docs] == ["c004"], mode
    assert filled.search("x", _vec(0), 5, mode="vector", filters=Filters(source="nope")) == []


def test_hostile_queries_and_filter_values_do_not_break_search(filled: VectorStore) -> None:
    for text in ["' OR 1=1 --", 'read" AND (config', "ünïcödé ☃ \t\n", "a" * 3000, "*:*"]:
        filled.search(text, _vec(0), 3, mode="hybrid")
        filled.search(text, None, 3, mode="keyword")
    assert (
        filled.search("x", _vec(0), 3, mode="vector", filters=Filters(source="x' OR '1'='1")) == []
    )


def test_reset_for_another_embedder_drops_everything(filled: VectorStore) -> None:
    filled.reset("other-embedder@2", DIM)
    assert filled.count() == 0
    assert filled.embedder_identity() == "other-embedder@2"


def test_keyword_text_splits_identifiers() -> None:
    text = keyword_text(_chunk(0, "def parseHTTPHeader(raw_header_line): pass"))
    assert {"parse", "raw", "header", "line"} <= set(text.split())


def test_rrf_fuse_is_reciprocal_rank_fusion() -> None:
    fused = dict(rrf_fuse([["a", "b"], ["b", "c"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert max(fused, key=fused.get) == "b"


def test_lancedb_reads_the_embedder_identity_once_per_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every search checks the identity; listing tables and reading the meta table each time
    # was most of a build's quality check. The store's own reset keeps it current.
    store = open_store(StoreConfig(kind="lancedb", uri=str(tmp_path / "lance")))
    store.reset("test-embedder@1", DIM)
    store.upsert(CHUNKS, VECTORS)
    assert store.embedder_identity() == "test-embedder@1"
    listed = 0
    table_names = store._table_names  # type: ignore[attr-defined]

    def counting() -> list[str]:
        nonlocal listed
        listed += 1
        return table_names()

    monkeypatch.setattr(store, "_table_names", counting)
    for _ in range(3):
        assert store.embedder_identity() == "test-embedder@1"
    assert listed == 0
    store.reset("other-embedder@2", DIM)
    assert store.embedder_identity() == "other-embedder@2"
