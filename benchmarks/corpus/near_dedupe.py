"""Near-duplicate detection: precision and recall on planted duplicates, code-aware vs raw tokens.

Two parts, each run twice on the same candidates in the same process: with today's default
(code shingled as normalised tokens, confirmed by fingerprints; see ``codegen/corpus/dedupe.py``)
and
with the previous version (every document shingled on raw word tokens, as prose still is),
which is the baseline. A third figure, exact hashing alone, is the floor.

**Modules.** Source A ("local") holds N distinct standard-library modules (no two share more
than 50% of their raw 5-gram shingles nor of their normalised ones, i.e. no natural near
duplicates or type-2 clones). Source B ("github_repos") holds, for a quarter of them each:
an exact copy (re-indented and re-cased, equal after normalisation); a near copy (1-5% of lines
edited: an identifier renamed, a comment added, a line deleted, a literal changed); a type-2
clone (2, 3, 5 or 8 local names renamed throughout, the module docstring reworded, and 1% of
lines' numbers changed); and for the last quarter nothing. Plus distinct modules in neither
(negatives).

**Short functions.** Functions of 2-8 lines from the standard library, as the chunker would
cut them. Negatives: pairs of genuinely different functions with exactly the same normalised
token stream (so the shingles alone cannot tell them apart); "different" is decided with the
syntax tree, not by the detector: the two have different names and read different
attributes, call or use different free names (``self.name`` / ``self.age``). Pairs that
differ only in what they bind or in literals are left out of the pool, being copies by the
type-2 definition. Positives: copies of other short functions (ones with no other function of
the same shape in the stdlib, so no natural copies blur the labels) with one or two
parameters or locals renamed and the docstring, if any, reworded (another "repository",
another document).

Labels come from the planting and the syntax tree, never from the detector. Pairs are scored
at cluster level: predicted pairs are all pairs in one duplicate cluster.

    .venv/bin/python -m benchmarks.corpus.near_dedupe [--originals 300] [--short-pairs 300] \
        [--seed 7]
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from itertools import combinations
from pathlib import Path

from codegen.corpus.connectors import SKIPPED_DIRS, stdlib_path
from codegen.corpus.dedupe import (
    Candidate,
    DedupeParams,
    DedupeResult,
    code_tokens,
    dedupe,
    exact_key,
)

_WORD = re.compile(r"\w+|[^\w\s]")
NEW_NAMES = ["acc", "buf", "cur", "elem", "entry", "node", "obj", "res", "tmp", "val"]


def shingles(tokens: list[str], k: int = 5) -> set[str]:
    return {" ".join(tokens[i : i + k]) for i in range(max(len(tokens) - k + 1, 1))}


def raw_shingles(text: str) -> set[str]:
    return shingles(_WORD.findall(text.casefold()))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def stdlib_files(min_bytes: int, max_bytes: int) -> list[Path]:
    root = stdlib_path()
    return sorted(
        p
        for p in root.rglob("*.py")
        if not SKIPPED_DIRS.intersection(p.relative_to(root).parts)
        and min_bytes <= p.stat().st_size <= max_bytes
    )


def pick_modules(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """Distinct stdlib modules of 2-60 kB, no two sharing > 50% of raw or normalised shingles."""
    root = stdlib_path()
    files = stdlib_files(2_000, 60_000)
    rng.shuffle(files)
    chosen: list[tuple[str, str, set[str], set[str]]] = []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        raw, norm = raw_shingles(text), shingles(code_tokens(text))
        if all(jaccard(raw, r) < 0.5 and jaccard(norm, n) < 0.5 for _, _, r, n in chosen):
            chosen.append((p.relative_to(root).as_posix(), text, raw, norm))
        if len(chosen) == count:
            break
    return [(name, text) for name, text, _, _ in chosen]


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


def bound_names(tree: ast.AST) -> list[str]:
    """Parameters and locally assigned names of the functions in ``tree``, most used first."""
    counts: dict[str, int] = defaultdict(int)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.arg) and node.arg not in ("self", "cls"):
                    counts[node.arg] += 1
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    counts[node.id] += 1
    return sorted((n for n in counts if len(n) > 1), key=lambda n: (-counts[n], n))


def rename(text: str, names: Iterable[str], rng: random.Random) -> str:
    taken = set(re.findall(r"\w+", text))
    for old in names:
        new = rng.choice(NEW_NAMES)
        while new in taken:
            new += "2"
        taken.add(new)
        text = re.sub(rf"(?<![\w.]){re.escape(old)}\b", new, text)
    return text


def reword_docstring(text: str, tree: ast.AST, sentence: str) -> str:
    body = getattr(tree, "body", [])
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Constant):
        return text
    if not isinstance(body[0].value.value, str):
        return text
    lines = text.splitlines(keepends=True)
    node = body[0]
    start, end = node.lineno - 1, node.end_lineno or node.lineno
    indent = re.match(r"\s*", lines[start]).group()  # type: ignore[union-attr]
    return "".join(lines[:start]) + f'{indent}"""{sentence}"""\n' + "".join(lines[end:])


def type2_clone(text: str, n_names: int, rng: random.Random) -> str | None:
    """Rename ``n_names`` locals throughout, reword the docstring, bump 1% of lines' numbers."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    names = bound_names(tree)
    if len(names) < n_names:
        return None
    # A mix of much- and little-used names, as someone adapting the module would rename.
    picked = rng.sample(names[: max(n_names * 3, 10)], n_names)
    out = reword_docstring(text, tree, "Utilities adapted from another project; see NOTICE.")
    out = rename(out, picked, rng)
    lines = out.splitlines()
    numbered = [i for i, line in enumerate(lines) if re.search(r"\b\d+\b", line)]
    for i in rng.sample(numbered, min(len(numbered), max(1, len(lines) // 100))):
        lines[i] = re.sub(r"\b\d+\b", lambda m: str(int(m.group()) + 1), lines[i], count=1)
    return "\n".join(lines) + "\n"


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


def exact_only(cands: list[Candidate]) -> set[frozenset[str]]:
    by_key: dict[str, list[str]] = defaultdict(list)
    for c in cands:
        by_key[exact_key(c.text)].append(c.id)
    return {frozenset(p) for ids in by_key.values() for p in combinations(sorted(ids), 2)}


def run_both(
    cands: list[Candidate], params: DedupeParams
) -> dict[str, tuple[set[frozenset[str]], float]]:
    """Today's code-aware dedupe and the raw-token baseline on the same candidates."""
    out = {}
    for name, batch in (
        ("raw_tokens_baseline", [replace(c, code=False) for c in cands]),
        ("code_aware", cands),
    ):
        started = time.perf_counter()
        result = dedupe(batch, params)
        out[name] = (cluster_pairs(result), round(time.perf_counter() - started, 2))
    return out


def modules_part(n: int, params: DedupeParams, rng: random.Random) -> dict[str, object]:
    modules = pick_modules(n + n // 2, rng)
    originals, negatives = modules[:n], modules[n:]
    cands = [Candidate(f"A:{m}", t, (0,), code=True) for m, t in originals]
    truth: dict[str, set[frozenset[str]]] = {"exact": set(), "near": set(), "type2": set()}
    type2_names: dict[frozenset[str], int] = {}
    for i, (name, text) in enumerate(originals):
        kind = i % 4
        copy: str | None = None
        if kind == 0:
            copy, label = exact_copy(text), "exact"
        elif kind == 1:
            copy, label = near_copy(text, rng.choice([0.01, 0.02, 0.03, 0.05]), rng), "near"
        elif kind == 2:
            n_names = rng.choice([2, 3, 5, 8])
            copy, label = type2_clone(text, n_names, rng), "type2"
        if copy is None:
            continue
        cid = f"B:{label}:{name}"
        cands.append(Candidate(cid, copy, (1,), code=True))
        pair = frozenset({f"A:{name}", cid})
        truth[label].add(pair)
        if label == "type2":
            type2_names[pair] = n_names
    cands += [Candidate(f"B:neg:{m}", t, (1,), code=True) for m, t in negatives]
    all_truth = set().union(*truth.values())
    runs = run_both(cands, params)
    report: dict[str, object] = {
        "documents": len(cands),
        "planted_pairs": {k: len(v) for k, v in truth.items()},
        "exact_hash_only": score(exact_only(cands), all_truth),
    }
    for name, (pred, seconds) in runs.items():
        false_pos = pred - all_truth
        by_names = {}
        for k in sorted(set(type2_names.values())):
            pairs = {p for p, v in type2_names.items() if v == k}
            by_names[f"{k} names renamed"] = score(pred & pairs, pairs)["recall"]
        report[name] = {
            "all": score(pred, all_truth),
            **{
                label: {"recall": score(pred & pairs, pairs)["recall"]}
                for label, pairs in truth.items()
            },
            "type2_recall_by_names_renamed": by_names,
            "false_positive_pairs": sorted(sorted(p) for p in false_pos)[:10],
            "missed": sorted(sorted(p) for p in all_truth - pred)[:10],
            "seconds": seconds,
        }
    return report


def short_functions(max_lines: int = 8) -> list[tuple[str, str, ast.FunctionDef]]:
    """(module:qualified line, source, node) of every 2-8 line function in the stdlib."""
    root = stdlib_path()
    out = []
    for p in stdlib_files(500, 200_000):
        text = p.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and not node.decorator_list:
                end = node.end_lineno or node.lineno
                if 2 <= end - node.lineno + 1 <= max_lines:
                    src = "\n".join(lines[node.lineno - 1 : end])
                    out.append((f"{p.relative_to(root).as_posix()}:{node.lineno}", src, node))
    return out


def free_names(node: ast.FunctionDef) -> frozenset[str]:
    bound = {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    bound |= {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - bound
    used |= {"." + a.attr for a in ast.walk(node) if isinstance(a, ast.Attribute)}
    return frozenset(used)


def short_part(pairs_wanted: int, params: DedupeParams, rng: random.Random) -> dict[str, object]:
    funcs = short_functions()
    rng.shuffle(funcs)
    by_shape: dict[tuple[str, ...], list[tuple[str, str, ast.FunctionDef]]] = defaultdict(list)
    for f in funcs:
        by_shape[tuple(code_tokens(f[1]))].append(f)
    negatives: set[frozenset[str]] = set()
    cands: list[Candidate] = []
    used: set[str] = set()
    for members in by_shape.values():
        # Within a shape, keep only members that are genuinely different from every other
        # kept one: another name, and other free names (what they read, call, use).
        kept: list[tuple[str, str, ast.FunctionDef]] = []
        for f in members:
            if all(
                f[2].name != g[2].name
                and free_names(f[2]) != free_names(g[2])
                and f[1].strip() != g[1].strip()
                for g in kept
            ):
                kept.append(f)
        if len(kept) < 2:
            continue
        a, b = kept[0], kept[1]
        negatives.add(frozenset({a[0], b[0]}))
        for f in (a, b):
            cands.append(Candidate(f[0], f[1], (0,), code=True, group=f[0].split(":")[0]))
            used.add(f[0])
        if len(negatives) >= pairs_wanted:
            break
    truth: set[frozenset[str]] = set()
    for key, src, node in funcs:
        if len(truth) >= pairs_wanted:
            break
        if key in used or len(by_shape[tuple(code_tokens(src))]) > 1:
            continue  # an original must have no natural look-alike (the codecs' encode()s)
        names = bound_names(ast.Module(body=[node], type_ignores=[]))
        if not names:
            continue
        picked = rng.sample(names, min(len(names), rng.choice([1, 2])))
        body_doc = ast.get_docstring(node) is not None
        copy = rename(src, picked, rng)
        if body_doc:
            copy = re.sub(r'("""|\'\'\')[\s\S]*?\1', '"""Adapted helper."""', copy, count=1)
        if exact_key(copy) == exact_key(src):
            continue
        cid = f"B:{key}"
        cands.append(Candidate(key, src, (0,), code=True, group=key.split(":")[0]))
        cands.append(Candidate(cid, copy, (1,), code=True, group="B:" + key.split(":")[0]))
        truth.add(frozenset({key, cid}))
        used.add(key)
    runs = run_both(cands, params)
    report: dict[str, object] = {
        "functions": len(cands),
        "shape_sharing_negative_pairs": len(negatives),
        "planted_renamed_copies": len(truth),
        "exact_hash_only": score(exact_only(cands), truth),
    }
    examples = [sorted(p) for p in sorted(negatives, key=sorted)[:3]]
    report["negative_examples"] = [
        [next(c.text for c in cands if c.id == i) for i in pair] for pair in examples
    ]
    for name, (pred, seconds) in runs.items():
        report[name] = {
            **score(pred, truth),
            "negative_pairs_merged": len(pred & negatives),
            "false_positive_pairs": sorted(sorted(p) for p in pred - truth)[:10],
            "seconds": seconds,
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--originals", type=int, default=300)
    parser.add_argument("--short-pairs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fingerprint-overlap", type=float, default=None, help="explore")
    args = parser.parse_args()
    params = DedupeParams()
    if args.fingerprint_overlap is not None:
        params = replace(params, code_fingerprint_overlap=args.fingerprint_overlap)
    print(
        json.dumps(
            {
                "params": params.__dict__,
                "modules": modules_part(args.originals, params, random.Random(args.seed)),
                "short_functions": short_part(
                    args.short_pairs, params, random.Random(args.seed + 1)
                ),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
