"""Embedders: the packaged MiniLM (hash-checked) under torch and ONNX Runtime, OpenAI over a
loopback /v1/embeddings."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from codegen.composition import embedder_config
from codegen.retrieval import embedders
from codegen.retrieval.embedders import (
    EmbedderConfig,
    EmbedderError,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    make_embedder,
    minilm_model_dir,
    onnx_export,
    verified_minilm_dir,
)
from codegen.retrieval.embedders import onnx_minilm as onnx_default_module
from codegen.retrieval.embedders.minilm import fast_tokenizer
from codegen.settings import get_settings


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
    # Real chunks of very different lengths (a few tokens to past the token cap), so the
    # length buckets, the per-batch padding and the restoring of input order are exercised.
    texts = [c.text for c in stdlib_chunks[:40]] + ["x", "def f(): pass", "a " * 2000]
    # int8 against fp32 at the same cap: the default reads fewer tokens than torch's 256.
    same_cap = dataclasses.replace(minilm, max_seq_length=onnx_minilm.max_seq_length)
    onnx, torch = onnx_minilm.embed_documents(texts), same_cap.embed_documents(texts)
    assert onnx.shape == (len(texts), 384) and onnx.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-4)
    cosine = np.sum(onnx * torch, axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98, cosine  # int8 moves vectors a little
    # Static activation scales (recipe 3): a text alone (no padding) embeds as it does among
    # others (padded in a batch), up to float rounding; dynamic scales gave only > 0.99.
    alone = np.stack([onnx_minilm.embed_query(t) for t in texts[::7]])
    assert np.sum(alone * onnx[::7], axis=1).min() > 0.99999
    assert np.allclose(onnx_minilm.embed_documents(texts[::-1]), onnx[::-1], atol=1e-5)
    assert onnx_minilm.embed_documents([]).shape == (0, 384)
    # Past the cap a text's tail is not read: its vector is that of its first cap tokens.
    # The head is 194 tokens, between the default's cap and torch's.
    head = "def parse(line):\n    return line.split(',')\n" * 12
    cut = onnx_minilm.embed_documents([head, head + "\nimport socket  # never read\n" * 50])
    assert float(cut[0] @ cut[1]) > 0.99999
    q = onnx_minilm.embed_query("read all lines of a text file")
    d = onnx_minilm.embed_documents(["def read_lines(p): return open(p).readlines()", "x * 2"])
    assert float(d[0] @ q) > float(d[1] @ q) + 0.1


def test_onnx_identity_and_cache_key_name_weights_and_recipe(
    onnx_model_cache: Path, onnx_minilm: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder
) -> None:
    assert onnx_minilm.identity.startswith("minilm-onnx:all-MiniLM-L6-v2@53aa5117")
    assert f":int8-cal{onnx_export.calibration_digest()}:r3" in onnx_minilm.identity
    assert onnx_minilm.identity != minilm.identity  # switching embedders re-embeds
    assert OnnxMiniLMEmbedder(cache_dir="/elsewhere").identity == onnx_minilm.identity
    assert OnnxMiniLMEmbedder(cache_dir="/x", quantize=False).identity != onnx_minilm.identity
    (export,) = (onnx_model_cache / "models").iterdir()
    assert export.name.startswith("minilm-onnx-53aa5117") and "-r3-int8-cal" in export.name
    assert "-torch2.13.0" in export.name
    model = export / "model.onnx"
    stamp = model.stat().st_mtime_ns
    again = OnnxMiniLMEmbedder(cache_dir=str(onnx_model_cache))
    again.embed_query("cached: no second export")
    assert model.stat().st_mtime_ns == stamp
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["identity"] == onnx_minilm.identity and len(manifest["sha256"]) == 64
    names = {p.name for p in export.iterdir()}
    assert names == {"model.onnx", "manifest.json", ".lock"}  # no temp files left


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
    # Static scales: no activation range is computed at run time; each layer's other three
    # products are one int8 kernel each.
    assert "DynamicQuantizeLinear" not in ops and ops.count("QuantizeLinear") == 24
    assert ops.count("MatMulIntegerToFloat") == 18 and "MatMulInteger" not in ops


def test_an_unknown_fusion_flag_is_an_error_not_the_default_graph(tmp_path: Path) -> None:
    # benchmarks.retrieval.embedder_variants names its variants by these flags: a misspelt one
    # would otherwise time the default against itself.
    with pytest.raises(EmbedderError, match="use_multihead_attention"):
        onnx_export.fuse_transformer_ops(
            tmp_path / "in.onnx", tmp_path / "out.onnx", tmp_path, {"use_multihead_attention": True}
        )


def test_calibration_is_real_stdlib_code_of_every_length() -> None:
    texts = onnx_export.calibration_texts()
    assert len(texts) == 256 and len(set(texts)) > 250  # the stdlib repeats a few methods
    assert all(t.lstrip().startswith(("def ", "async def ", "class ", "@")) for t in texts)
    lengths = sorted(len(t) for t in texts)
    assert lengths[0] < 200 and lengths[-1] > 4000  # short helpers to past the token cap
    assert len(onnx_export.calibration_digest()) == 12


def test_activation_ranges_ignore_padding_and_average_the_batches(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    # x -> Mul(x, 2) = doubled -> Identity: the probe reads the inner tensor `doubled`.
    floats = helper.make_tensor_value_info
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "two"], ["doubled"]),
            helper.make_node("Identity", ["doubled"], ["y"]),
        ],
        "probe",
        [floats("x", TensorProto.FLOAT, ["b", "s", 2])],
        [floats("y", TensorProto.FLOAT, ["b", "s", 2])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )
    path = tmp_path / "probe.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    first = np.array([[[1.0, -1.0], [500.0, -500.0]]], dtype=np.float32)  # row 2 is padding
    second = np.array([[[3.0, 0.5]], [[2.0, 1.0]]], dtype=np.float32)  # all real, all >= 0
    batches = [
        ({"x": first}, np.array([[True, False]])),
        ({"x": second}, np.array([[True], [True]])),
    ]
    ((scale, zero_point),) = onnx_export.activation_quantizers(path, ["doubled"], batches).values()
    # Per batch over real tokens (doubled): [-2, 2] and [1, 6]; mean [-0.5, 4]; 0 is inside.
    assert scale == pytest.approx(4.5 / 255)
    assert zero_point == round(0.5 / (4.5 / 255))


class _CountingExport:
    """Stands in for the ONNX export (tens of seconds): copies the session's real export and
    counts the calls, so the cache's behaviour is tested, not the exporter again."""

    def __init__(self, source: Path, delay: float = 0.0) -> None:
        self.source, self.delay, self.calls = source, delay, 0

    def __call__(self, model_dir: Path, target: Path, quantize: bool) -> None:
        self.calls += 1
        time.sleep(self.delay)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(self.source, tmp)
        tmp.replace(target)
        with (target.parent.parent.parent / "export-calls").open("a") as fh:
            fh.write(f"{os.getpid()}\n")


