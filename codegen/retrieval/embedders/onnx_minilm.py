"""The default embedder: MiniLM int8 under ONNX Runtime, exported once per machine user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from codegen.retrieval.embedders.base import (
    EmbedderConfig,
    EmbedderError,
    available_cpus,
    file_sha256,
)
from codegen.retrieval.embedders.minilm import (
    MINILM_DIM,
    MODEL_LOCK,
    encode_capped,
    fast_tokenizer,
    token_batches,
    verified_minilm_dir,
)
from codegen.retrieval.embedders.onnx_export import (
    ONNX_RECIPE_VERSION,
    calibration_digest,
    export_minilm_onnx,
    package_version,
)


def onnx_session_options(threads: int) -> Any:
    """How the default runs its graph (also what benchmarks/embedder_ceiling.py profiles)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1  # one operator at a time; threads go to its kernels
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return options


@lru_cache(maxsize=2)
def onnx_session(path: str, threads: int) -> Any:
    import onnxruntime as ort

    options = onnx_session_options(threads)
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Across processes: one exporter at a time per cache entry; the others wait, then find
    its finished file."""
    import fcntl

    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# (path, mtime, size, sha256) of export files this process has hashed and found complete.
_VERIFIED_EXPORTS: set[tuple[str, int, int, str]] = set()


@dataclass
class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the packaged, hash-verified weights, run by ONNX Runtime.

    The ONNX graph is exported here from those weights (nothing is downloaded), int8
    quantized, and cached under ``cache_dir/models`` keyed by the weights hash, the recipe
    (its version, the calibration texts' digest) and the exporter's versions. ``cache_dir``
    is the user's cache by default (``Settings.model_cache_dir``), so every CODEGEN_HOME of a
    machine user shares one export. An entry counts only with its manifest, written last,
    naming the model file's sha256: a partial or damaged file is exported again.

    Texts are tokenized up front and embedded in batches of similar token length with
    little padding (``token_batches``). Activation scales are constants (recipe 3), so a
    text's vector does not depend on its batch. Same model, same pooling as
    ``MiniLMEmbedder``; int8 moves vectors by a little, which the retrieval benchmark
    measures (CHANGELOG.md#retrieval).
    """

    cache_dir: str
    quantize: bool = True
    # The length all-MiniLM-L6-v2 was fine-tuned at. sentence-transformers' 256 (torch's
    # reference) costs up to twice the arithmetic on long chunks and ranked no better on the
    # retrieval benchmark (CHANGELOG.md#retrieval); a longer chunk's tail still reaches
    # hybrid search through BM25.
    max_seq_length: int = 128
    batch_tokens: int = 8192  # padded tokens per batch: bounds memory, keeps kernels busy
    max_batch: int = 128
    # A batch past min_batch texts closes before its padding passes this share of its real
    # tokens: short stdlib functions padded to the longest of 128 were 57 % padding.
    padding_slack: float = 0.1
    min_batch: int = 8
    threads: int = 0  # 0: every CPU this process may run on
    model_dir: str | None = None

    def __post_init__(self) -> None:
        path, digest = verified_minilm_dir(self.model_dir)
        self._path, self._digest = str(path), digest

    @property
    def _kind(self) -> str:
        return f"int8-cal{calibration_digest()}" if self.quantize else "fp32"

    @property
    def export_dir(self) -> Path:
        exporter = f"torch{package_version('torch')}-onnx{package_version('onnx')}"
        name = f"minilm-onnx-{self._digest[:16]}-r{ONNX_RECIPE_VERSION}-{self._kind}-{exporter}"
        return Path(self.cache_dir) / "models" / name

    @property
    def identity(self) -> str:
        return (
            f"minilm-onnx:all-MiniLM-L6-v2@{self._digest[:16]}:seq{self.max_seq_length}"
            f":{self._kind}:r{ONNX_RECIPE_VERSION}"
        )

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def provenance(self) -> dict[str, str]:
        return {
            "runtime": f"onnxruntime {package_version('onnxruntime')}",
            "device": "cpu",
            "precision": "int8" if self.quantize else "fp32",
        }

    def _complete(self, model: Path, manifest: Path) -> bool:
        try:
            recorded = str(json.loads(manifest.read_text())["sha256"])
            stat = model.stat()
        except (OSError, ValueError, KeyError, TypeError):
            return False
        key = (str(model), stat.st_mtime_ns, stat.st_size, recorded)
        if key not in _VERIFIED_EXPORTS and file_sha256(model) == recorded:
            _VERIFIED_EXPORTS.add(key)  # hashed once per process, not on every query
        return key in _VERIFIED_EXPORTS

    def _files(self) -> tuple[Path, Path]:
        """The export's model file and its manifest (written last)."""
        return self.export_dir / "model.onnx", self.export_dir / "manifest.json"

    def exported(self) -> bool:
        """Whether the cache holds a complete export (nothing is exported)."""
        return self._complete(*self._files())

    def ensure_export(self) -> Path:
        """The cached model file, exported first if no complete one is there."""
        folder = self.export_dir
        model, manifest = self._files()
        if self._complete(model, manifest):
            return model
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with _exclusive(folder / ".lock"):
                if self._complete(model, manifest):  # another process exported meanwhile
                    return model
                manifest.unlink(missing_ok=True)
                # Only the lock's holder writes temp files here: any found now are an
                # exporter's that was killed (make run stopped mid-export, say).
                for stale in folder.glob(".*"):
                    if stale.name != ".lock":
                        stale.unlink(missing_ok=True)
                export_minilm_onnx(Path(self._path), model, self.quantize)
                record = {"sha256": file_sha256(model), "identity": self.identity}
                tmp = manifest.with_name(f".{manifest.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(record) + "\n")
                tmp.replace(manifest)
        except Exception as exc:
            raise EmbedderError(f"exporting MiniLM to ONNX failed: {exc}") from exc
        return model

    def _session(self) -> Any:
        with MODEL_LOCK:
            model = self.ensure_export()
            try:
                return onnx_session(str(model), self.threads or available_cpus())
            except Exception as exc:  # the file matches its manifest yet does not load
                raise EmbedderError(
                    f"cannot load the ONNX model at {model} ({exc}); delete "
                    f"{model.parent} to export it again"
                ) from exc

    def embed_documents(self, texts: Sequence[str], *, session: Any = None) -> np.ndarray:
        """``session``: another ONNX Runtime session of the same model (a profiling one)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = session or self._session()
        tokenizer = fast_tokenizer(self._path, self.max_seq_length)
        encodings = encode_capped(tokenizer, texts, self.max_seq_length)
        for batch, ids, mask in token_batches(
            encodings,
            batch_tokens=self.batch_tokens,
            max_batch=self.max_batch,
            padding_slack=self.padding_slack,
            min_batch=self.min_batch,
        ):
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[batch] = session.run(["embedding"], feeds)[0]
        return out  # the graph ends in sentence-transformers' L2 normalisation

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def export_in_background(config: EmbedderConfig) -> subprocess.Popen[bytes] | None:
    """Start the one-off ONNX export of ``config``'s model in a child process, so that it
    overlaps other work (the corpus stages before the first index, the UI starting); None when
    the embedder exports nothing or its export is cached. The child holds the export's lock:
    an embedder that needs the model meanwhile waits for it and then loads its file. Its output
    is discarded: should it fail, that embedder exports again itself and says why."""
    if config.name != "minilm" or not config.cache_dir:
        return None
    if OnnxMiniLMEmbedder(cache_dir=config.cache_dir).exported():
        return None
    return subprocess.Popen(
        [sys.executable, "-m", __name__, config.cache_dir],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


if __name__ == "__main__":  # export_in_background's child: python -m ... CACHE_DIR
    OnnxMiniLMEmbedder(cache_dir=sys.argv[1]).ensure_export()
