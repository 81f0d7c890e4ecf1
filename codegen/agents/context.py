"""Retrieved context for the programmer: spec -> queries -> deduplicated, cited, budgeted chunks.

Works against the ``codegen.retrieval.types.Retriever`` protocol only; an empty index (or no
retriever at all) yields no context, never an error.
"""

from __future__ import annotations

from codegen.agents.records import ContextChunk
from codegen.agents.spec import Spec
from codegen.retrieval.types import Retriever, SearchHit


def estimate_tokens(text: str) -> int:
    # About four characters per token for English and code; only used for budgeting.
    return max(1, (len(text) + 3) // 4)


def queries_for(spec: Spec, limit: int = 4) -> list[str]:
    """A few focused queries: the purpose, a program's input and output, then each function's
    signature and contract, each class's description and methods."""
    queries: list[str] = []
    purpose = spec.purpose.strip()
    if purpose:
        queries.append(purpose)
    if spec.program is not None:
        program = spec.program
        queries.append(f"read {program.input_format} print {program.output_format}".strip())
    for fn in spec.functions:
        text = f"{fn.signature} {fn.description}".strip()
        if text:
            queries.append(text)
    for cls in spec.classes:
        methods = ", ".join(m.name for m in cls.methods)
        queries.append(f"class {cls.name}: {cls.description} {methods}".strip())
    constraints = " ".join(spec.constraints)
    if constraints:
        queries.append(constraints)
    seen: set[str] = set()
    unique = [q for q in queries if not (q in seen or seen.add(q))]
    return [q[:500] for q in unique[:limit]]


def retrieve_context(
    retriever: Retriever | None,
    spec: Spec,
    *,
    top_k: int = 8,
    token_budget: int = 1500,
) -> list[ContextChunk]:
    """Top chunks over all queries, best score first, each once, cut to ``token_budget``."""
    if retriever is None or token_budget <= 0:
        return []
    best: dict[str, SearchHit] = {}
    for query in queries_for(spec):
        for hit in retriever.search(query, k=top_k):
            key = hit.chunk_id or hit.citation
            if key not in best or hit.score > best[key].score:
                best[key] = hit
    chosen: list[ContextChunk] = []
    seen_text: set[str] = set()
    used = 0
    for hit in sorted(best.values(), key=lambda h: h.score, reverse=True):
        text = hit.text.strip()
        if not text or text in seen_text:  # same code indexed under two paths
            continue
        cost = estimate_tokens(text)
        if used + cost > token_budget:
            continue  # a smaller later chunk may still fit
        seen_text.add(text)
        used += cost
        chosen.append(
            ContextChunk(
                citation=hit.citation,
                uri=hit.uri,
                source=hit.source,
                score=round(float(hit.score), 4),
                tokens=cost,
                text=text,
            )
        )
        if len(chosen) >= top_k:
            break
    return chosen
