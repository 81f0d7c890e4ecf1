"""Exact and near-duplicate detection across all sources.

Exact: SHA-256 of the normalised text (case-folded, whitespace collapsed).
Near: MinHash signatures of 5-gram shingles, candidate pairs from LSH, each pair then
confirmed by the signatures' estimated Jaccard similarity, clusters by union-find.

Prose (Markdown, HTML, Q&A, issues, text) is shingled on words. Defaults follow Lee et al.,
"Deduplicating Training Data Makes Language Models Better" (ACL 2022, section 4.1): 5-gram
shingles and a Jaccard threshold of 0.8. They use 9,000 permutations for web-scale recall; 128
is datasketch's default and is enough at our scale.

Code is shingled on identifier- and literal-normalised tokens (every name that is not a
keyword becomes ``I``, every string ``S``, every number ``N``, comments go), so a copy with
locals renamed, literals changed or its docstring reworded (a type-2 clone) shingles like the
original, where raw-token shingles miss it. Normalising also throws away what tells two
different short functions of one shape apart (``return self.name`` / ``return self.age``,
``n % 2 == 0`` / ``n % 2 == 1``), so a code pair is confirmed only when the two also share at
least ``code_fingerprint_overlap`` of their *fingerprints* (Jaccard): the names a fragment uses
but does not bind (attributes, called and global names, keyword arguments, imports), the
functions and classes it defines, and its literals, docstrings aside. Renaming parameters and
locals or rewording a docstring leaves the fingerprint alone; a function with another name,
that reads another attribute or compares with another constant, does something else. Code is
also compared on word shingles, as prose is, so nothing found before is missed now. Chunks of
one document are never merged (see ``Candidate.group``).

benchmarks/near_dedupe.py measures precision and recall on planted pairs of both kinds, against
raw-token shingles on the same candidates.

In each cluster the best representative is kept: accepted answer, then score, then stars,
then recency, then the shortest uri (a stable tie-break).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import keyword
import re
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from codegen.json_types import JSONValue

if TYPE_CHECKING:
    from datasketch import MinHash

    from codegen.corpus.model import Metadata

# How good a representative of its cluster a candidate is, compared as a tuple: larger wins.
Rank: TypeAlias = tuple[float | str, ...]

# datasketch 2's default permutation scheme, named because cached signatures must match it.
SCHEME = "affine32"
_WORD = re.compile(r"\w+|[^\w\s]")
CODE_LANGUAGES = frozenset({"python"})
NORMALISER_VERSION = 1  # part of the code signature's cache key
# Python's lexical classes, enough to tell names, literals and comments apart in code that
# need not parse (chunks, fragments, other versions of the language).
_CODE_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\r\n]*)
  | (?P<string>[rRbBuUfFtT]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''
                                 |"(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*'))
  | (?P<number>\.?\d[\w.]*)
  | (?P<name>[^\W\d]\w*)
  | (?P<op>\S)
    """,
    re.VERBOSE,
)
_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


@dataclass(frozen=True)
class DedupeParams:
    shingle_size: int = 5
    num_perm: int = 128
    threshold: float = 0.8
    seed: int = 1
    # Code: shingles of normalised tokens (see the module docstring); measured in
    # benchmarks/near_dedupe.py (CHANGELOG.md, Corpus).
    code_shingle_size: int = 5
    code_threshold: float = 0.8
    code_fingerprint_overlap: float = 0.7

    def key(self, code: bool = False) -> str:
        """Names the signature's recipe: cached signatures are reused only under the same."""
        if code:
            k = f"code{NORMALISER_VERSION}-k{self.code_shingle_size}"
            return f"{SCHEME}-{k}-p{self.num_perm}-s{self.seed}"
        return f"{SCHEME}-k{self.shingle_size}-p{self.num_perm}-s{self.seed}"


