"""Embedders: the packaged MiniLM (hash-checked) under torch and ONNX Runtime, OpenAI over a
loopback /v1/embeddings."""

from __future__ import annotations

import base64
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from codegen.retrieval.embedders import (
    EmbedderConfig,
    EmbedderError,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    make_embedder,
    minilm_model_dir,
    verified_minilm_dir,
)


def test_minilm_weights_are_the_official_file() -> None:
    path, digest = verified_minilm_dir()
    assert digest.startswith("53aa5117") and digest.endswith("d9db")
    assert path == minilm_model_dir()


def test_tampered_or_missing_weights_are_refused(tmp_path: Path) -> None:
    for name in ["config.json", "tokenizer.json", "modules.json"]:
        (tmp_path / name).write_bytes((minilm_model_dir() / name).read_bytes())
    with pytest.raises(EmbedderError, match="not found"):
        MiniLMEmbedder(model_dir=str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 1024)
    with pytest.raises(EmbedderError, match="expected 53aa5117"):
        MiniLMEmbedder(model_dir=str(tmp_path))


def test_minilm_vectors_are_normalised_ordered_and_semantic(minilm: MiniLMEmbedder) -> None:
    texts = [
        "def read_lines(path): return open(path).read().splitlines()",
        "def sqrt(x): return x ** 0.5",
    ]
    docs = minilm.embed_documents(texts)
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    q = minilm.embed_query("read all lines of a text file")
    assert float(docs[0] @ q) > float(docs[1] @ q) + 0.1
    assert np.allclose(minilm.embed_documents(texts[::-1])[0], docs[1], atol=1e-5)
    assert minilm.embed_documents([]).shape == (0, 384)
    assert minilm.identity.startswith("minilm:all-MiniLM-L6-v2@53aa5117")


