"""MiniLM and the ceiling's dense layer run by OpenVINO instead of ONNX Runtime, for
benchmarks/retrieval/embedder_ceiling.py --openvino: another runtime's answer to where the default's
time goes. Benchmark-only; OpenVINO is not a dependency of the product.

OpenVINO runs int8 from QDQ graphs (QuantizeLinear -> DequantizeLinear in front of a float
MatMul), not from ONNX Runtime's contrib operators (QAttention, MatMulIntegerToFloat) that
the default's graph uses. So its graph is built here from the same unfused export
(``export_fp32_graph``) with the default's quantization: int8 weights per output channel
(symmetric), each weight MatMul's activation input uint8 with a constant scale calibrated on
the same stdlib code the same way (``activation_quantizers``). Attention's own products,
softmax, layer norms and GELU stay float; OpenVINO picks their precision (bf16 on CPUs that
have it: ``inference_precision`` in the report).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.embedders import (
    OnnxMiniLMEmbedder,
    activation_quantizers,
    calibration_feeds,
    export_fp32_graph,
)

INSTALL_HINT = "OpenVINO is not installed: .venv/bin/pip install -e '.[bench]'"


def require_openvino() -> None:
    """A one-line exit when OpenVINO is missing, before any timing starts."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        sys.exit(f"embedder_ceiling: {INSTALL_HINT}")


def qdq_int8_graph(
    fp32: Path,
    target: Path,
    batches: Iterable[tuple[dict[str, np.ndarray], np.ndarray | None]],
) -> None:
    """The fp32 graph at ``fp32`` with every MatMul by a constant weight in int8 QDQ form:
    weights per output channel (symmetric, as ONNX Runtime's quantizer makes the default's),
    the activation input uint8 with a constant scale from ``batches``."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    every = list(graph.node)
    matmuls = [n for n in every if n.op_type == "MatMul" and n.input[1] in weights]
    weighted = {id(n) for n in matmuls}
    inputs = sorted({n.input[0] for n in matmuls})
    quantizers = activation_quantizers(fp32, inputs, batches)

    nodes: list[Any] = []
    added: list[Any] = []
    quantized: set[str] = set()
    for node in every:
        if id(node) in weighted:
            source, weight = node.input[0], node.input[1]
            if source not in quantized:
                scale, zero_point = quantizers[source]
                added += [
                    numpy_helper.from_array(np.array(scale, np.float32), f"{source}_scale"),
                    numpy_helper.from_array(np.array(zero_point, np.uint8), f"{source}_zero"),
                ]
                args = [f"{source}_scale", f"{source}_zero"]
                nodes += [
                    helper.make_node("QuantizeLinear", [source, *args], [f"{source}_q"]),
                    helper.make_node("DequantizeLinear", [f"{source}_q", *args], [f"{source}_dq"]),
                ]
                quantized.add(source)
            w = numpy_helper.to_array(weights[weight]).astype(np.float32)  # [in, out]
            scales = np.abs(w).max(axis=0) / 127.0
            scales[scales == 0] = 1.0
            added += [
                numpy_helper.from_array(
                    np.clip(np.round(w / scales), -127, 127).astype(np.int8), f"{weight}_int8"
                ),
                numpy_helper.from_array(scales.astype(np.float32), f"{weight}_wscale"),
                numpy_helper.from_array(np.zeros(w.shape[1], np.int8), f"{weight}_wzero"),
            ]
            nodes.append(
                helper.make_node(
                    "DequantizeLinear",
                    [f"{weight}_int8", f"{weight}_wscale", f"{weight}_wzero"],
                    [f"{weight}_dq"],
                    axis=1,
                )
            )
            node.input[0], node.input[1] = f"{source}_dq", f"{weight}_dq"
        nodes.append(node)
    replaced = {n.input[1].removesuffix("_dq") for n in matmuls}
    kept = [init for init in graph.initializer if init.name not in replaced]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))


class OpenVinoRun:
    """An OpenVINO compiled graph behind ONNX Runtime's ``session.run``, so that the
    default's own tokenizing and batching feed it (``embed_documents(session=...)``)."""

    def __init__(self, path: Path, threads: int) -> None:
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
        self.compiled = core.compile_model(core.read_model(str(path)), "CPU", config)
        self.request = self.compiled.create_infer_request()

    @property
    def inference_precision(self) -> str:
        return self.compiled.get_property("INFERENCE_PRECISION_HINT").to_string()

    def run(self, names: Sequence[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        del names  # one output
        return [np.array(self.request.infer(feeds)[self.compiled.output(0)])]


@dataclass
class OpenVinoMiniLM:
    """The default's tokenizer, token cap and batching; OpenVINO running the QDQ graph."""

    default: OnnxMiniLMEmbedder
    runner: OpenVinoRun

    @classmethod
    def build(cls, default: OnnxMiniLMEmbedder, workdir: Path, threads: int) -> OpenVinoMiniLM:
        model_dir = Path(default._path)
        fp32, qdq = workdir / "minilm-fp32.onnx", workdir / "minilm-qdq-int8.onnx"
        export_fp32_graph(model_dir, fp32)
        qdq_int8_graph(fp32, qdq, calibration_feeds(model_dir))
        return cls(default, OpenVinoRun(qdq, threads))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.default.embed_documents(texts, session=self.runner)