@pytest.fixture
def counting_export(onnx_model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> _CountingExport:
    (model,) = (onnx_model_cache / "models").glob("*/model.onnx")
    export = _CountingExport(model)
    monkeypatch.setattr(onnx_default_module, "export_minilm_onnx", export)
    return export


def test_export_is_cached_per_user_not_per_codegen_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_export: _CountingExport
) -> None:
    """Issue 22: a fresh CODEGEN_HOME must not export again; the export lives in the user's
    cache ($XDG_CACHE_HOME/multiagent-codegen), shared by every home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CODEGEN_RETRIEVAL__MODEL_CACHE_DIR", raising=False)
    vectors = []
    for home in ("home-a", "home-b"):
        monkeypatch.setenv("CODEGEN_HOME", str(tmp_path / home))
        monkeypatch.setenv("CODEGEN_CONFIG", str(tmp_path / home / "codegen.toml"))
        get_settings.cache_clear()
        embedder = make_embedder(embedder_config(get_settings()))
        assert isinstance(embedder, OnnxMiniLMEmbedder)
        assert embedder.export_dir.parent == tmp_path / "xdg" / "multiagent-codegen" / "models"
        vectors.append(embedder.embed_query("def f(x): return x + 1"))
    get_settings.cache_clear()
    assert counting_export.calls == 1  # the second home reused the first one's export
    assert np.allclose(vectors[0], vectors[1])
    assert not (tmp_path / "home-a" / "cache" / "models").exists()


def test_partial_or_damaged_export_is_rebuilt(
    tmp_path: Path, counting_export: _CountingExport
) -> None:
    cache = tmp_path / "cache"
    first = OnnxMiniLMEmbedder(cache_dir=str(cache))
    expected = first.embed_query("anything")
    model = first.export_dir / "model.onnx"
    manifest = first.export_dir / "manifest.json"
    assert counting_export.calls == 1

    model.write_bytes(model.read_bytes()[:4096])  # a truncated copy, e.g. a full disk
    assert np.allclose(OnnxMiniLMEmbedder(cache_dir=str(cache)).embed_query("anything"), expected)
    assert counting_export.calls == 2

    manifest.unlink()  # an exporter killed between the model file and its manifest...
    stale = [model.parent / ".model.onnx.999999.fp32.onnx", model.parent / ".manifest.json.1.tmp"]
    for leftover in stale:  # ...or mid-export, its temp files left behind
        leftover.write_bytes(b"partial")
    assert np.allclose(OnnxMiniLMEmbedder(cache_dir=str(cache)).embed_query("anything"), expected)
    assert counting_export.calls == 3
    assert not any(p.exists() for p in stale)  # the next export clears them

    manifest.write_text("{not json")
    OnnxMiniLMEmbedder(cache_dir=str(cache)).embed_query("anything")
    assert counting_export.calls == 4
    OnnxMiniLMEmbedder(cache_dir=str(cache)).embed_query("anything")
    assert counting_export.calls == 4  # complete again: no fifth export


def _ensure_export_in_child(cache: str) -> None:
    OnnxMiniLMEmbedder(cache_dir=cache).ensure_export()


def test_two_processes_exporting_at_once_export_once(
    tmp_path: Path, counting_export: _CountingExport
) -> None:
    import multiprocessing

    counting_export.delay = 1.0  # both processes arrive while the first is still exporting
    cache = tmp_path / "cache"
    context = multiprocessing.get_context("fork")  # the children inherit the counting export
    children = [context.Process(target=_ensure_export_in_child, args=(str(cache),)) for _ in "ab"]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    assert [child.exitcode for child in children] == [0, 0]
    assert len((cache / "export-calls").read_text().split()) == 1
    (model,) = (cache / "models").glob("*/model.onnx")
    assert model.read_bytes() == counting_export.source.read_bytes()


class _ShapeRecordingSession:
    """Stands in for the ONNX session: records each batch, answers each row with its own
    token count, so the test can see the batching and the restored order."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int, int]] = []  # (rows, padded width, real tokens)

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        mask = feeds["attention_mask"]
        self.batches.append((mask.shape[0], mask.shape[1], int(mask.sum())))
        out = np.zeros((mask.shape[0], 384), dtype=np.float32)
        out[:, 0] = mask.sum(axis=1)
        return [out]


