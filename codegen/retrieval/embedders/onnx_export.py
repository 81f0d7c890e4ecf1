"""MiniLM as an ONNX graph: the export from the packaged weights, ONNX Runtime's BERT fusions,
and int8 quantization with activation scales calibrated on real code. Run once per machine
user and cached by ``onnx_minilm.OnnxMiniLMEmbedder``."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.embedders.base import EmbedderError, available_cpus
from codegen.retrieval.embedders.minilm import fast_tokenizer, token_batches

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


def package_version(name: str) -> str:
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


def export_minilm_onnx(
    model_dir: Path, target: Path, quantize: bool, fusion: Mapping[str, bool] | None = None
) -> None:
    """``export_fp32_graph``'s graph with ONNX Runtime's BERT fusions, optionally int8:
    weights per channel, activations with static scales calibrated on real code.
    ``fusion``: see ``fuse_transformer_ops``. Written to a temp name, then renamed: a reader
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
            fuse_transformer_ops(fp32, fused, model_dir, fusion)
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
    encodings = fast_tokenizer(str(model_dir), 256).encode_batch(list(calibration_texts()))
    for _, ids, mask in token_batches(
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


def fuse_transformer_ops(
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
