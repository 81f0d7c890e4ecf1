"""Exact and near-duplicate detection across all sources.

Exact: SHA-256 of the normalised text (case-folded, whitespace collapsed).
Near: MinHash signatures of word 5-gram shingles, candidate pairs from LSH, each pair then
confirmed by the signatures' estimated Jaccard similarity, clusters by union-find.

Defaults follow Lee et al., "Deduplicating Training Data Makes Language Models Better"
(ACL 2022, section 4.1): 5-gram shingles and a Jaccard threshold of 0.8. They use 9,000
permutations for web-scale recall; 128 is datasketch's default and is enough at our scale
(benchmarks/near_dedupe.py measures precision and recall on planted pairs).

In each cluster the best representative is kept: accepted answer, then score, then stars,
then recency, then the shortest uri (a stable tie-break).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# datasketch 2's default permutation scheme, named because cached signatures must match it.
SCHEME = "affine32"
_WORD = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class DedupeParams:
    shingle_size: int = 5
    num_perm: int = 128
    threshold: float = 0.8
    seed: int = 1

    def key(self) -> str:
        return f"{SCHEME}-k{self.shingle_size}-p{self.num_perm}-s{self.seed}"


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def exact_key(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()


def _hash32(data: bytes) -> int:
    # blake2b is faster than datasketch's default sha1 and just as well mixed.
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


def signature(text: str, params: DedupeParams) -> np.ndarray:
    from datasketch import MinHash  # imported late: it pulls in scipy (~1.5 s)

    tokens = _WORD.findall(text.casefold())
    k = params.shingle_size
    if len(tokens) <= k:
        shingles = {" ".join(tokens)}
    else:
        shingles = {" ".join(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}
    mh = MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=_hash32, scheme=SCHEME)
    mh.update_batch([s.encode("utf-8", "surrogatepass") for s in shingles])
    return mh.hashvalues.copy()


@dataclass(frozen=True)
class Candidate:
    """One document as the deduper sees it."""

    id: str
    text: str
    rank: tuple[Any, ...]  # larger is better


@dataclass
class DedupeResult:
    keep: list[str]
    exact_removed: dict[str, str] = field(default_factory=dict)  # removed id -> kept id
    near_removed: dict[str, str] = field(default_factory=dict)
    clusters: list[list[str]] = field(default_factory=list)  # kept id first


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def dedupe(
    candidates: Sequence[Candidate],
    params: DedupeParams,
    signature_of: Callable[[Candidate], np.ndarray] | None = None,
) -> DedupeResult:
    """Which candidates to keep; ``signature_of`` lets callers serve cached signatures."""
    from datasketch import MinHash, MinHashLSH

    sig = signature_of or (lambda c: signature(c.text, params))
    best = {c.id: c for c in candidates}

    def better(a: Candidate, b: Candidate) -> Candidate:
        return a if (a.rank, b.id) > (b.rank, a.id) else b

    result = DedupeResult(keep=[])
    # Exact duplicates first: cheap, and they never need a signature.
    by_key: dict[str, Candidate] = {}
    for c in candidates:
        key = exact_key(c.text)
        if key in by_key:
            winner = better(by_key[key], c)
            loser = c if winner is by_key[key] else by_key[key]
            by_key[key] = winner
            result.exact_removed[loser.id] = winner.id
        else:
            by_key[key] = c
    for loser, winner in list(result.exact_removed.items()):
        while winner in result.exact_removed:  # follow chains to the final winner
            winner = result.exact_removed[winner]
        result.exact_removed[loser] = winner
    survivors = sorted(by_key.values(), key=lambda c: c.id)

    lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm)
    sigs: dict[str, MinHash] = {}
    uf = _UnionFind()
    for c in survivors:
        mh = MinHash(num_perm=params.num_perm, seed=params.seed, hashvalues=sig(c), scheme=SCHEME)
        for other in lsh.query(mh):
            # LSH only proposes; the signature estimate confirms (keeps precision high).
            if mh.jaccard(sigs[other]) >= params.threshold:
                uf.union(c.id, other)
        lsh.insert(c.id, mh)
        sigs[c.id] = mh
    groups: dict[str, list[Candidate]] = {}
    for c in survivors:
        groups.setdefault(uf.find(c.id), []).append(c)
    for members in groups.values():
        winner = members[0]
        for m in members[1:]:
            winner = better(winner, m)
        result.keep.append(winner.id)
        if len(members) > 1:
            others = sorted(m.id for m in members if m.id != winner.id)
            result.clusters.append([winner.id, *others])
            for o in others:
                result.near_removed[o] = winner.id
    order = {c.id: i for i, c in enumerate(candidates)}
    result.keep.sort(key=order.__getitem__)
    result.clusters.sort()
    assert all(i in best for i in result.keep)
    return result


def rank_of(metadata: dict[str, Any]) -> tuple[Any, ...]:
    """Better representative first: accepted answer, score, stars, recency."""
    return (
        1 if metadata.get("accepted") else 0,
        float(metadata.get("score") or 0),
        float(metadata.get("stars") or 0),
        str(metadata.get("updated_at") or metadata.get("created_at") or ""),
    )


def pairs_of(result: DedupeResult) -> Iterable[tuple[str, str]]:
    """Every (removed, kept) pair, exact and near."""
    yield from result.exact_removed.items()
    yield from result.near_removed.items()
