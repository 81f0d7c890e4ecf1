"""The CodeSearchNet-style evaluation set and the metrics."""

from __future__ import annotations

from pathlib import Path

from codegen.corpus.model import Chunk
from codegen.retrieval.evaluation import (
    EvalQuery,
    build_eval_set,
    evaluate,
    first_sentence,
    functions_from_file,
)
from codegen.retrieval.types import SearchHit

SOURCE = '''
def documented(a, b):
    """Add two numbers together and return the sum.

    More words here.
    """
    return a + b


class Thing:
    @property
    def size(self):
        """Return the size of the thing in bytes."""
        return 4

    def bare(self):
        return None

    def only_doc(self):
        """Nothing but a docstring here at all."""
'''


def test_first_sentence() -> None:
    assert first_sentence("Add two numbers.  Then more.") == "Add two numbers."
    assert first_sentence("Summary line\n\nDetails.") == "Summary line"
    assert first_sentence("  Spans\n   two lines. Rest") == "Spans two lines."


def test_functions_lose_their_docstring_and_keep_decorators(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    pairs = {c.title: (c, d) for c, d in functions_from_file(tmp_path / "m.py", tmp_path)}
    assert set(pairs) == {"documented", "size", "bare"}  # docstring-only bodies are skipped
    code, doc = pairs["documented"]
    assert "Add two numbers" not in code.text and "return a + b" in code.text
    assert doc.startswith("Add two numbers")
    assert pairs["size"][0].text.lstrip().startswith("@property")
    assert pairs["bare"][1] == ""
    assert code.uri == "stdlib://m.py" and code.start_line == 2


def _chunk(cid: str) -> Chunk:
    return Chunk(cid, "d", "s", "u", cid, f"code {cid}", "python", 1, 2, "function")


def test_ambiguous_queries_are_left_out() -> None:
    pairs = [
        (_chunk("a"), "Return the value of the setting."),
        (_chunk("b"), "Return the value of the setting."),  # same query, two answers
        (_chunk("c"), "Compute a checksum of the given bytes."),
        (_chunk("d"), "Short."),  # too short to be a query
        (_chunk("e"), ""),  # undocumented: a distractor only
    ]
    corpus, queries = build_eval_set(pairs, max_queries=10)
    assert {c.id for c in corpus} == {"a", "b", "c", "d", "e"}
    assert queries == [EvalQuery("compute a checksum of the given bytes.", "c")]


class _Fixed:
    def __init__(self, ranking: list[str]) -> None:
        self.ranking = ranking

    def search(self, query: str, k: int = 8, *, source=None, mode: str = "hybrid"):  # type: ignore[no-untyped-def]
        return [SearchHit(i, "u", 1, 1, 1.0, "") for i in self.ranking[:k]]


def test_metrics() -> None:
    queries = [EvalQuery("q1", "x"), EvalQuery("q2", "y"), EvalQuery("q3", "zz")]
    scores = evaluate(_Fixed(["x", "y"]), queries, ["vector"])["vector"]
    assert scores.mrr_at_10 == round((1 + 0.5 + 0) / 3, 4)
    assert scores.recall_at_1 == round(1 / 3, 4)
    assert scores.recall_at_10 == round(2 / 3, 4)


def test_quality_check_queries_come_from_indexed_methods_too() -> None:
    from codegen.retrieval.evaluation import queries_from_chunks

    method = Chunk(
        "m1",
        "d",
        "local",
        "file:///x.py",
        "C.f",
        '    def f(self):\n        """Return the frobnicated value of self."""\n        return 1\n',
        "python",
        10,
        12,
        "method",
    )
    prose = Chunk("p1", "d", "docs", "u", "t", "Some prose.", "markdown", 1, 1, "section")
    assert queries_from_chunks([method, prose]) == [
        EvalQuery("return the frobnicated value of self.", "m1")
    ]
