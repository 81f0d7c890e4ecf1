"""The embedding stage of `codegen corpus build` on a GPU: chunks per second for tokenize +
embed + vectors back on the host, with the bare model's rate in the same run as the ceiling.
Prints JSON.

The corpus is the standard library cut by the project's own chunker, repeated with distinct
ids up to --chunks. The stage is the one the index asset runs: ``DeviceMiniLMEmbedder``
(the packaged MiniLM weights in fp16, 128-token cap, mean pooling, texts cut before the cap
and tokenized on a worker thread while the device embeds), called with the batches
``sync_index`` hands it. It needs torch, transformers, tokenizers and numpy only, so it runs
on a GPU machine without the rest of the project's dependencies; the weights travel as a
converted fp16 copy (about 45 MB) made here first:

    .venv/bin/python -m benchmarks.corpus.gpu_corpus_build --prepare .codegen/bench/minilm-fp16
    python -m benchmarks.corpus.gpu_corpus_build --model-dir .codegen/bench/minilm-fp16 \
        --chunks 200000

Without a GPU it says so in one line and exits 3 (``--device cpu`` runs the same pipeline
on the CPU, for a check of the script, not a figure). Writing the index is timed apart, on
this machine (LanceDB is not on the GPU machine):

    .venv/bin/python -m benchmarks.corpus.gpu_corpus_build --store-only --chunks 200000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from codegen.corpus.chunk import Budget, chunk_spans, make_chunks
from codegen.corpus.model import Chunk, Document
from codegen.retrieval.embedders import (
    DeviceMiniLMEmbedder,
    encode_capped,
    fast_tokenizer,
    token_batches,
    write_converted_copy,
)

NO_GPU_EXIT = 3


def log(msg: str) -> None:
    print(f"[gpu_corpus_build] {msg}", file=sys.stderr, flush=True)


def stdlib_chunks(count: int) -> list[Chunk]:
    """The standard library's Python files through the project's chunker, repeated with
    distinct ids (a repeat's text is the same, so its cost is too) up to ``count``."""
    root = Path(sysconfig.get_paths()["stdlib"])
    base: list[Chunk] = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = str(path.relative_to(root))
        doc = Document(
            id=rel, source="local", uri=f"file://{path}", title=rel, text=text, language="python"
        )
        base += make_chunks(doc, text, "python", chunk_spans(text, "python", rel, Budget()))
        if len(base) >= count:
            break
    base = list({c.id: c for c in base}.values())  # the same text is the same id (sync_index)
    chunks = []
    for i in range(count):
        chunk = base[i % len(base)]
        chunks.append(dataclasses.replace(chunk, id=f"{chunk.id}-{i // len(base)}"))
    return chunks


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    log(f"{label}: {seconds:.2f} s")
    return value, seconds


def tokenize_rate(embedder: DeviceMiniLMEmbedder, texts: list[str]) -> float:
    """Chunks per second of the tokenizing stage alone, in the embedder's own groups."""
    _, seconds = timed(
        "tokenize only",
        lambda: [
            embedder.tokenize(texts[s : s + embedder.group_size])
            for s in range(0, len(texts), embedder.group_size)
        ],
    )
    return len(texts) / seconds


def whole_text_tokenize_rate(embedder: DeviceMiniLMEmbedder, texts: list[str]) -> float:
    """The same stage tokenizing each whole text and truncating after (the baseline the cut
    before the cap is measured against), with a check that both give the same ids."""
    tokenizer = fast_tokenizer(embedder.model_path, embedder.max_seq_length)
    groups = range(0, len(texts), embedder.group_size)

    def whole_group(start: int) -> list[Any]:
        encodings = tokenizer.encode_batch(texts[start : start + embedder.group_size])
        batches = token_batches(
            encodings,
            batch_tokens=embedder.batch_tokens,
            max_batch=embedder.max_batch,
            padding_slack=0.1,
            min_batch=8,
        )
        list(batches)  # the same batch assembly as the embedder's own tokenize()
        return encodings

    whole, seconds = timed("tokenize whole texts", lambda: [whole_group(s) for s in groups])
    sample = texts[: embedder.group_size]
    capped = encode_capped(tokenizer, sample, embedder.max_seq_length)
    if [e.ids for e in capped] != [e.ids for e in whole[0]]:
        raise SystemExit("gpu_corpus_build: the cut text gave other tokens than the whole text")
    return len(texts) / seconds


def bare_model_rate(embedder: DeviceMiniLMEmbedder, texts: list[str], batch: int) -> float:
    """Texts per second of the model alone: full 128-token batches already on the device,
    forward and pooling, nothing else (the ceiling of the stage)."""
    import torch

    (_, ids, _), *_ = embedder.tokenize(texts[:batch])
    width = embedder.max_seq_length
    ids = np.pad(ids, ((0, 0), (0, width - ids.shape[1])), constant_values=0)[:, :width]
    ids_t = torch.from_numpy(ids).to(embedder.device)
    mask_t = torch.ones_like(ids_t)
    model = embedder.model()
    rounds = max(3, 20_000 // batch) if embedder.device.startswith("cuda") else 2

    def run() -> None:
        with torch.inference_mode():
            for _ in range(rounds):
                hidden = model(input_ids=ids_t, attention_mask=mask_t).last_hidden_state
                hidden.float().mean(1)
        if embedder.device.startswith("cuda"):
            torch.cuda.synchronize()

    run()  # warm-up: kernels chosen, memory pooled
    _, seconds = timed("bare model", run)
    return rounds * batch / seconds


def embed_stage(embedder: DeviceMiniLMEmbedder, texts: list[str]) -> tuple[np.ndarray, float]:
    """Tokenize + embed + vectors on the host, in sync_index's batches, longest first as
    sync_index orders them."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    ordered = [texts[i] for i in order]
    embedder.embed_documents(ordered[:2048])  # warm-up

    def run() -> np.ndarray:
        return np.concatenate(
            [
                embedder.embed_documents(ordered[s : s + embedder.index_batch_size])
                for s in range(0, len(ordered), embedder.index_batch_size)
            ]
        )

    vectors, seconds = timed("tokenize + embed + to host", run)
    return vectors, seconds


def store_stage(chunks: list[Chunk]) -> dict[str, float]:
    """Rows per second of writing the index (LanceDB, as sync_index writes it) and the
    seconds of its refresh (keyword index, ANN index), with random unit vectors."""
    from codegen.retrieval.lancedb_store import LanceDBStore

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceDBStore(uri=str(Path(tmp) / "index"))
        store.reset("benchmark", 384)
        started = time.perf_counter()
        size = DeviceMiniLMEmbedder.index_batch_size  # the batches sync_index writes from a GPU
        for s in range(0, len(chunks), size):
            batch = chunks[s : s + size]
            vectors = rng.standard_normal((len(batch), 384)).astype(np.float32)
            store.upsert(batch, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
        upsert = time.perf_counter() - started
        started = time.perf_counter()
        store.refresh(None)
        refresh = time.perf_counter() - started
    return {
        "upsert_rows_per_s": round(len(chunks) / upsert, 1),
        "upsert_seconds": round(upsert, 2),
        "refresh_seconds": round(refresh, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--prepare", metavar="DIR", help="write the fp16 weights to DIR and stop")
    ap.add_argument("--model-dir", help="a copy made by --prepare (default: the packaged weights)")
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu, to check the script")
    ap.add_argument("--precision", default="fp16", choices=("fp16", "fp32"))
    ap.add_argument("--max-batch", type=int, default=1024, help="texts per device batch")
    ap.add_argument("--group", type=int, default=8192, help="texts tokenized together")
    ap.add_argument("--store-only", action="store_true", help="time writing the index (CPU)")
    ap.add_argument(
        "--tokenize-only",
        action="store_true",
        help="time the tokenizer alone, cut before the cap against whole texts (any device)",
    )
    args = ap.parse_args()
    if args.chunks < 1 or args.max_batch < 1 or args.group < 1:
        ap.error("--chunks, --max-batch and --group must be positive")

    if args.prepare:
        target = write_converted_copy(Path(args.prepare), args.precision)
        size = sum(p.stat().st_size for p in target.iterdir())
        print(json.dumps({"prepared": str(target), "bytes": size}))
        return 0
    report: dict = {"cpus": os.cpu_count(), "chunks": args.chunks}
    chunks, seconds = timed("chunking", lambda: stdlib_chunks(args.chunks))
    texts = [c.text for c in chunks]
    report["mean_chunk_chars"] = round(sum(map(len, texts)) / len(texts), 1)
    if args.store_only:
        report["store"] = store_stage(chunks)
        print(json.dumps(report, indent=2))
        return 0

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available() and not args.tokenize_only:
        print("gpu_corpus_build: no CUDA device here; nothing to measure", file=sys.stderr)
        return NO_GPU_EXIT
    embedder = DeviceMiniLMEmbedder(
        device=args.device,
        precision=args.precision,
        group_size=args.group,
        max_batch=args.max_batch,
        batch_tokens=args.max_batch * 128,
        model_dir=args.model_dir,
        converted_copy=bool(args.model_dir),
    )
    report.update(
        provenance=embedder.provenance,
        settings={
            "group": args.group,
            "max_batch": args.max_batch,
            "sync_batch": embedder.index_batch_size,
        },
    )
    tokenize = tokenize_rate(embedder, texts)
    whole = whole_text_tokenize_rate(embedder, texts)
    report.update(
        tokenize_chunks_per_s=round(tokenize, 1),
        tokenize_whole_texts_chunks_per_s=round(whole, 1),
        tokenize_speedup_from_the_cut=round(tokenize / whole, 2),
    )
    if args.tokenize_only:
        print(json.dumps(report, indent=2))
        return 0
    vectors, seconds = embed_stage(embedder, texts)
    end_to_end = len(texts) / seconds
    bare = bare_model_rate(embedder, texts, args.max_batch)
    norms = np.linalg.norm(vectors, axis=1)
    report.update(
        end_to_end_chunks_per_s=round(end_to_end, 1),
        bare_model_texts_per_s=round(bare, 1),
        end_to_end_share_of_bare_model=round(end_to_end / bare, 3),
        projected_2m_chunks_seconds=round(2_000_000 / end_to_end, 1),
        vectors_unit_norm=bool(np.allclose(norms, 1.0, atol=1e-3)),
        baseline="the bare model's rate in the same run (full 128-token batches on the device)",
    )
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
