"""MiniLM on torch: sentence-transformers' reference (``embedder = "minilm-torch"``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from codegen.retrieval.embedders.minilm import MINILM_DIM, MODEL_LOCK, verified_minilm_dir


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
