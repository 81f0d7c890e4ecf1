"""Which inverted lists of a faiss IVF index (``retrieval.ann``) a query probes, best first
(``ProbeOrder``: by each list's best sub-centroid), the lists' shapes it needs
(``list_shape``: radius and sub-centroids, read from the float16 codes), and the search over
exactly those lists (``search_preassigned``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RADIUS_WEIGHT = 0.25  # probe order: centroid similarity + this x the list's radius
SUBS = 8  # sub-centroids per list (a few k-means steps over its members) for the probe order


class ProbeOrder:
    """Which lists a query probes, best first: by each list's best sub-centroid, similarity +
    ``RADIUS_WEIGHT`` x the sub-centroid's radius (x.q <= s.q + |x - s| bounds a member's
    similarity). A list's centroid averages several clumps of vectors, so a query near one
    clump can rank its list far down by centroid; its sub-centroids see the clump. 200k
    duplicates (1,788 lists), 1,200 real queries, probes each needs for its true ten: by
    centroid + radius p99 139, worst 578; by sub-centroid p99 23, worst 81.

    The scores come from faiss's ``fvec_inner_products_ny`` (one thread, 2.7 ms for 32,768
    sub-centroids here), not numpy: a numpy matvec's BLAS threads and faiss's OpenMP threads
    spin against each other on 2 cores (7 -> 16 ms a query measured), and einsum is 4x slower."""

    def __init__(self, index: Any, subs: np.ndarray) -> None:
        self.nlist, self.d = int(index.nlist), int(index.d)
        self.centroids = index.quantizer.reconstruct_n(0, self.nlist)
        self.vectors = np.ascontiguousarray(subs[:, :, :-1].reshape(-1, self.d), dtype=np.float32)
        self.bias = np.ascontiguousarray(RADIUS_WEIGHT * subs[:, :, -1].reshape(-1))
        self.per_list = subs.shape[1]

    def lists(self, queries: np.ndarray, probes: int) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the ``probes`` lists to scan, best first, and their centroid
        similarities (faiss adds them to the residuals' scores)."""
        import faiss

        probes = min(probes, self.nlist)
        lists = np.empty((len(queries), probes), dtype=np.int64)
        coarse = np.empty((len(queries), probes), dtype=np.float32)
        scores = np.empty(len(self.vectors), dtype=np.float32)
        for i, query in enumerate(np.ascontiguousarray(queries, dtype=np.float32)):
            faiss.fvec_inner_products_ny(
                faiss.swig_ptr(scores),
                faiss.swig_ptr(query),
                faiss.swig_ptr(self.vectors),
                self.d,
                len(self.vectors),
            )
            best = (scores + self.bias).reshape(self.nlist, self.per_list).max(axis=1)
            pick = np.argpartition(-best, probes - 1)[:probes] if probes < self.nlist else None
            pick = np.argsort(-best, kind="stable") if pick is None else pick
            lists[i] = pick[np.argsort(-best[pick], kind="stable")]
            coarse[i] = np.einsum("ij,j->i", self.centroids[lists[i]], query)
        return lists, coarse


def search_preassigned(
    index: Any, queries: np.ndarray, k: int, lists: np.ndarray, coarse: np.ndarray, selector: Any
) -> np.ndarray:
    """faiss positions of the k best in the given lists (per query), -1 where fewer."""
    import faiss

    n = len(queries)
    x = np.ascontiguousarray(queries, dtype=np.float32)
    distances = np.empty((n, k), dtype=np.float32)
    positions = np.empty((n, k), dtype=np.int64)
    params = faiss.SearchParametersIVF(nprobe=lists.shape[1])
    if selector is not None:
        params.sel = selector
    index.search_preassigned_c(
        n,
        faiss.swig_ptr(x),
        k,
        faiss.swig_ptr(lists),
        faiss.swig_ptr(coarse),
        faiss.swig_ptr(distances),
        faiss.swig_ptr(positions),
        False,
        params,
    )
    return positions


def list_shape(index: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per inverted list, its farthest member's distance from the centroid (0 when empty), and
    ``SUBS`` sub-centroids with their radii (a few k-means steps over the members, seeded
    with evenly spaced members), shape (nlist, SUBS, d + 1), the radius last. The lists hold
    each member's residual (x - centroid) as float16, read from the codes in memory (not the
    mapped vectors: touching all of those would add their size to the resident memory)."""
    import faiss

    assert index.by_residual and index.code_size == 2 * index.d  # SQfp16 residuals
    invlists, d = index.invlists, index.d
    centroids = index.quantizer.reconstruct_n(0, index.nlist)
    radius = np.zeros(index.nlist, dtype=np.float32)
    subs = np.zeros((index.nlist, SUBS, d + 1), dtype=np.float32)
    subs[:, :, -1] = -1e9  # an empty list's sub-centroids never lead the order
    for c in range(index.nlist):
        size = invlists.list_size(c)
        if size == 0:
            continue
        codes = faiss.rev_swig_ptr(invlists.get_codes(c), size * index.code_size)
        residuals = codes.view(np.float16).reshape(size, d).astype(np.float32)
        norms = np.einsum("ij,ij->i", residuals, residuals)
        radius[c] = math.sqrt(float(np.max(norms)))
        centres = residuals[np.linspace(0, size - 1, min(SUBS, size)).astype(int)]
        for _ in range(4):
            nearest = _nearest(residuals, norms, centres)
            onehot = np.zeros((len(centres), size), dtype=np.float32)
            onehot[nearest, np.arange(size)] = 1.0
            counts = onehot.sum(axis=1)
            filled = counts > 0
            sums = np.einsum("ks,sd->kd", onehot, residuals)
            centres[filled] = sums[filled] / counts[filled, None]
        nearest = _nearest(residuals, norms, centres)
        gap = residuals - centres[nearest]
        distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
        order = np.argsort(nearest, kind="stable")
        used, first = np.unique(nearest[order], return_index=True)
        spread = np.zeros(len(centres), dtype=np.float32)
        spread[used] = np.maximum.reduceat(distance[order], first)
        chosen = used[np.arange(SUBS) % len(used)]  # unused slots repeat a used one
        subs[c, :, :-1] = centres[chosen] + centroids[c]
        subs[c, :, -1] = spread[chosen]
    return radius, subs


def _nearest(points: np.ndarray, norms: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of each point's nearest centre (squared euclidean). einsum, not a numpy matmul:
    thousands of small BLAS calls beside faiss's OpenMP threads spun on 2 cores (200k rows,
    1,788 lists: 113 s with numpy's BLAS threads, 6.9 s with one)."""
    products = np.einsum("id,kd->ik", points, centres)
    distances = norms[:, None] - 2 * products + np.einsum("ij,ij->i", centres, centres)
    return np.argmin(distances, axis=1)
