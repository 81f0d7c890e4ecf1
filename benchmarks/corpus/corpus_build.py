"""Corpus build figures: a cold build of the default corpus, then incremental rebuilds.

Runs ``build_corpus`` (the same Dagster materializations ``codegen corpus build`` makes) on a
throwaway CODEGEN_HOME and DAGSTER_HOME, over a copy of the running interpreter's standard
library (the default source; copied so that one file can be changed). Baseline: the cold
build in the same run; the no-change and one-file-change rebuilds are reported against it.

    .venv/bin/python -m benchmarks.corpus.corpus_build [--subset N] > result.json

Prints one JSON object: documents, chunks, duplicates removed, secrets redacted,
throughput (documents/s, MB/s) and the rebuild times and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _copy_stdlib(dest: Path, subset: int | None) -> Path:
    from codegen.corpus.connectors import SKIPPED_DIRS, stdlib_path

    src = stdlib_path()
    ignore = shutil.ignore_patterns(*SKIPPED_DIRS, "*.pyc", "*.so")
    if subset is None:
        shutil.copytree(src, dest, ignore=ignore, symlinks=True)
        return dest
    dest.mkdir(parents=True)
    for f in sorted(src.glob("*.py"))[:subset]:
        shutil.copy2(f, dest / f.name)
    return dest


def _plant_secrets(tree: Path) -> list[str]:
    """One module with six kinds of secret; none may reach a chunk. Built at runtime so that
    this script itself holds no complete secret."""
    secrets = [
        "AKIA" + "J7QWERTYZ5ASDFGH",  # AWS access key id
        "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",  # GitHub token
        "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",  # Slack bot token
        "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",  # Stripe key
        "Zq8" + "vLm3Np7Rt2Wx9Ky4Hb6Jd1Fg5",  # high-entropy session secret
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",  # private key body
    ]
    (tree / "planted_secrets.py").write_text(
        f'"""Configuration with secrets planted by benchmarks/corpus/corpus_build.py."""\n\n'
        f'AWS_ACCESS_KEY_ID = "{secrets[0]}"\nGITHUB_TOKEN = "{secrets[1]}"\n'
        f'SLACK = "{secrets[2]}"\nSTRIPE = "{secrets[3]}"\nSESSION_SECRET = "{secrets[4]}"\n'
        f'KEY = """-----BEGIN PRIVATE KEY-----\n{secrets[5]}\n-----END PRIVATE KEY-----"""\n\n\n'
        "def settings() -> dict:\n    return {'aws': AWS_ACCESS_KEY_ID}\n"
    )
    return secrets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--subset", type=int, default=None, help="only the first N top-level modules"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="corpus-bench-"))
    home = work / "home"
    (home / "dagster_home").mkdir(parents=True)
    os.environ.update(
        CODEGEN_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster_home"),
        CODEGEN_CONFIG=str(home / "codegen.toml"),
    )
    tree = _copy_stdlib(work / "stdlib", args.subset)
    planted = _plant_secrets(tree)
    os.environ["CODEGEN_CORPUS__LOCAL_PATHS"] = json.dumps([str(tree)])

    from dagster import DagsterInstance

    from codegen.orchestration.launch import build_corpus
    from codegen.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    instance = DagsterInstance.get()

    def run(label: str) -> tuple[float, dict[str, dict[str, Any]]]:
        start = time.perf_counter()
        stages = build_corpus(instance, ["local"], settings)
        took = time.perf_counter() - start
        failed = [s.name for s in stages if not s.success]
        if failed:
            sys.exit(f"{label}: stages failed: {failed}")
        return took, {s.name: s.metadata for s in stages}

    cold_s, cold = run("cold")
    chunk_text = (home / "corpus" / "chunks.jsonl").read_text(encoding="utf-8")
    leaked = [x[:6] + "..." for x in planted if x in chunk_text]
    warm_s, warm = run("no change")
    # Change one function in one file: only that file's chunks may change.
    target = sorted(tree.rglob("*.py"))[len(list(tree.rglob("*.py"))) // 2]
    with target.open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef _benchmark_added_function(x):\n    return x + 1\n")
    one_s, one = run("one file changed")

    # Throughput in the text actually read (.py/.md/.rst files), not the whole tree.
    raw, clean, dedupe, chunks = (
        cold["raw_documents[local]"],
        cold["clean_documents"],
        cold["deduped_documents"],
        cold["chunks"],
    )
    size_mb = raw["characters"] / 1e6
    print(
        json.dumps(
            {
                "corpus": f"copy of {sys.version.split()[0]} stdlib at {tree}",
                "text_mb": round(size_mb, 2),
                "documents": raw["documents"],
                "documents_after_clean": clean["documents"],
                "dropped": clean["dropped"],
                "secrets_redacted": clean["secrets_redacted"],
                "exact_duplicates_removed": dedupe["exact_duplicates_removed"],
                "near_duplicates_removed": dedupe["near_duplicates_removed"],
                "chunks": chunks["chunks"],
                "planted_secrets": len(planted),
                "planted_secrets_in_chunks": leaked,
                "chunk_tokens": chunks["token_sizes"],
                "baseline": "cold build (empty CODEGEN_HOME) in this run",
                "cold_s": round(cold_s, 2),
                "documents_per_s": round(raw["documents"] / cold_s, 1),
                "mb_per_s": round(size_mb / cold_s, 3),
                "no_change_s": round(warm_s, 2),
                "no_change_ratio": round(warm_s / cold_s, 4),
                "no_change_new_chunks": warm["chunks"]["new_chunks"],
                "one_file_changed": str(target.relative_to(tree)),
                "one_file_s": round(one_s, 2),
                "one_file_ratio": round(one_s / cold_s, 4),
                "one_file_new_chunks": one["chunks"]["new_chunks"],
                "one_file_removed_chunks": one["chunks"]["removed_chunks"],
                "cpus": os.cpu_count(),
            },
            indent=1,
        )
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
