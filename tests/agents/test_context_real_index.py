"""retrieved_context over the real index (LanceDB + MiniLM) feeding the programmer's prompt."""

from __future__ import annotations

import ast
import functools
import sysconfig
import textwrap
from pathlib import Path

import pytest
from dagster import AssetKey, instance_for_test, materialize

from codegen.agents.llm import LLMClient, Meter
from codegen.agents.roles import write_code
from codegen.agents.spec import Spec
from codegen.assets import codegen
from codegen.assets.resources import LLMResource, RetrieverResource, SettingsResource
from codegen.corpus.model import Chunk
from codegen.replay.scripted import PRIMES_SOLUTION, ScriptedOpenAIServer
from codegen.requests.store import RequestStore
from codegen.retrieval.embedders import MiniLMEmbedder
from codegen.retrieval.index import IndexRetriever, sync_index
from codegen.retrieval.lancedb_store import LanceDBStore
from codegen.retrieval.types import Retriever
from codegen.settings import get_settings

STDLIB = Path(sysconfig.get_paths()["stdlib"])

DEDENT_SPEC = {
    "purpose": "Remove any common leading whitespace from every line of a text.",
    "functions": [
        {
            "name": "strip_common_indent",
            "signature": "def strip_common_indent(text: str) -> str",
            "description": "Remove common leading whitespace from every line in text.",
        }
    ],
    "behaviours": ["lines that are only whitespace are normalised to newlines"],
    "edge_cases": ["empty text returns empty text"],
    "examples": [{"call": "strip_common_indent('  a\\n  b')", "expected": "'a\\nb'"}],
    "constraints": ["standard library only"],
}


@functools.cache
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()  # loaded once: it takes seconds


class RealIndexResource(RetrieverResource):
    """The real LanceDB index and MiniLM, sharing the embedder that built the index."""

    uri: str

    def get_retriever(self) -> Retriever | None:
        return IndexRetriever(LanceDBStore(uri=self.uri), minilm())


def stdlib_chunks(module: str) -> list[Chunk]:
    """One chunk per documented function of a real stdlib module, as the chunker cites them."""
    text = (STDLIB / module).read_text(encoding="utf-8")
    lines = text.splitlines()
    chunks = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node):
            code = textwrap.dedent("\n".join(lines[node.lineno - 1 : node.end_lineno]))
            chunks.append(
                Chunk(
                    id=f"{module}:{node.name}:{node.lineno}",
                    document_id=module,
                    source="local",
                    uri=f"file://{STDLIB / module}",
                    title=node.name,
                    text=code,
                    language="python",
                    start_line=node.lineno,
                    end_line=node.end_lineno or node.lineno,
                    kind="function",
                )
            )
    return chunks


@pytest.mark.slow
def test_programmer_gets_cited_chunks_from_the_real_index() -> None:
    settings = get_settings()
    chunks = stdlib_chunks("textwrap.py") + stdlib_chunks("shlex.py")
    sync_index(chunks, LanceDBStore(uri=settings.index_uri), minilm())

    with ScriptedOpenAIServer(script={"analyzer": [DEDENT_SPEC]}) as server:
        req = RequestStore(settings.requests_dir).add(
            "Strip the common indentation of a text.", {"context_token_budget": 600}
        )
        llm = LLMResource(base_url=server.base_url, cache_dir=None)
        with instance_for_test() as instance:
            instance.add_dynamic_partitions("requests", [req.id])
            result = materialize(
                [codegen.REQUEST_ASSETS["spec"], codegen.REQUEST_ASSETS["context"]],
                partition_key=req.id,
                instance=instance,
                resources={
                    "settings": SettingsResource(),
                    "llm": llm,
                    "retriever": RealIndexResource(uri=settings.index_uri),
                },
            )
            assert result.success
            context = result.output_for_node("retrieved_context")
            [event] = [
                e
                for e in result.get_asset_materialization_events()
                if e.asset_key == AssetKey("retrieved_context")
            ]
        chunks_out = context.chunks  # the asset stores its own step result, a ContextResult
        assert chunks_out, "the index should answer a dedent spec"
        assert chunks_out[0].uri.endswith("textwrap.py")
        assert any("def dedent" in c.text for c in chunks_out)
        assert sum(c.tokens for c in chunks_out) <= 600
        assert len({c.text for c in chunks_out}) == len(chunks_out)
        citations = event.materialization.metadata["citations"].value
        assert citations == [c.citation for c in chunks_out]
        assert all("#L" in c for c in citations)

        # The same function the programmer_draft op calls puts them in its prompt, cited.
        server.enqueue("programmer", PRIMES_SOLUTION)
        client = LLMClient(base_url=server.base_url, api_key="sk-test")
        write_code(client, Meter(), Spec.model_validate(DEDENT_SPEC), chunks_out)
        prompt = server.requests_for("programmer")[0].prompt_text
        assert f"# {chunks_out[0].citation}" in prompt and "def dedent" in prompt
