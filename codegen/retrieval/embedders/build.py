"""Which embedder builds the index: the configured one, or on a GPU the same MiniLM weights
in fp16 (``[retrieval] device``), whose vectors share the default's space only when measured
interchangeable with it.

The index keeps two things apart. Its *space* (the embedder identity it stores) decides
which query embedder may search it and which incremental run may add to it: a GPU-built index
in the default's space is searched and extended by the CPU default as if it had built it.
Its *provenance* (runtime, device, precision of the vectors it holds) is a record for people
(``codegen info``, the index asset's metadata).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from codegen.retrieval.embedders.base import Embedder, EmbedderError
from codegen.retrieval.embedders.onnx_export import CALIBRATION_MODULES
from codegen.retrieval.embedders.onnx_minilm import OnnxMiniLMEmbedder
from codegen.retrieval.embedders.torch_minilm import DeviceMiniLMEmbedder

DEVICES = ("auto", "cpu", "cuda")

# Both must hold for GPU vectors to be stored as the default's: mean cosine to the default's
# vectors on SPACE_SAMPLE_TEXTS stdlib functions, checked on the machine before each build
# (cached), and the hybrid MRR@10 difference on the retrieval benchmark, measured once per
# precision and recorded here.
MIN_MEAN_COSINE = 0.99
MAX_MRR_GAP = 0.005
SPACE_SAMPLE_TEXTS = 256
# Hybrid MRR@10 of an index built by the device path and searched by the default, minus the
# default's own, on the retrieval benchmark's stdlib set (2,240 functions, 727 queries):
# 0.5211 against 0.5234, the fp16 path run on the CPU (`benchmarks/retrieval_quality.py
# --max-queries 1000 --max-files 120 --embedders "minilm,minilm-device-fp16>minilm"`,
# benchmarks/results/retrieval_quality_device_fp16.json). A precision not listed is not
# measured, and its vectors get their own identity.
MEASURED_MRR_GAP: dict[str, float | None] = {"fp16": -0.0023}


def cuda_available() -> bool:
    """Whether torch sees a CUDA device. Without an NVIDIA driver this is answered without
    importing torch (seconds), so a CPU-only build pays nothing for ``device = "auto"``."""
    if not Path("/proc/driver/nvidia").exists() and not list(Path("/dev").glob("nvidia[0-9]*")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(requested: str) -> str:
    """``cpu`` or ``cuda`` for a ``[retrieval] device`` setting."""
    if requested not in DEVICES:
        raise EmbedderError(f"unknown device {requested!r}; choose {', '.join(DEVICES)}")
    if requested == "cpu":
        return "cpu"
    available = cuda_available()
    if requested == "cuda" and not available:
        raise EmbedderError('[retrieval] device = "cuda" but torch sees no CUDA device here')
    return "cuda" if available else "cpu"


@dataclass(frozen=True)
class SpaceCheck:
    """How close the device path's vectors are to the default's, and the verdict."""

    shared: bool
    mean_cosine: float
    min_cosine: float
    texts: int
    mrr_gap: float | None
    reason: str


def space_sample_texts() -> list[str]:
    """A seeded sample of the standard library's functions outside CALIBRATION_MODULES (the
    int8 scales were fitted there, which would flatter the default)."""
    import ast

    root = Path(sysconfig.get_paths()["stdlib"])
    calibration = {root / name for name in CALIBRATION_MODULES}
    files = sorted(p for p in root.glob("*.py") if p not in calibration)
    texts: list[str] = []
    for path in random.Random(0).sample(files, min(60, len(files))):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        lines = source.splitlines()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                texts.append("\n".join(lines[node.lineno - 1 : node.end_lineno]))
    if not texts:
        raise EmbedderError(f"no standard library code under {root} to compare vectors on")
    picked = random.Random(0).sample(range(len(texts)), min(SPACE_SAMPLE_TEXTS, len(texts)))
    return [texts[i] for i in sorted(picked)]


def check_shared_space(
    device_embedder: DeviceMiniLMEmbedder, default: Embedder, texts: list[str]
) -> SpaceCheck:
    ours, theirs = device_embedder.embed_documents(texts), default.embed_documents(texts)
    cosines = np.einsum("ij,ij->i", ours, theirs)
    mean, low = round(float(cosines.mean()), 5), round(float(cosines.min()), 5)
    gap = MEASURED_MRR_GAP.get(device_embedder.precision)
    if mean < MIN_MEAN_COSINE:
        shared, reason = False, f"mean cosine {mean} to the default is below {MIN_MEAN_COSINE}"
    elif gap is None:
        shared, reason = False, f"no retrieval measurement for {device_embedder.precision}"
    elif abs(gap) > MAX_MRR_GAP:
        shared, reason = False, f"hybrid MRR@10 differs by {gap} (more than {MAX_MRR_GAP})"
    else:
        shared = True
        reason = f"mean cosine {mean} on {len(texts)} texts, hybrid MRR@10 gap {gap}"
    return SpaceCheck(shared, mean, low, len(texts), gap, reason)


def cached_space_check(
    device_embedder: DeviceMiniLMEmbedder, default: OnnxMiniLMEmbedder
) -> SpaceCheck:
    """``check_shared_space`` on ``space_sample_texts()``, cached in the model cache per
    (device path, default, device kind, runtime versions, recorded gaps)."""
    from importlib.metadata import version

    texts = space_sample_texts()
    key = json.dumps(
        [
            device_embedder.own_identity,
            default.identity,
            device_embedder.provenance,
            version("transformers"),
            MIN_MEAN_COSINE,
            MAX_MRR_GAP,
            MEASURED_MRR_GAP,
            hashlib.sha256("\0".join(texts).encode()).hexdigest(),
        ],
        sort_keys=True,
    )
    path = (
        Path(default.cache_dir)
        / "space-checks"
        / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    )
    try:
        return SpaceCheck(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        pass
    check = check_shared_space(device_embedder, default, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(check)) + "\n")
    tmp.replace(path)
    return check


def device_build_embedder(default: OnnxMiniLMEmbedder, device: str) -> DeviceMiniLMEmbedder:
    """The default's weights on ``device`` in fp16, stored in the default's space when the
    check allows it and under their own identity otherwise (the provenance says which)."""
    embedder = DeviceMiniLMEmbedder(
        device=device, precision="fp16", max_seq_length=default.max_seq_length
    )
    check = cached_space_check(embedder, default)
    embedder.space = default.identity if check.shared else ""
    embedder.space_note = ("shared with the default: " if check.shared else "own: ") + check.reason
    return embedder
