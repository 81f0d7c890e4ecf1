"""Embedders behind one interface: packaged MiniLM under ONNX Runtime (the default) or torch,
OpenAI.

Every embedder has an ``identity``: a string naming the model *and* the exact weights or
settings that produce its vectors. The index stores it; a different identity means every
chunk is re-embedded, the same identity means nothing is (see ``codegen.retrieval.index``).

One module per runtime: ``onnx_minilm`` (with ``onnx_export``, the export and int8
quantizer), ``torch_minilm``, ``openai_embedder``; ``minilm`` holds what the MiniLM runtimes
share (verified weights, tokenizer, token batches), ``base`` the interface and its
configuration, and ``build`` which embedder fills the index (on a GPU, MiniLM in fp16).
"""

from __future__ import annotations

from codegen.retrieval.embedders.base import (
    Embedder,
    EmbedderConfig,
    EmbedderError,
    available_cpus,
)
from codegen.retrieval.embedders.build import device_build_embedder, resolve_device
from codegen.retrieval.embedders.minilm import (
    MINILM_DIM,
    MINILM_SHA256_PREFIX,
    encode_capped,
    fast_tokenizer,
    minilm_model_dir,
    token_batches,
    verified_minilm_dir,
)

# The export and quantizer steps the benchmarks measure one by one.
from codegen.retrieval.embedders.onnx_export import (
    activation_quantizers,
    calibration_feeds,
    constant_activation_scales,
    export_fp32_graph,
    export_minilm_onnx,
)
from codegen.retrieval.embedders.onnx_minilm import (
    OnnxMiniLMEmbedder,
    export_in_background,
    onnx_session,
    onnx_session_options,
)
from codegen.retrieval.embedders.openai_embedder import OpenAIEmbedder
from codegen.retrieval.embedders.torch_minilm import (
    DeviceMiniLMEmbedder,
    MiniLMEmbedder,
    write_converted_copy,
)

__all__ = [
    "EMBEDDERS",
    "MINILM_DIM",
    "MINILM_SHA256_PREFIX",
    "DeviceMiniLMEmbedder",
    "Embedder",
    "EmbedderConfig",
    "EmbedderError",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "activation_quantizers",
    "available_cpus",
    "calibration_feeds",
    "constant_activation_scales",
    "device_build_embedder",
    "encode_capped",
    "export_fp32_graph",
    "export_in_background",
    "export_minilm_onnx",
    "fast_tokenizer",
    "make_build_embedder",
    "make_embedder",
    "minilm_model_dir",
    "onnx_session",
    "onnx_session_options",
    "resolve_device",
    "token_batches",
    "verified_minilm_dir",
    "write_converted_copy",
]


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
        # (CHANGELOG.md#retrieval), and the ONNX default is the fast path now.
        raise EmbedderError("the static embedder was removed; use minilm (the default)")
    if config.name == "openai":
        return OpenAIEmbedder(
            model=config.openai_model,
            dimensions=config.openai_dimensions,
            base_url=config.openai_base_url,
        )
    raise EmbedderError(f"unknown embedder {config.name!r}; choose {', '.join(EMBEDDERS)}")


def make_build_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder that fills the index: ``make_embedder(config)``, or, when ``config.device``
    resolves to a GPU and the embedder is the default, the same weights there in fp16
    (``build.device_build_embedder``). Searches always use ``make_embedder``."""
    embedder = make_embedder(config)
    if config.name != "minilm":
        if config.device == "cuda":
            raise EmbedderError(f'device = "cuda" builds with minilm only, not {config.name}')
        return embedder
    device = resolve_device(config.device)
    if device == "cpu" or not isinstance(embedder, OnnxMiniLMEmbedder):
        return embedder
    return device_build_embedder(embedder, device)
