"""The synthetic 2M-row tables of the index benchmarks, built from real embeddings: one
definition for ``index_scale.py`` and ``index_build_time.py``. Numpy and pyarrow only, no
``codegen`` import: ``index_build_time.py`` also runs it against an older checkout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

DUPLICATE_NOISE = 0.001  # per-dimension Gaussian noise of each copy


def synthesise(base: np.ndarray, n: int, seed: int, block: int) -> Iterator[np.ndarray]:
    """Vector r is normalise(e_i + lam * e_j + sigma * g), i, j uniform over the real
    embeddings, lam ~ U(0, 0.3), g ~ N(0, I), sigma = 0.01."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, block):
        m = min(block, n - start)
        i = rng.integers(0, len(base), m)
        j = rng.integers(0, len(base), m)
        lam = rng.uniform(0.0, 0.3, (m, 1)).astype(np.float32)
        v = base[i] + lam * base[j]
        v += rng.standard_normal(v.shape, dtype=np.float32) * 0.01
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        yield v.astype(np.float32)


def duplicated(base: np.ndarray, n: int, seed: int, block: int) -> Iterator[np.ndarray]:
    """Row r is base[r % len(base)] plus N(0, DUPLICATE_NOISE^2 I), normalised: each real
    embedding copied n / len(base) times, near-duplicates as an undeduplicated corpus has."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, block):
        m = min(block, n - start)
        v = base[np.arange(start, start + m) % len(base)]
        v = v + rng.standard_normal(v.shape, dtype=np.float32) * DUPLICATE_NOISE
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        yield v.astype(np.float32)


def vectors(source: str, base: np.ndarray, n: int, block: int) -> Iterator[np.ndarray]:
    generate = duplicated if source == "duplicates" else synthesise
    return generate(base, n, seed=0, block=block)


def rows(block: np.ndarray, offset: int, schema: Any) -> Any:
    """The store's rows for one block of vectors: two sources (a filter keeps half the rows)
    and a few words for BM25, so that filtered and hybrid queries have something to do."""
    import pyarrow as pa

    m, dim = block.shape
    ids = [f"v{offset + r:08d}" for r in range(m)]
    empty = [""] * m
    keywords = [f"alpha{(offset + r) % 997} beta{(offset + r) % 1009}" for r in range(m)]
    sources = ["synthetic-even" if (offset + r) % 2 == 0 else "synthetic-odd" for r in range(m)]
    return pa.record_batch(
        {
            "id": ids,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), dim),
            "text": empty,
            "keywords": keywords,
            "uri": [f"synthetic://{i}" for i in ids],
            "title": empty,
            "source": sources,
            "language": ["python"] * m,
            "kind": ["function"] * m,
            "document_id": empty,
            "start_line": pa.array(np.ones(m, dtype=np.int32)),
            "end_line": pa.array(np.ones(m, dtype=np.int32)),
            "metadata": ["{}"] * m,
        },
        schema=schema,
    )
