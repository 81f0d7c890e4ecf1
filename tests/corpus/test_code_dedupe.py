"""Type-2 clones of code (locals renamed, literals changed, docstring reworded) are duplicates;
different code of the same shape is not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from codegen.corpus.chunk import Budget
from codegen.corpus.dedupe import Candidate, DedupeParams, code_fingerprint, code_tokens, dedupe
from codegen.corpus.model import Document
from codegen.corpus.pipeline import chunk_stage, clean_stage, dedupe_stage
from codegen.corpus.store import chunks_path, raw_path, read_jsonl, write_jsonl_atomic

MODULE = '''"""Running statistics over a stream of samples."""

import math


def mean(samples):
    total = 0.0
    count = 0
    for value in samples:
        total += value
        count += 1
    return total / count if count else math.nan


def variance(samples, ddof=1):
    centre = mean(samples)
    squares = [(value - centre) ** 2 for value in samples]
    if len(squares) <= ddof:
        return math.nan
    return sum(squares) / (len(squares) - ddof)


def zscores(samples):
    centre = mean(samples)
    spread = math.sqrt(variance(samples))
    return [(value - centre) / spread for value in samples]
'''
# Two locals renamed throughout, the docstring reworded, one constant changed.
CLONE = (
    MODULE.replace("Running statistics over a stream of samples.", "Stats helpers (vendored).")
    .replace("total", "acc")
    .replace("value", "x")
    .replace("ddof=1", "ddof=0")
)


def test_renamed_clone_is_caught_on_normalised_tokens_and_missed_on_raw_ones() -> None:
    cands = [
        Candidate("orig", MODULE, (0,), code=True),
        Candidate("clone", CLONE, (1,), code=True),  # better ranked: kept
    ]
    assert dedupe(cands, DedupeParams()).near_removed == {"orig": "clone"}
    raw = dedupe([replace(c, code=False) for c in cands], DedupeParams())
    assert raw.near_removed == {}  # what the word-shingle method alone keeps: both copies


def test_same_shape_different_code_is_kept() -> None:
    getters = [
        f"def get_{name}(self):\n    return self._{name}\n" for name in ("name", "age", "size")
    ]
    parity = [f"def is_{k}(n):\n    return n % 2 == {v}\n" for k, v in (("even", 0), ("odd", 1))]
    for group in (getters, parity):
        assert len({tuple(code_tokens(t)) for t in group}) == 1  # one shape
        cands = [Candidate(f"f{i}", t, (0,), code=True) for i, t in enumerate(group)]
        result = dedupe(cands, DedupeParams())
        assert result.near_removed == {} and len(result.keep) == len(group)


def test_fingerprint_ignores_bound_names_and_docstrings() -> None:
    a = code_fingerprint('def f(x, y):\n    """Add."""\n    z = x + y\n    return len(z)\n')
    b = code_fingerprint("def f(p, q):\n    '''Sum two.'''\n    r = p + q\n    return len(r)\n")
    assert a.tree == b.tree == {"def f", "len"} and a.overlap(b) == 1.0
    broken = code_fingerprint("def f(x:\n    return len(x)\n")  # does not parse
    assert broken.tree is None and broken.overlap(a) > 0  # falls back to all names


def test_one_documents_chunks_are_never_merged_even_through_a_third() -> None:
    body = "def {n}(self, key):\n    found = self.table.get(key)\n    return found or {v}\n"
    a = Candidate("a", body.format(n="first", v=1), (0,), code=True, group="doc1")
    b = Candidate("b", body.format(n="first", v=1).replace("found", "hit"), (1,), True, "doc2")
    c = Candidate("c", body.format(n="first", v=1).replace("key", "k"), (0,), True, "doc1")
    result = dedupe([a, b, c], DedupeParams())
    assert len(result.near_removed) == 1 and set(result.keep) >= {"b"}
    assert not {"a", "c"} <= set(result.near_removed)  # doc1 keeps one of its own at least


def test_a_function_copied_into_another_module_is_one_chunk(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "corpus"
    copied = MODULE.split("\n\n\ndef ")[2]  # "variance(...)"
    renamed = ("def " + copied).replace("centre", "middle").replace("squares", "sq")
    host = '"""Report tables."""\n\n\ndef render(rows):\n    return "\\n".join(map(str, rows))\n'
    docs = [
        Document("d1", "local", "file:///stats.py", "stats.py", MODULE, "python"),
        Document(
            "d2",
            "github_repos",
            "https://x/report.py",
            "report.py",
            host + renamed,
            "python",
            metadata={"stars": 50},
        ),
    ]
    write_jsonl_atomic(raw_path(corpus_dir, "local"), [docs[0].to_dict()])
    write_jsonl_atomic(raw_path(corpus_dir, "github_repos"), [docs[1].to_dict()])
    clean_stage(corpus_dir)
    dedupe_stage(corpus_dir, DedupeParams())
    stats = chunk_stage(corpus_dir, Budget(max_tokens=400, min_tokens=1))
    chunks = list(read_jsonl(chunks_path(corpus_dir)))
    variance = [c for c in chunks if "ddof" in c["text"]]
    assert len(variance) == 1 and stats.near_duplicate_chunks == 1
    assert variance[0]["uri"] == "https://x/report.py"  # the better-ranked document's copy
    assert any("def mean" in c["text"] for c in chunks)  # the rest of stats.py stays
    assert any("def render" in c["text"] for c in chunks)
