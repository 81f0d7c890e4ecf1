"""Fixtures for retrieval tests: real stdlib function chunks and one MiniLM per session."""

from __future__ import annotations

import ast
import sysconfig
import textwrap
from pathlib import Path

import pytest

from corpus.model import Chunk
from retrieval.embedders import MiniLMEmbedder
from retrieval.evaluation import chunk_id

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["textwrap.py", "shlex.py", "fnmatch.py", "base64.py", "heapq.py", "calendar.py"]


def function_chunks(modules: list[str] = MODULES, source: str = "local") -> list[Chunk]:
    """Every documented function of a few stdlib modules, docstring kept, as the chunker
    would emit them (one chunk per function, citable by file and line span)."""
    chunks: dict[str, Chunk] = {}
    for name in modules:
        text = (STDLIB / name).read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef) or not ast.get_docstring(node):
                continue
            code = textwrap.dedent("\n".join(lines[node.lineno - 1 : node.end_lineno]))
            chunk = Chunk(
                id=chunk_id(f"{name}:{code}"),
                document_id=chunk_id(name),
                source=source,
                uri=f"file://{STDLIB / name}",
                title=node.name,
                text=code,
                language="python",
                start_line=node.lineno,
                end_line=node.end_lineno or node.lineno,
                kind="function",
            )
            chunks[chunk.id] = chunk
    return list(chunks.values())


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def stdlib_chunks() -> list[Chunk]:
    return function_chunks()