def code_tokens(text: str) -> list[str]:
    """The identifier- and literal-normalised token stream of code."""
    tokens: list[str] = []
    for m in _CODE_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "name":
            tokens.append(m.group() if m.group() in _KEYWORDS else "I")
        elif kind == "op":
            tokens.append(m.group())
        elif kind == "string":
            tokens.append("S")
        elif kind == "number":
            tokens.append("N")
    return tokens


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Fingerprint:
    """What a code fragment does, as names and constants; compared by Jaccard.

    ``tree``: the names it uses but does not bind (attributes, called and global names,
    keyword arguments, imported modules), the names it defines (functions and classes: its
    API), and its literals, docstrings aside; None when the fragment does not parse.
    ``tokens``: all of its names and literals, the fallback when either side does not parse.
    """

    tree: frozenset[str] | None
    tokens: frozenset[str]

    def to_json(self) -> dict[str, list[str] | None]:
        return {
            "tree": None if self.tree is None else sorted(self.tree),
            "tokens": sorted(self.tokens),
        }

    @classmethod
    def from_json(cls, data: JSONValue) -> Fingerprint:
        """From ``to_json``'s output, read back from the stage cache."""
        if not isinstance(data, dict) or not isinstance(tokens := data.get("tokens"), list):
            raise ValueError(f"not a stored fingerprint: {data!r}")
        tree = data.get("tree")
        if tree is not None and not isinstance(tree, list):
            raise ValueError(f"not a stored fingerprint: {data!r}")
        return cls(
            None if tree is None else frozenset(str(t) for t in tree),
            frozenset(str(t) for t in tokens),
        )

    def overlap(self, other: Fingerprint) -> float:
        if self.tree is not None and other.tree is not None:
            a, b = self.tree, other.tree
        else:
            a, b = self.tokens, other.tokens
        # Nothing to compare (no names, no constants): not evidence of a copy.
        return len(a & b) / len(a | b) if a or b else 0.0


