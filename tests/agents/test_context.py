"""The programmer's retrieved context: spec to queries, dedupe, citations, token budget."""

from __future__ import annotations

from codegen.agents.context import estimate_tokens, queries_for, retrieve_context
from codegen.agents.roles import format_context
from codegen.agents.spec import Spec
from codegen.replay.scripted import PRIMES_SPEC as PRIMES_SPEC_JSON
from codegen.retrieval.types import SearchHit

PRIMES_SPEC = Spec.model_validate(PRIMES_SPEC_JSON)


class KeywordRetriever:
    """A tiny real retriever over an in-memory list: score = shared words with the query."""

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits
        self.queries: list[str] = []

    def search(
        self, query: str, k: int = 8, *, source: str | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        self.queries.append(query)
        words = set(query.lower().split())
        scored = []
        for hit in self.hits:
            score = len(words & set(hit.text.lower().split()))
            if score:
                scored.append(
                    SearchHit(hit.chunk_id, hit.uri, hit.start_line, hit.end_line, score, hit.text)
                )
        return sorted(scored, key=lambda h: h.score, reverse=True)[:k]


def hit(chunk_id: str, uri: str, text: str) -> SearchHit:
    return SearchHit(chunk_id=chunk_id, uri=uri, start_line=1, end_line=9, score=0.0, text=text)


def test_queries_come_from_purpose_signatures_and_constraints() -> None:
    queries = queries_for(PRIMES_SPEC)
    assert queries[0] == PRIMES_SPEC.purpose
    assert any(q.startswith("def primes_up_to(n: int) -> list[int]") for q in queries)
    assert any("Sieve of Eratosthenes" in q for q in queries)
    assert len(queries) == len(set(queries)) <= 4


def test_chunks_are_deduplicated_cited_ranked_and_within_budget() -> None:
    sieve = "def sieve(n): primes up to n using the sieve of eratosthenes"
    corpus = [
        hit("a", "lib/sieve.py", sieve),
        hit("b", "vendored/sieve.py", sieve),  # the same code under another path
        hit("c", "lib/math_utils.py", "def is_prime(n): return all primes test"),
        hit("d", "lib/huge.py", "primes " * 4000),  # alone over the budget
    ]
    retriever = KeywordRetriever(corpus)
    chunks = retrieve_context(retriever, PRIMES_SPEC, top_k=8, token_budget=200)
    assert retriever.queries == queries_for(PRIMES_SPEC)
    texts = [c.text for c in chunks]
    assert texts.count(sieve) == 1
    assert "lib/huge.py#L1-L9" not in [c.citation for c in chunks]
    assert sum(c.tokens for c in chunks) <= 200
    assert chunks[0].text == sieve  # the best match comes first
    assert all(c.citation.endswith("#L1-L9") for c in chunks)
    assert [c.score for c in chunks] == sorted((c.score for c in chunks), reverse=True)
    # The programmer sees each chunk under its citation.
    rendered = format_context(chunks)
    assert f"# {chunks[0].citation}\n{sieve}" in rendered


def test_no_retriever_or_empty_index_means_no_context() -> None:
    assert retrieve_context(None, PRIMES_SPEC) == []
    assert retrieve_context(KeywordRetriever([]), PRIMES_SPEC) == []
    assert "No reference code" in format_context([])
    assert estimate_tokens("abcd" * 10) == 10
