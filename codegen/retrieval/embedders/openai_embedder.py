"""OpenAI (or compatible) embeddings over HTTP."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.retrieval.embedders.base import EmbedderError, normalise


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
    def provenance(self) -> dict[str, str]:
        return {"runtime": "OpenAI-compatible API", "device": "remote", "precision": "api"}

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
        vectors = normalise(np.asarray(rows, dtype=np.float32))
        self._dim = vectors.shape[1]
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