def code_fingerprint(text: str) -> Fingerprint:
    tokens = frozenset(
        m.group()
        for m in _CODE_TOKEN.finditer(text)
        if m.lastgroup in ("name", "string", "number") and m.group() not in _KEYWORDS
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code
            tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Fingerprint(None, tokens)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, _SCOPES)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    bound: set[str] = set()
    used: set[str] = set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            found.add("def " + node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
            found.add("import " + node.name)  # what is imported is used, whatever its alias
        elif isinstance(node, ast.ImportFrom):
            found.add(f"from {'.' * node.level}{node.module or ''}")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Attribute):
            found.add("." + node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg + "=")
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            found.add(repr(node.value))
    return Fingerprint(frozenset((used - bound) | found), tokens)


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def exact_key(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()


def _hash32(data: bytes) -> int:
    # blake2b is faster than datasketch's default sha1 and just as well mixed.
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


@functools.lru_cache(maxsize=4)
def _minhash(num_perm: int, seed: int) -> MinHash:
    """One MinHash per recipe, cleared for each text: building its permutations costs ~1 ms,
    more than shingling a typical chunk."""
    from datasketch import MinHash  # imported late: it pulls in scipy (~1.5 s)

    return MinHash(num_perm=num_perm, seed=seed, hashfunc=_hash32, scheme=SCHEME)


def signature(text: str, params: DedupeParams, code: bool = False) -> np.ndarray:
    if code:
        tokens, k = code_tokens(text), params.code_shingle_size
    else:
        tokens, k = _WORD.findall(text.casefold()), params.shingle_size
    if len(tokens) <= k:
        shingles = {" ".join(tokens)}
    else:
        shingles = {" ".join(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}
    mh = _minhash(params.num_perm, params.seed)
    mh.clear()
    mh.update_batch([s.encode("utf-8", "surrogatepass") for s in shingles])
    return mh.hashvalues.copy()


@dataclass(frozen=True)
class Candidate:
    """One document as the deduper sees it."""

    id: str
    text: str
    rank: Rank  # larger is better
    code: bool = False  # compared as code (normalised tokens) rather than as prose
    # Candidates of one group (chunks of one document) are never merged with each other.
    group: str | None = None


@dataclass
class DedupeResult:
    keep: list[str]
    exact_removed: dict[str, str] = field(default_factory=dict)  # removed id -> kept id
    near_removed: dict[str, str] = field(default_factory=dict)
    clusters: list[list[str]] = field(default_factory=list)  # kept id first


class _UnionFind:
    """Clusters; two members of one group (chunks of one document) never share a cluster,
    not even through a third candidate similar to both."""

    def __init__(self, group_of: dict[str, str | None]) -> None:
        self.parent: dict[str, str] = {}
        self.group_of = group_of
        self.groups: dict[str, set[str]] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def _groups(self, root: str) -> set[str]:
        if root not in self.groups:
            group = self.group_of.get(root)
            self.groups[root] = {group} if group is not None else set()
        return self.groups[root]

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or self._groups(ra) & self._groups(rb):
            return
        keep, gone = min(ra, rb), max(ra, rb)
        self.groups[keep] = self._groups(ra) | self._groups(rb)
        self.parent[gone] = keep


def dedupe(
    candidates: Sequence[Candidate],
    params: DedupeParams,
    signature_of: Callable[[Candidate, bool], np.ndarray] | None = None,
    fingerprint_of: Callable[[Candidate], Fingerprint] | None = None,
    word_shingles_for_code: bool = True,
) -> DedupeResult:
    """Which candidates to keep.

    ``signature_of(candidate, code)`` and ``fingerprint_of(candidate)`` let callers serve
    cached signatures (``code``: of the normalised tokens) and code fingerprints.
    ``word_shingles_for_code`` False: code is compared on normalised tokens only, enough for
    fragments the syntax tree cut whole (chunks), whose lexical structure is intact.
    """
    # LeanMinHash: a signature's values without the permutation tables a MinHash builds
    # (~1 ms each), which only shingling needs.
    from datasketch import LeanMinHash, MinHashLSH

    sig = signature_of or (lambda c, code: signature(c.text, params, code))
    best = {c.id: c for c in candidates}

    def better(a: Candidate, b: Candidate) -> Candidate:
        return a if (a.rank, b.id) > (b.rank, a.id) else b

    result = DedupeResult(keep=[])
    # Exact duplicates first: cheap, and they never need a signature.
    by_key: dict[tuple[str, ...], Candidate] = {}
    for c in candidates:
        key: tuple[str, ...] = (exact_key(c.text),)
        if key in by_key and c.group is not None and by_key[key].group == c.group:
            key = (*key, c.id)  # same group: kept apart
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

    # Word shingles for everything (the prose method, which still catches the edits that
    # break code's lexical structure, a deleted line closing a docstring, say), and for code
    # also normalised-token shingles (type-2 clones), each with its own LSH index.
    thresholds = {False: params.threshold, True: params.code_threshold}
    lshs = {
        kind: MinHashLSH(threshold=t, num_perm=params.num_perm) for kind, t in thresholds.items()
    }
    sigs: dict[tuple[str, bool], LeanMinHash] = {}
    prints: dict[str, Fingerprint] = {}

    def fingerprint(c: Candidate) -> Fingerprint:
        if c.id not in prints:
            prints[c.id] = fingerprint_of(c) if fingerprint_of else code_fingerprint(c.text)
        return prints[c.id]

    uf = _UnionFind({c.id: c.group for c in survivors})
    for c in survivors:
        kinds = ((False, True) if word_shingles_for_code else (True,)) if c.code else (False,)
        for code in kinds:
            mh = LeanMinHash(seed=params.seed, hashvalues=sig(c, code), scheme=SCHEME)
            for other in lshs[code].query(mh):
                # LSH only proposes; the signature estimate confirms (keeps precision high).
                if mh.jaccard(sigs[other, code]) < thresholds[code]:
                    continue
                if code and fingerprint(c).overlap(fingerprint(best[other])) < (
                    params.code_fingerprint_overlap
                ):
                    continue  # same shape, but it uses other names or constants: other code
                uf.union(c.id, other)
            lshs[code].insert(c.id, mh)
            sigs[c.id, code] = mh
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
    return result


def rank_of(metadata: Metadata) -> Rank:
    """Better representative first: accepted answer, score, stars, recency."""
    return (
        1 if metadata.get("accepted") else 0,
        float(metadata.get("score") or 0),
        float(metadata.get("stars") or 0),
        str(metadata.get("updated_at") or metadata.get("created_at") or ""),
    )
