"""Incremental sync counts, the Retriever contract, and ``codegen search`` end to end."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from codegen.corpus.model import Chunk
from codegen.orchestration.cli import main
from codegen.retrieval.embedders import Embedder, MiniLMEmbedder, OnnxMiniLMEmbedder
from codegen.retrieval.index import IndexRetriever, LazyRetriever, sync_index
from codegen.retrieval.lancedb_store import LanceDBStore


class Counting:
    """Wraps a real embedder and counts what it is asked to embed."""

    def __init__(self, inner: Embedder, identity: str | None = None) -> None:
        self.inner, self.documents = inner, 0
        self._identity = identity

    @property
    def identity(self) -> str:
        return self._identity or self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def provenance(self) -> dict[str, str]:
        return self.inner.provenance

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_sync_embeds_only_what_changed(
    tmp_path: Path, minilm: MiniLMEmbedder, stdlib_chunks: list[Chunk]
) -> None:
    store = LanceDBStore(uri=str(tmp_path / "idx"))
    first = stdlib_chunks[:20]
    emb = Counting(minilm)
    stats = sync_index(first + first[:5], store, emb, batch_size=8)  # duplicates count once
    assert (stats.total, stats.embedded, emb.documents, stats.reset) == (20, 20, 20, True)

    emb = Counting(minilm)
    stats = sync_index(first, store, emb)
    assert (stats.embedded, stats.deleted, stats.unchanged, emb.documents) == (0, 0, 20, 0)

    emb = Counting(minilm)
    stats = sync_index(stdlib_chunks[5:25], store, emb)
    assert (stats.embedded, stats.deleted, emb.documents) == (5, 5, 5)
    assert store.ids() == {c.id for c in stdlib_chunks[5:25]}

    emb = Counting(minilm, identity="minilm:other-version")
    stats = sync_index(stdlib_chunks[5:25], store, emb)
    assert (stats.embedded, stats.reset, emb.documents) == (20, True, 20)
    assert store.embedder_identity() == "minilm:other-version"


def test_retriever_contract(
    tmp_path: Path, minilm: MiniLMEmbedder, stdlib_chunks: list[Chunk]
) -> None:
    store = LanceDBStore(uri=str(tmp_path / "idx"))
    retriever = IndexRetriever(store, minilm)
    assert retriever.search("anything") == []  # missing index: empty, not an error
    sync_index(stdlib_chunks, store, minilm)
    target = next(c for c in stdlib_chunks if c.title == "dedent")
    for mode in ("hybrid", "vector", "keyword"):
        hits = retriever.search("remove common leading whitespace from every line", 5, mode=mode)
        assert target.id in [h.chunk_id for h in hits[:3]], mode
    hits = retriever.search("split a shell command line into tokens", k=3)
    assert len(hits) == 3 and hits[0].uri.endswith("shlex.py")
    assert hits[0].citation == f"{hits[0].uri}#L{hits[0].start_line}-L{hits[0].end_line}"
    assert retriever.search("dedent", source="nowhere") == []
    assert retriever.search("   ") == []
    with pytest.raises(ValueError, match="mode must be one of"):
        retriever.search("x", mode="fuzzy")
    other = IndexRetriever(store, Counting(minilm, identity="minilm:other"))
    with pytest.raises(ValueError, match="re-materialize the index"):
        other.search("dedent")


def test_lazy_retriever_loads_no_model_for_a_missing_index(tmp_path: Path) -> None:
    def explode() -> Embedder:
        raise AssertionError("the embedder must not be built for an empty index")

    retriever = LazyRetriever(LanceDBStore(uri=str(tmp_path / "none")), explode)
    assert retriever.search("read a file") == []


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["search", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_search_cli_explains_missing_empty_index_and_empty_query(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "read a file")
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "empty or missing" in err and "Traceback" not in err
    LanceDBStore(uri=str(isolated_home / "index")).reset("minilm:x", 384)  # exists, no rows
    code, _, err = _cli(capsys, "read a file")
    assert code != 0 and err.count("\n") == 1 and "empty or missing" in err
    for bad in ["", "   ", "x" * 5000]:
        code, _, err = _cli(capsys, bad)
        assert code == 2 and err.count("\n") == 1 and err.startswith("codegen: error:")


def test_search_cli_prints_ranked_hits(
    home_with_exported_model: Path,
    capsys: pytest.CaptureFixture[str],
    onnx_minilm: OnnxMiniLMEmbedder,
    stdlib_chunks: list[Chunk],
) -> None:
    # The CLI uses the configured default (ONNX MiniLM), so the index is built with it.
    index = home_with_exported_model / "index"
    sync_index(stdlib_chunks, LanceDBStore(uri=str(index)), onnx_minilm)
    code, out, _ = _cli(capsys, "split a shell command line into tokens", "-k", "3", "--json")
    assert code == 0
    payload = json.loads(out)
    assert len(payload["hits"]) == 3 and payload["mode"] == "hybrid"
    hit = payload["hits"][0]
    assert hit["uri"].endswith("shlex.py") and hit["citation"].startswith(hit["uri"] + "#L")
    assert {"start_line", "end_line", "score", "text"} <= hit.keys()
    code, out, _ = _cli(capsys, "dedent text", "-k", "2", "--source", "local")
    assert code == 0 and out.startswith(" 1. file://") and "score=" in out
    code, out, err = _cli(capsys, "dedent text", "--source", "nowhere")
    assert code == 0 and out == "" and "no hits" in err
