"""Retrieval evaluation in the CodeSearchNet manner.

Query = the first sentence of a function's docstring; target = that function with its
docstring removed, indexed among all the other functions (also without docstrings). A
retriever is scored by MRR@10 and recall@1/@10 of the target per search mode.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
import textwrap
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen.corpus.model import Chunk
from codegen.retrieval.types import Retriever

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n\s*\n")


@dataclass(frozen=True)
class EvalQuery:
    query: str
    target_id: str


def first_sentence(docstring: str) -> str:
    text = docstring.strip()
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    return " ".join(text.split())


def _usable_query(sentence: str) -> bool:
    # Too short to say what the function does ("Helper.", "Return self") or a doctest.
    return len(sentence.split()) >= 4 and not sentence.startswith(">>>")


def _strip_docstring(source_lines: list[str], node: ast.AST) -> tuple[str, str] | None:
    """(docstring or "", code without it); None for a function that is only a docstring."""
    body = getattr(node, "body", None)
    if not body:
        return None
    start, end = node.lineno, node.end_lineno or node.lineno
    if getattr(node, "decorator_list", None):
        start = min(d.lineno for d in node.decorator_list)
    first = body[0].value if isinstance(body[0], ast.Expr) else None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return "", "\n".join(source_lines[start - 1 : end])
    doc_start, doc_end = body[0].lineno, body[0].end_lineno or body[0].lineno
    kept = source_lines[start - 1 : doc_start - 1] + source_lines[doc_end:end]
    code = "\n".join(kept)
    if len(body) == 1:  # docstring-only functions are nothing but their query
        return None
    return first.value, code


def chunk_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def functions_from_file(
    path: Path, root: Path, source: str = "stdlib"
) -> Iterator[tuple[Chunk, str]]:
    """(chunk without docstring, docstring or "") for every function and method in a file."""
    try:
        text = path.read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old modules
            tree = ast.parse(text)
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return
    lines = text.splitlines()
    rel = path.relative_to(root).as_posix()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        stripped = _strip_docstring(lines, node)
        if stripped is None:
            continue
        docstring, code = stripped
        if not code.strip():
            continue
        yield (
            Chunk(
                id=chunk_id(code),
                document_id=chunk_id(rel),
                source=source,
                uri=f"stdlib://{rel}",
                title=node.name,
                text=code,
                language="python",
                start_line=node.lineno,
                end_line=node.end_lineno or node.lineno,
                kind="function",
            ),
            docstring,
        )


def python_files(root: Path) -> list[Path]:
    skip = {"test", "tests", "idlelib", "site-packages", "dist-packages", "__pycache__"}
    return sorted(p for p in root.rglob("*.py") if not skip.intersection(p.relative_to(root).parts))


def build_eval_set(
    pairs: Iterable[tuple[Chunk, str]], *, max_queries: int, seed: int = 0
) -> tuple[list[Chunk], list[EvalQuery]]:
    """Corpus of unique function chunks and queries whose answer is unambiguous.

    A query that several functions share (overrides documented alike) or a target whose code
    occurs twice has no single right answer, so both are left out of the queries (the
    functions stay in the corpus as distractors).
    """
    corpus: dict[str, Chunk] = {}
    code_count: dict[str, int] = {}
    by_query: dict[str, list[str]] = {}
    for chunk, docstring in pairs:
        code_count[chunk.id] = code_count.get(chunk.id, 0) + 1
        corpus.setdefault(chunk.id, chunk)
        sentence = first_sentence(docstring)
        if docstring and _usable_query(sentence):
            by_query.setdefault(sentence.lower(), []).append(chunk.id)
    candidates = []
    for sentence, ids in by_query.items():
        if len(ids) == 1 and code_count[ids[0]] == 1:
            candidates.append(EvalQuery(query=sentence, target_id=ids[0]))
    candidates.sort(key=lambda q: q.target_id)
    random.Random(seed).shuffle(candidates)
    return list(corpus.values()), candidates[:max_queries]


def stdlib_eval_set(
    root: Path, *, max_queries: int = 1000, max_files: int | None = None, seed: int = 0
) -> tuple[list[Chunk], list[EvalQuery]]:
    files = python_files(root)
    if max_files is not None and max_files < len(files):
        # A seeded sample spread over the whole library, not its alphabetical head.
        files = sorted(random.Random(seed).sample(files, max_files))
    pairs = (pair for path in files for pair in functions_from_file(path, root))
    return build_eval_set(pairs, max_queries=max_queries, seed=seed)


def queries_from_chunks(chunks: Iterable[Chunk], *, max_queries: int = 200) -> list[EvalQuery]:
    """Docstring-sentence queries against an already-built index of function chunks.

    Used by the index quality check: the indexed chunks keep their docstrings, so this is an
    easier task than the benchmark's; the check's floors are set for it.
    """
    pairs = []
    for chunk in chunks:
        if chunk.language != "python" or chunk.kind not in {"function", "method", "class", "group"}:
            continue
        try:
            tree = ast.parse(textwrap.dedent(chunk.text).strip())  # methods come indented
        except (SyntaxError, ValueError):
            continue
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        docstring = ast.get_docstring(node)
        if docstring:
            pairs.append((chunk, docstring))
    seen: dict[str, list[str]] = {}
    for chunk, docstring in pairs:
        sentence = first_sentence(docstring)
        if _usable_query(sentence):
            seen.setdefault(sentence.lower(), []).append(chunk.id)
    queries = [EvalQuery(q, ids[0]) for q, ids in seen.items() if len(set(ids)) == 1]
    queries.sort(key=lambda q: q.target_id)  # deterministic sample: ids are content hashes
    return queries[:max_queries]


@dataclass
class ModeScores:
    mode: str
    queries: int
    mrr_at_10: float
    recall_at_1: float
    recall_at_10: float


def evaluate(
    retriever: Retriever, queries: Sequence[EvalQuery], modes: Sequence[str], k: int = 10
) -> dict[str, ModeScores]:
    results: dict[str, ModeScores] = {}
    prime = getattr(retriever, "prime", None)
    if callable(prime) and any(m != "keyword" for m in modes):
        prime([q.query for q in queries])
    for mode in modes:
        rr = r1 = r10 = 0.0
        for q in queries:
            ids = [h.chunk_id for h in retriever.search(q.query, k, mode=mode)]
            if q.target_id in ids:
                rank = ids.index(q.target_id) + 1
                rr += 1.0 / rank
                r1 += rank == 1
                r10 += rank <= 10
        n = max(len(queries), 1)
        results[mode] = ModeScores(
            mode=mode,
            queries=len(queries),
            mrr_at_10=round(rr / n, 4),
            recall_at_1=round(r1 / n, 4),
            recall_at_10=round(r10 / n, 4),
        )
    return results
