"""The corpus build on a GPU, as far as a CPU-only machine can check it: device selection,
the fp16 path's dtypes (run on the CPU), tokens cut before the cap, the converted weights
that travel to a GPU machine, and an index that never mixes two vector spaces."""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from codegen.corpus.model import Chunk
from codegen.retrieval.embedders import (
    DeviceMiniLMEmbedder,
    EmbedderConfig,
    EmbedderError,
    OnnxMiniLMEmbedder,
    make_build_embedder,
    verified_minilm_dir,
)
from codegen.retrieval.embedders import build as device_build
from codegen.retrieval.embedders.minilm import (
    CHARS_PER_CAPPED_TOKEN,
    cut_before_cap,
    encode_capped,
    fast_tokenizer,
)
from codegen.retrieval.embedders.torch_minilm import (
    verified_converted_copy,
    write_converted_copy,
)
from codegen.retrieval.index import IndexRetriever, sync_index
from codegen.retrieval.lancedb_store import LanceDBStore

CAP = 128


def _stdlib_texts() -> list[str]:
    """Whole modules cut into 80-line pieces: most run far past the cap."""
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for name in ("argparse.py", "textwrap.py", "difflib.py", "json/decoder.py"):
        lines = (root / name).read_text(encoding="utf-8").splitlines()
        texts += ["\n".join(lines[i : i + 80]) for i in range(0, len(lines), 80)]
    return texts


def test_text_cut_before_tokenizing_gives_exactly_the_whole_texts_capped_tokens() -> None:
    tokenizer = fast_tokenizer(str(verified_minilm_dir()[0]), CAP)
    long = CAP * CHARS_PER_CAPPED_TOKEN
    zero_width = "\u200b" * (long + 10) + " tail words"  # the cut part holds no token
    hostile = [
        "x" * (long * 3),  # no word break at all: never cut
        "\x1c".join(["word"] * long),  # \x1c is \s to Python, a deleted control char to BERT
        # 125 single-token words in 766 characters, then a word BERT reads as "unable" (it
        # drops the \x1c) whose first token is the cap's last: a cut at that \x1c would
        # end the capped ids with "un".
        "international " * 43 + "a " * 82 + "un\x1cable" + " tail" * 300,
        zero_width,  # encoded whole
        "Ünïcödé accents e\u0301 " * 200,  # combining marks stay with their letter
        "漢字かな交じり文 " * 300,  # each CJK character is its own word
        "supercalifragilistic_" * 40 + " " + "end " * 400,  # one long word, then short ones
        "a\tb\rc\nd " * 500,
        "",
        " " * (long + 5),
    ]
    texts = _stdlib_texts() + hostile
    whole = tokenizer.encode_batch(texts)
    capped = encode_capped(tokenizer, texts, CAP)
    assert [e.ids for e in capped] == [e.ids for e in whole]
    cut = [t for t in texts if len(cut_before_cap(t, CAP)) < len(t)]
    assert len(cut) > len(texts) // 2  # the work past the cap is really skipped
    # The zero-width text's cut holds no token, so it was encoded whole: still the same ids.
    assert len(tokenizer.encode(cut_before_cap(zero_width, CAP)).ids) < CAP


def test_device_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_build, "cuda_available", lambda: False)
    assert device_build.resolve_device("auto") == "cpu"
    assert device_build.resolve_device("cpu") == "cpu"
    with pytest.raises(EmbedderError, match='device = "cuda" but torch sees no CUDA device'):
        device_build.resolve_device("cuda")
    with pytest.raises(EmbedderError, match="unknown device 'gpu'"):
        device_build.resolve_device("gpu")
    monkeypatch.setattr(device_build, "cuda_available", lambda: True)
    assert device_build.resolve_device("auto") == "cuda"
    assert device_build.resolve_device("cpu") == "cpu"


def test_without_a_gpu_the_build_embedder_is_the_default(
    monkeypatch: pytest.MonkeyPatch, onnx_model_cache: Path
) -> None:
    monkeypatch.setattr(device_build, "cuda_available", lambda: False)
    built = make_build_embedder(EmbedderConfig(cache_dir=str(onnx_model_cache), device="auto"))
    assert isinstance(built, OnnxMiniLMEmbedder)
    assert built.provenance["device"] == "cpu" and built.provenance["precision"] == "int8"
    # Another embedder asked onto a GPU explicitly is an error, not a silent CPU build.
    with pytest.raises(EmbedderError, match="builds with minilm only"):
        make_build_embedder(EmbedderConfig(name="minilm-torch", device="cuda"))


def test_settings_refuse_an_unknown_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from codegen.settings import Settings

    monkeypatch.setenv("CODEGEN_RETRIEVAL__DEVICE", "gpu")
    with pytest.raises(ValidationError, match=r"retrieval\.device"):
        Settings()


@pytest.fixture(scope="module")
def fp16_on_cpu() -> DeviceMiniLMEmbedder:
    return DeviceMiniLMEmbedder(device="cpu", precision="fp16", group_size=16, max_batch=8)


