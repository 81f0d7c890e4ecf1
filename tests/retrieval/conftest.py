"""Fixtures for retrieval tests: real stdlib function chunks, one torch MiniLM and one ONNX
export of it per session."""

from __future__ import annotations

import ast
import sysconfig
import textwrap
from pathlib import Path

import pytest

from codegen.corpus.model import Chunk
from codegen.retrieval.embedders import MiniLMEmbedder, OnnxMiniLMEmbedder
from codegen.retrieval.evaluation import chunk_id
from codegen.settings import get_settings

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


@pytest.fixture(scope="session")
def onnx_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache dir holding the ONNX export of the packaged MiniLM, made once per session."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    OnnxMiniLMEmbedder(cache_dir=str(cache)).embed_query("warm up: export the model")
    return cache


@pytest.fixture(scope="session")
def onnx_minilm(onnx_model_cache: Path) -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(cache_dir=str(onnx_model_cache))


@pytest.fixture
def home_with_exported_model(
    isolated_home: Path, onnx_model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The test's CODEGEN_HOME with the session's export as its model cache (as the user's
    cache would be after a first export), so that every Dagster-level test does not pay for
    its own export."""
    monkeypatch.setenv("CODEGEN_RETRIEVAL__MODEL_CACHE_DIR", str(onnx_model_cache))
    get_settings.cache_clear()
    return isolated_home
