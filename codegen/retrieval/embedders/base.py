"""What every embedder shares: the interface, its configuration, its error, and small vector
and file helpers."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class EmbedderConfig:
    """Plain values the Dagster/CLI layer hands over to choose an embedder."""

    name: str = "minilm"  # minilm (ONNX Runtime) | minilm-torch | openai
    device: str = "cpu"  # where the index is built: auto | cpu | cuda (build.resolve_device)
    cache_dir: str = ""
    openai_model: str = "text-embedding-3-small"
    openai_dimensions: int | None = None
    openai_base_url: str | None = None


class EmbedderError(RuntimeError):
    """The embedder cannot be used (missing or tampered weights, unreachable endpoint)."""


class Embedder(Protocol):
    @property
    def identity(self) -> str:
        """Model name plus weights/settings version; part of the index lineage."""
        ...

    @property
    def dim(self) -> int: ...

    @property
    def provenance(self) -> dict[str, str]:
        """How its vectors are made (runtime, device, precision): a record for people, not
        part of the identity."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 matrix, one row per text, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
