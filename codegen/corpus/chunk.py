"""Chunking: Python by syntax tree, Markdown/HTML by headings, Q&A and issues whole.

Chunkers return spans (text, first line, last line, kind, title) that depend only on the
cleaned text and language, so they are cached by content hash and ``CHUNKER_VERSION``. A
chunk's id is the hash of the chunker version and its text: stable across runs and machines.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass

from codegen.corpus.model import Chunk, Document, Metadata

# Bump whenever chunk boundaries or texts change: every chunk id changes with it.
CHUNKER_VERSION = "chunker-3"
DEFAULT_MAX_TOKENS = 400
DEFAULT_MIN_TOKENS = 48
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Word-and-symbol count: a tokenizer-free stand-in close to BPE counts for code."""
    return len(_TOKEN.findall(text))


def chunk_id(text: str) -> str:
    return hashlib.sha256(
        f"{CHUNKER_VERSION}\0{text}".encode("utf-8", "surrogatepass")
    ).hexdigest()[:32]


@dataclass(frozen=True)
class Span:
    start: int  # 1-based, inclusive
    end: int
    kind: str
    title: str


@dataclass(frozen=True)
class Budget:
    max_tokens: int = DEFAULT_MAX_TOKENS
    min_tokens: int = DEFAULT_MIN_TOKENS


def _text(lines: list[str], span: Span) -> str:
    return "\n".join(lines[span.start - 1 : span.end])


def _tokens(lines: list[str], start: int, end: int) -> int:
    return count_tokens("\n".join(lines[start - 1 : end]))


def _split_lines(lines: list[str], span: Span, budget: Budget) -> list[Span]:
    """Cut an oversized span into consecutive windows under the budget, at line boundaries.

    Prefers to cut at a blank line or a dedent so that pieces stay readable.
    """
    out: list[Span] = []
    start = span.start
    part = 1
    while start <= span.end:
        total, end, last_good = 0, start, None
        while end <= span.end:
            total += count_tokens(lines[end - 1]) + 1
            if total > budget.max_tokens and end > start:
                end -= 1
                break
            if not lines[end - 1].strip():
                last_good = end
            end += 1
        else:
            end = span.end
        if end < span.end and last_good and last_good > start + (end - start) // 2:
            end = last_good
        out.append(Span(start, end, span.kind, f"{span.title} (part {part})"))
        part += 1
        start = end + 1
    return out


def _owner(span: Span, split: frozenset[str]) -> str:
    """The split class a span belongs to ("" for module level: whole classes included)."""
    name = span.title.split(".")[0].split(" (part")[0].split(",")[0]
    return name if span.kind in ("class", "method") and name in split else ""


def _fit(
    lines: list[str], spans: list[Span], budget: Budget, split: frozenset[str] = frozenset()
) -> list[Span]:
    """Split spans over the budget; merge runs of small neighbours up to the budget."""
    sized: list[Span] = []
    for span in spans:
        if _tokens(lines, span.start, span.end) > budget.max_tokens:
            sized.extend(_split_lines(lines, span, budget))
        else:
            sized.append(span)
    merged: list[Span] = []
    for span in sized:
        if merged:
            prev = merged[-1]
            small = (
                min(_tokens(lines, prev.start, prev.end), _tokens(lines, span.start, span.end))
                < budget.min_tokens
            )
            # Never merge across a class boundary: a class's pieces merge with each other,
            # module-level pieces with each other.
            owner = _owner(span, split)
            fits = _tokens(lines, prev.start, span.end) <= budget.max_tokens
            if small and fits and _owner(prev, split) == owner:
                kind = prev.kind if prev.kind == span.kind else ("class" if owner else "group")
                merged[-1] = Span(prev.start, span.end, kind, f"{prev.title}, {span.title}")
                continue
        merged.append(span)
    return merged


def _node_start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _python_spans(text: str, budget: Budget) -> list[Span] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.split("\n")
    spans: list[Span] = []
    split: set[str] = set()  # classes cut into header + methods
    header_start: int | None = None
    header_end = 0

    def flush_header() -> None:
        nonlocal header_start
        if header_start is not None:
            spans.append(Span(header_start, header_end, "module_header", "module"))
            header_start = None

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            flush_header()
            start, end = _node_start(node), node.end_lineno or node.lineno
            if isinstance(node, ast.ClassDef) and _tokens(lines, start, end) > budget.max_tokens:
                spans.extend(_class_spans(node, lines, budget))
                split.add(node.name)
            else:
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                spans.append(Span(start, end, kind, node.name))
        else:
            if header_start is None:
                header_start = _node_start(node)
            header_end = node.end_lineno or node.lineno
    flush_header()
    return _fit(lines, spans, budget, frozenset(split))


