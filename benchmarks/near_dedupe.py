"""Near-duplicate detection: precision and recall on planted duplicates across two sources.

Source A ("local") holds N distinct standard-library modules (chosen so that no two of them
share more than 50% of their 5-gram shingles, i.e. no natural near duplicates). Source B
("github_repos") holds, for a subset of them, an exact copy (re-indented and re-cased, equal
after normalisation) or a near copy (1-5% of lines edited: an identifier renamed, a comment
added, a line deleted, a literal changed), plus distinct modules that are not in A (negatives).

Labels come from the planting, not from the detector. Pairs are scored at cluster level:
predicted pairs are all pairs in one duplicate cluster, true pairs are (original, planted copy).
Baseline in the same run: exact-hash dedupe alone (what you get without MinHash).

    .venv/bin/python benchmarks/near_dedupe.py [--originals 300] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from itertools import combinations

from corpus.connectors.local import SKIPPED_DIRS, stdlib_path
from corpus.dedupe import Candidate, DedupeParams, DedupeResult, dedupe, exact_key

_WORD = re.compile(r"\w+|[^\w\s]")


def shingles(text: str, k: int = 5) -> set[str]:
    toks = _WORD.findall(text.casefold())
    return {" ".join(toks[i : i + k]) for i in range(max(len(toks) - k + 1, 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def pick_modules(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """Distinct stdlib modules of 2-60 kB, no two sharing > 50% of shingles."""
    root = stdlib_path()
    files = [
        p
        for p in root.rglob("*.py")
        if not SKIPPED_DIRS.intersection(p.relative_to(root).parts)
        and 2_000 <= p.stat().st_size <= 60_000
    ]
    rng.shuffle(files)
    chosen: list[tuple[str, str, set[str]]] = []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        sh = shingles(text)
        if all(jaccard(sh, other) < 0.5 for _, _, other in chosen):
            chosen.append((p.relative_to(root).as_posix(), text, sh))
        if len(chosen) == count:
            break
    return [(name, text) for name, text, _ in chosen]


def exact_copy(text: str) -> str:
    # Equal after normalisation (case-folded, whitespace collapsed), different bytes.
    return "\n".join("  " + line.upper() for line in text.splitlines())


def near_copy(text: str, rate: float, rng: random.Random) -> str:
    lines = text.splitlines()
    n_edits = max(1, round(len(lines) * rate))
    for _ in range(n_edits):
        i = rng.randrange(len(lines))
        op = rng.choice(["rename", "comment", "delete", "literal"])
        if op == "rename":
            names = re.findall(r"\b[a-z_][a-z0-9_]{2,}\b", lines[i])
            if names:
                old = rng.choice(names)
                lines[i] = re.sub(rf"\b{old}\b", old + "_v2", lines[i])
                continue
            op = "comment"
        if op == "comment":
            lines.insert(i, "# " + rng.choice(["fork note", "patched locally", "vendored copy"]))
        elif op == "delete" and len(lines) > 10:
            del lines[i]
        else:
            lines[i] = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), lines[i]) + "  # tweak"
    return "\n".join(lines)


def cluster_pairs(result: DedupeResult) -> set[frozenset[str]]:
    # Exact removals point at their winner; near clusters list members.
    groups: dict[str, set[str]] = {}
    for removed, kept in result.exact_removed.items():
        groups.setdefault(kept, {kept}).add(removed)
    for cluster in result.clusters:
        members = set(cluster)
        for m in list(members):
            members |= groups.pop(m, set())
        groups[cluster[0]] = members
    return {frozenset(p) for g in groups.values() for p in combinations(sorted(g), 2)}


def score(pred: set[frozenset[str]], truth: set[frozenset[str]]) -> dict[str, float]:
    hit = len(pred & truth)
    return {
        "predicted_pairs": len(pred),
        "true_pairs": len(truth),
        "precision": round(hit / len(pred), 4) if pred else 1.0,
        "recall": round(hit / len(truth), 4) if truth else 1.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--originals", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    modules = pick_modules(args.originals + args.originals // 2, rng)
    originals, negatives = modules[: args.originals], modules[args.originals :]
    cands: list[Candidate] = [Candidate(f"A:{n}", t, (0,)) for n, t in originals]
    truth_exact: set[frozenset[str]] = set()
    truth_near: set[frozenset[str]] = set()
    rates: dict[str, float] = {}
    for i, (name, text) in enumerate(originals):
        kind = i % 3  # a third exact copies, a third near copies, a third not copied
        if kind == 0:
            cands.append(Candidate(f"B:exact:{name}", exact_copy(text), (1,)))
            truth_exact.add(frozenset({f"A:{name}", f"B:exact:{name}"}))
        elif kind == 1:
            rate = rng.choice([0.01, 0.02, 0.03, 0.05])
            cid = f"B:near:{name}"
            cands.append(Candidate(cid, near_copy(text, rate, rng), (1,)))
            truth_near.add(frozenset({f"A:{name}", cid}))
            rates[cid] = rate
    cands += [Candidate(f"B:neg:{n}", t, (1,)) for n, t in negatives]

    params = DedupeParams()
    start = time.perf_counter()
    result = dedupe(cands, params)
    took = time.perf_counter() - start
    pred = cluster_pairs(result)
    truth = truth_exact | truth_near

    # Baseline: exact (normalised) hash only.
    by_key: dict[str, list[str]] = {}
    for c in cands:
        by_key.setdefault(exact_key(c.text), []).append(c.id)
    baseline = {frozenset(p) for ids in by_key.values() for p in combinations(sorted(ids), 2)}

    true_j = {
        cid: round(jaccard(shingles(dict((c.id, c.text) for c in cands)[cid]), shingles(t)), 3)
        for cid in rates
        for n, t in originals
        if cid == f"B:near:{n}"
    }
    by_rate: dict[str, dict[str, float]] = {}
    for rate in sorted(set(rates.values())):
        pairs = {p for p in truth_near if any(rates.get(m) == rate for m in p)}
        ids = [m for p in pairs for m in p if m in rates]
        by_rate[f"{rate:.0%} lines edited"] = {
            "pairs": len(pairs),
            "recall": score(pred & pairs, pairs)["recall"] if pairs else 1.0,
            "min_true_jaccard": min(true_j[i] for i in ids) if ids else None,
        }
    print(
        json.dumps(
            {
                "documents": len(cands),
                "sources": {
                    "A(local)": len(originals),
                    "B(github_repos)": len(cands) - len(originals),
                },
                "params": params.__dict__,
                "minhash_lsh": {
                    "all": score(pred, truth),
                    "exact": score(
                        {p for p in pred if p in truth_exact} | (pred - truth), truth_exact
                    ),
                    "near": score(
                        {p for p in pred if p in truth_near} | (pred - truth), truth_near
                    ),
                    "near_recall_by_edit_rate": by_rate,
                    "seconds": round(took, 2),
                },
                "baseline_exact_hash_only": score(baseline, truth),
                "false_positive_pairs": sorted(sorted(p) for p in pred - truth)[:10],
                "missed_pairs": sorted(sorted(p) for p in truth - pred)[:10],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