def test_fp16_path_on_the_cpu_keeps_fp16_weights_and_returns_float32_unit_vectors(
    fp16_on_cpu: DeviceMiniLMEmbedder, stdlib_chunks: list[Chunk]
) -> None:
    import torch

    texts = [c.text for c in stdlib_chunks[:24]]
    model = fp16_on_cpu.model()
    assert {p.dtype for p in model.parameters()} == {torch.float16}
    vectors = fp16_on_cpu.embed_documents(texts)  # two groups: the second tokenized ahead
    assert vectors.dtype == np.float32 and vectors.shape == (24, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    fp32 = DeviceMiniLMEmbedder(device="cpu", precision="fp32").embed_documents(texts)
    assert float(np.einsum("ij,ij->i", vectors, fp32).min()) > 0.999
    # Order is the input's whatever the batching: each text alone gives its own row.
    assert np.allclose(fp16_on_cpu.embed_documents(texts[5:6])[0], vectors[5], atol=2e-3)
    assert fp16_on_cpu.provenance["precision"] == "fp16"
    assert fp16_on_cpu.own_identity.endswith(":seq128:mean-l2:fp16")


def test_converted_copy_is_checked_against_its_manifest(tmp_path: Path) -> None:
    copy = write_converted_copy(tmp_path / "fp16")
    _, official = verified_converted_copy(copy)
    assert official == verified_minilm_dir()[1]
    assert (copy / "model.safetensors").stat().st_size < 50_000_000  # travels within 64 MiB
    embedder = DeviceMiniLMEmbedder(device="cpu", model_dir=str(copy), converted_copy=True)
    assert embedder.own_identity == DeviceMiniLMEmbedder(device="cpu").own_identity
    with (copy / "model.safetensors").open("r+b") as fh:
        fh.seek(-8, 2)
        fh.write(b"\0" * 8)
    with pytest.raises(EmbedderError, match="does not match its manifest"):
        verified_converted_copy(copy)


def test_an_index_never_mixes_vector_spaces(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    onnx_minilm: OnnxMiniLMEmbedder,
    stdlib_chunks: list[Chunk],
) -> None:
    """A device build whose vectors are not measured interchangeable gets its own identity;
    the CPU default then re-embeds everything rather than adding to it, and refuses to
    search it. Measured interchangeable, the device build is the default's own index."""
    monkeypatch.setattr(device_build, "SPACE_SAMPLE_TEXTS", 12)
    monkeypatch.setitem(device_build.MEASURED_MRR_GAP, "fp16", None)
    first, more = stdlib_chunks[:16], stdlib_chunks[16:24]

    own = device_build.device_build_embedder(onnx_minilm, "cpu")
    assert own.identity == own.own_identity and own.provenance["space"].startswith("own: no")
    store = LanceDBStore(uri=str(tmp_path / "own"))
    sync_index(first, store, own)
    assert store.embedder_identity() == own.own_identity
    with pytest.raises(Exception, match="the index was built with minilm-torch"):
        IndexRetriever(store, onnx_minilm).search("wrap text", k=3)
    stats = sync_index(first + more, store, onnx_minilm)
    assert (stats.reset, stats.embedded) == (True, 24)  # nothing of the other space kept
    assert store.build_record()["embedded_by"] == {
        "cpu int8 " + onnx_minilm.provenance["runtime"]: 24
    }

    monkeypatch.setitem(device_build.MEASURED_MRR_GAP, "fp16", 0.001)
    shared = device_build.device_build_embedder(onnx_minilm, "cpu")
    assert shared.identity == onnx_minilm.identity
    assert shared.provenance["space"].startswith("shared with the default: mean cosine")
    store = LanceDBStore(uri=str(tmp_path / "shared"))
    sync_index(first, store, shared)
    stats = sync_index(first + more, store, onnx_minilm)  # the CPU default extends it
    assert (stats.reset, stats.embedded, stats.unchanged) == (False, 8, 16)
    record = store.build_record()
    assert record["last"]["precision"] == "int8"
    assert sorted(record["embedded_by"].values()) == [8, 16]
    hits = IndexRetriever(store, onnx_minilm).search("Wrap a single paragraph of text", k=3)
    assert hits and hits[0].title in {"wrap", "fill"}


class HashEmbedder:
    """Deterministic unit vectors from each text's hash: no model, exact rows to compare."""

    identity = "hash-test"
    dim = 8

    def __init__(self, overlap: bool) -> None:
        self.overlap_writes = overlap
        self.provenance = {"runtime": "test", "device": "cuda (stand-in)", "precision": "fp16"}

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], np.uint8) for t in texts]
        vectors = np.asarray(rows, np.float32).reshape(len(texts), -1)[:, : self.dim] + 1
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_writes_overlapped_with_embedding_keep_every_row_and_the_progress_count(
    tmp_path: Path, stdlib_chunks: list[Chunk]
) -> None:
    """A GPU embedder's batches are written while the next one embeds; the index ends the
    same as when they go one by one, and progress counts only what was written."""
    chunks = stdlib_chunks[:40]
    rows = {}
    for overlap in (True, False):
        seen: list[tuple[int, int]] = []
        store = LanceDBStore(uri=str(tmp_path / f"overlap-{overlap}"))
        stats = sync_index(
            chunks,
            store,
            HashEmbedder(overlap),
            batch_size=7,
            progress=lambda d, t, seen=seen: seen.append((d, t)),
        )
        assert stats.embedded == 40 and store.count() == 40
        assert [d for d, _ in seen] == [7, 14, 21, 28, 35, 40] and {t for _, t in seen} == {40}
        table = store._table().to_arrow()
        rows[overlap] = dict(zip(table["id"].to_pylist(), table["vector"].to_pylist(), strict=True))
        assert store.build_record()["embedded_by"] == {"cuda (stand-in) fp16 test": 40}
    assert rows[True] == rows[False]