def test_onnx_minilm_matches_torch_in_any_batch_order(
    onnx_minilm: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder, stdlib_chunks: list
) -> None:
    # Real chunks of very different lengths (a few tokens to past the 256-token cap), so the
    # length buckets, the per-batch padding and the restoring of input order are exercised.
    texts = [c.text for c in stdlib_chunks[:40]] + ["x", "def f(): pass", "a " * 2000]
    onnx, torch = onnx_minilm.embed_documents(texts), minilm.embed_documents(texts)
    assert onnx.shape == (len(texts), 384) and onnx.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-4)
    cosine = np.sum(onnx * torch, axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98, cosine  # int8 moves vectors a little
    # One text alone (no padding) embeds as it does among others (padded in a bucket), up
    # to int8's per-batch activation scales: the same text, not just a similar vector.
    alone = np.stack([onnx_minilm.embed_query(t) for t in texts[::7]])
    assert np.sum(alone * onnx[::7], axis=1).min() > 0.99
    assert np.allclose(onnx_minilm.embed_documents(texts[::-1]), onnx[::-1], atol=1e-5)
    assert onnx_minilm.embed_documents([]).shape == (0, 384)
    q = onnx_minilm.embed_query("read all lines of a text file")
    d = onnx_minilm.embed_documents(["def read_lines(p): return open(p).readlines()", "x * 2"])
    assert float(d[0] @ q) > float(d[1] @ q) + 0.1


def test_onnx_identity_and_cache_key_name_weights_and_recipe(
    onnx_model_cache: Path, onnx_minilm: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder
) -> None:
    assert onnx_minilm.identity.startswith("minilm-onnx:all-MiniLM-L6-v2@53aa5117")
    assert onnx_minilm.identity != minilm.identity  # switching embedders re-embeds
    assert OnnxMiniLMEmbedder(cache_dir="/elsewhere").identity == onnx_minilm.identity
    assert OnnxMiniLMEmbedder(cache_dir="/x", quantize=False).identity != onnx_minilm.identity
    (export,) = (onnx_model_cache / "models").iterdir()
    assert export.name.startswith("minilm-onnx-53aa5117") and "-torch2.13.0" in export.name
    model = export / "model.onnx"
    stamp = model.stat().st_mtime_ns
    again = OnnxMiniLMEmbedder(cache_dir=str(onnx_model_cache))
    again.embed_query("cached: no second export")
    assert model.stat().st_mtime_ns == stamp
    assert not [p.name for p in export.iterdir() if p.name != "model.onnx"]  # no temp files


def test_onnx_export_fuses_attention_and_keeps_embeddings_fp32(
    onnx_model_cache: Path, onnx_minilm: OnnxMiniLMEmbedder
) -> None:
    """The speed of the default rests on ONNX Runtime fusing each layer's attention into one
    int8 kernel; an exporter change that silently breaks the fusion fails here, not in a
    benchmark nobody runs."""
    import onnx

    onnx_minilm.embed_query("export")
    (export,) = (onnx_model_cache / "models").iterdir()
    ops = [node.op_type for node in onnx.load(str(export / "model.onnx")).graph.node]
    assert ops.count("QAttention") == 6  # one per layer
    assert "Softmax" not in ops and "IsNaN" not in ops  # no unfused attention left
    assert ops.count("EmbedLayerNormalization") == 1  # the embedding table stays fp32


def test_damaged_onnx_cache_is_a_clear_error(tmp_path: Path, onnx_model_cache: Path) -> None:
    shutil.copytree(onnx_model_cache / "models", tmp_path / "models")
    (model,) = (tmp_path / "models").glob("*/model.onnx")
    model.write_bytes(model.read_bytes()[:4096])  # a truncated copy, e.g. a full disk
    with pytest.raises(EmbedderError, match=r"cannot load the ONNX model .* delete"):
        OnnxMiniLMEmbedder(cache_dir=str(tmp_path)).embed_query("anything")


def test_default_embedder_is_onnx_and_torch_stays_selectable(tmp_path: Path) -> None:
    assert isinstance(make_embedder(EmbedderConfig(cache_dir=str(tmp_path))), OnnxMiniLMEmbedder)
    assert isinstance(make_embedder(EmbedderConfig(name="minilm-torch")), MiniLMEmbedder)
    with pytest.raises(EmbedderError, match="needs a cache directory"):
        make_embedder(EmbedderConfig(name="minilm"))


def test_unknown_or_removed_embedder_is_a_clear_error() -> None:
    with pytest.raises(EmbedderError, match="unknown embedder 'bert'"):
        make_embedder(EmbedderConfig(name="bert"))
    with pytest.raises(EmbedderError, match="static embedder was removed"):
        make_embedder(EmbedderConfig(name="static", cache_dir="/tmp"))


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """Speaks OpenAI's POST /v1/embeddings: float or base64 vectors, data in any order."""

    requests: ClassVar[list[dict]] = []
    fail_with: int | None = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.path != "/v1/embeddings" or self.fail_with:
            status = self.fail_with or 404
            payload = {"error": {"message": "boom", "type": "server_error"}}
            return self._send(status, payload)
        dims = body.get("dimensions") or 16
        data = []
        for i, text in enumerate(body["input"]):
            vec = np.random.default_rng(sum(map(ord, text))).standard_normal(dims)
            vec = vec.astype(np.float32)
            if body.get("encoding_format") == "base64":
                emb: object = base64.b64encode(vec.tobytes()).decode()
            else:
                emb = vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        data.reverse()  # the client must order by index, not by arrival
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    def _send(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    _EmbeddingsHandler.requests = []
    _EmbeddingsHandler.fail_with = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_openai_embedder_over_the_wire(embeddings_server: str) -> None:
    emb = OpenAIEmbedder(
        model="text-embedding-3-small", dimensions=16, base_url=embeddings_server, batch_size=2
    )
    texts = ["alpha", "beta", "", "delta", "epsilon"]
    vectors = emb.embed_documents(texts)
    assert vectors.shape == (5, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order follows the input despite the server answering in reverse.
    again = emb.embed_documents(["delta"])[0]
    assert np.allclose(vectors[3], again, atol=1e-6)
    sent = _EmbeddingsHandler.requests
    assert [len(r["body"]["input"]) for r in sent[:3]] == [2, 2, 1]  # batched
    assert sent[1]["body"]["input"][0] == " "  # empty text is sent as a space, not rejected
    assert all(r["body"]["dimensions"] == 16 for r in sent)
    assert sent[0]["auth"] == "Bearer sk-test-loopback"
    assert emb.identity == "openai:text-embedding-3-small:dims16"


def test_openai_server_error_is_one_clear_error(embeddings_server: str) -> None:
    _EmbeddingsHandler.fail_with = 500
    emb = OpenAIEmbedder(base_url=embeddings_server, max_retries=0)
    with pytest.raises(EmbedderError, match="embedding request failed"):
        emb.embed_documents(["x"])