def test_onnx_batches_bound_padding_and_keep_input_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = OnnxMiniLMEmbedder(cache_dir=str(tmp_path))
    session = _ShapeRecordingSession()
    monkeypatch.setattr(embedder, "_session", lambda: session)
    rng = np.random.default_rng(0)
    # Mostly short texts and a few long ones: the shape that padded short functions to the
    # longest of 128.
    texts = [" ".join(["word"] * int(n)) for n in rng.choice([3, 8, 20, 60, 250], 300)]
    vectors = embedder.embed_documents(texts)
    tokenizer = fast_tokenizer(str(verified_minilm_dir()[0]), embedder.max_seq_length)
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    assert vectors[:, 0].tolist() == lengths  # every row back in its text's place
    assert sum(rows for rows, _, _ in session.batches) == len(texts)
    for rows, width, real in session.batches:
        assert rows * width <= embedder.batch_tokens and rows <= embedder.max_batch
        if rows > embedder.min_batch:
            assert rows * width <= (1 + embedder.padding_slack) * real
    padded = sum(rows * width for rows, width, _ in session.batches)
    assert padded <= 1.1 * sum(lengths)


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


def test_background_export_starts_only_when_an_export_is_missing(
    tmp_path: Path, onnx_model_cache: Path
) -> None:
    """`codegen corpus build` and `make run` start the export early only when there is one to
    do: never for torch or OpenAI, never when the user's cache holds it."""
    for name in ("minilm-torch", "openai"):
        config = EmbedderConfig(name=name, cache_dir=str(tmp_path / "cold"))
        assert embedders.export_in_background(config) is None
    warm = EmbedderConfig(name="minilm", cache_dir=str(onnx_model_cache))
    assert embedders.export_in_background(warm) is None
    assert OnnxMiniLMEmbedder(cache_dir=str(onnx_model_cache)).exported()
    assert not OnnxMiniLMEmbedder(cache_dir=str(tmp_path / "cold")).exported()
    assert not (tmp_path / "cold").exists()  # asking exports nothing