def _class_spans(node: ast.ClassDef, lines: list[str], budget: Budget) -> list[Span]:
    """A large class: its header (signature, docstring, attributes) then one span per method."""
    spans: list[Span] = []
    start = _node_start(node)
    header_end = node.lineno
    for child in node.body:
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        header_end = child.end_lineno or child.lineno
    spans.append(Span(start, header_end, "class", node.name))
    pending_start: int | None = None
    for child in node.body:
        child_end = child.end_lineno or child.lineno
        if child_end <= header_end:
            continue
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if pending_start is not None:
                spans.append(Span(pending_start, _node_start(child) - 1, "class", node.name))
                pending_start = None
            kind = "method" if not isinstance(child, ast.ClassDef) else "class"
            spans.append(Span(_node_start(child), child_end, kind, f"{node.name}.{child.name}"))
        elif pending_start is None:
            pending_start = _node_start(child)
    if pending_start is not None:
        spans.append(Span(pending_start, node.end_lineno or pending_start, "class", node.name))
    return spans


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _prose_spans(text: str, budget: Budget, kind: str) -> list[Span]:
    """Sections by heading; a fenced code block is never cut (it may exceed the budget)."""
    lines = text.split("\n")
    heads: list[tuple[int, str]] = []
    in_fence = False
    for i, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _MD_HEADING.match(line)
        if m:
            heads.append((i, m.group(2)))
        elif (
            i < len(lines)
            and line.strip()
            and _RST_UNDERLINE.match(lines[i])
            and len(lines[i].strip()) >= len(line.strip())
        ):
            heads.append((i, line.strip()))
    starts = [1] + [h for h, _ in heads if h != 1]
    titles = {h: t for h, t in heads}
    sections: list[Span] = []
    for n, start in enumerate(starts):
        end = (starts[n + 1] - 1) if n + 1 < len(starts) else len(lines)
        while end > start and not lines[end - 1].strip():
            end -= 1
        if any(line.strip() for line in lines[start - 1 : end]):
            sections.append(Span(start, end, kind, titles.get(start, "introduction")))
    out: list[Span] = []
    for span in sections:
        if _tokens(lines, span.start, span.end) > budget.max_tokens:
            out.extend(_split_prose(lines, span, budget))
        else:
            out.append(span)
    return _merge_small(lines, out, budget)


def _split_prose(lines: list[str], span: Span, budget: Budget) -> list[Span]:
    """Cut at blank lines outside code fences; a code block stays whole."""
    blocks: list[tuple[int, int]] = []
    start, in_fence = span.start, False
    for i in range(span.start, span.end + 1):
        line = lines[i - 1]
        if _FENCE.match(line):
            in_fence = not in_fence
        if not line.strip() and not in_fence and i > start:
            blocks.append((start, i - 1))
            start = i + 1
    if start <= span.end:
        blocks.append((start, span.end))
    out: list[Span] = []
    cur_start: int | None = None
    cur_end = 0
    part = 1
    for b_start, b_end in blocks:
        if cur_start is not None and _tokens(lines, cur_start, b_end) > budget.max_tokens:
            out.append(Span(cur_start, cur_end, span.kind, f"{span.title} (part {part})"))
            part += 1
            cur_start = None
        if cur_start is None:
            cur_start = b_start
        cur_end = b_end
    if cur_start is not None:
        out.append(Span(cur_start, cur_end, span.kind, f"{span.title} (part {part})"))
    # A single paragraph (not code) larger than the budget is cut by lines.
    final: list[Span] = []
    for s in out:
        text = _text(lines, s)
        if _tokens(lines, s.start, s.end) > budget.max_tokens * 2 and "```" not in text:
            final.extend(_split_lines(lines, s, budget))
        else:
            final.append(s)
    return final


def _merge_small(lines: list[str], spans: list[Span], budget: Budget) -> list[Span]:
    merged: list[Span] = []
    for span in spans:
        if merged:
            prev = merged[-1]
            small = _tokens(lines, prev.start, prev.end) < budget.min_tokens
            if small and _tokens(lines, prev.start, span.end) <= budget.max_tokens:
                merged[-1] = Span(prev.start, span.end, prev.kind, prev.title)
                continue
        merged.append(span)
    return merged


def _whole_or_split(text: str, budget: Budget, kind: str, title: str) -> list[Span]:
    """Q&A and issues: one chunk when it fits; else the head section repeated is not needed
    because every part keeps the document title."""
    lines = text.split("\n")
    span = Span(1, len(lines), kind, title)
    if count_tokens(text) <= budget.max_tokens:
        return [span]
    return _split_prose(lines, span, budget)


def chunk_spans(text: str, language: str, title: str, budget: Budget) -> list[Span]:
    """Spans for a cleaned text; pure, so results are cached by content hash."""
    if not text.strip():
        return []
    if language == "python":
        spans = _python_spans(text, budget)
        if spans is not None:
            return spans
        return _split_lines(text.split("\n"), Span(1, text.count("\n") + 1, "text", title), budget)
    if language in ("markdown", "rst", "html"):
        return _prose_spans(text, budget, "section")
    if language in ("qa", "issue"):
        return _whole_or_split(text, budget, language, title)
    return _prose_spans(text, budget, "text")


_CITED_METADATA = ("repo", "path", "stars", "score", "tags", "example", "accepted")


def chunk_metadata(doc: Document) -> Metadata:
    """The document metadata every chunk carries (what a citation or a filter needs)."""
    meta: Metadata = {k: doc.metadata[k] for k in _CITED_METADATA if k in doc.metadata}
    if doc.licence:
        meta["licence"] = doc.licence
    return meta


def make_chunks(doc: Document, text: str, language: str, spans: list[Span]) -> list[Chunk]:
    lines = text.split("\n")
    base = chunk_metadata(doc)
    chunks = []
    for span in spans:
        body = _text(lines, span).strip("\n")
        if not body.strip():
            continue
        plain = span.title in ("module", "introduction")
        chunks.append(
            Chunk(
                id=chunk_id(body),
                document_id=doc.id,
                source=doc.source,
                uri=doc.uri,
                title=doc.title if plain else f"{doc.title}: {span.title}",
                text=body,
                language=language,
                start_line=span.start,
                end_line=span.end,
                kind=span.kind,
                # tokens: the size the budget was measured in, for context packing downstream.
                metadata={**base, "tokens": count_tokens(body)},
            )
        )
    return chunks
