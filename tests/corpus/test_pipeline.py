"""The corpus assets end to end on a real Dagster instance: incremental, killed-run safe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import DagsterInstance, instance_for_test

import codegen.settings as config
from codegen.corpus.model import Chunk
from codegen.corpus.store import chunks_path
from codegen.orchestration.launch import build_corpus

AWS_KEY = "AKIA" + "ZXCVBNMASDFGHJKL"
GH_TOKEN = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"


def make_tree(root: Path) -> Path:
    """A small package with a planted secret, an exact and a near duplicate, a binary file."""
    pkg = root / "pkg"
    (pkg / "examples").mkdir(parents=True)
    for i in range(6):
        funcs = "\n\n".join(
            f'def func_{i}_{j}(value: int) -> int:\n    """Return value plus {j}."""\n'
            # Constants differ per module: the modules are different code of one shape.
            + "\n".join(f"    value = value * {k + 10 * i} + {j}" for k in range(8))
            + "\n    return value"
            for j in range(5)
        )
        (pkg / f"mod{i}.py").write_text(f'"""Module {i}."""\n\nimport os\n\n\n{funcs}\n')
    (pkg / "copy_of_mod0.py").write_text((pkg / "mod0.py").read_text())  # exact duplicate
    (pkg / "near_mod1.py").write_text(
        (pkg / "mod1.py").read_text().replace("Return value plus 3.", "Return value + 3.")
    )
    (pkg / "codegen.settings.py").write_text(
        f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\nTOKEN = "{GH_TOKEN}"\n\n\ndef get():\n    return TOKEN\n'
    )
    (pkg / "examples" / "demo.py").write_text(
        'def demo():\n    """>>> demo()\n    1\n    """\n    return 1\n'
    )
    (pkg / "README.md").write_text("# Pkg\n\nIntro.\n\n## Usage\n\n```python\nimport pkg\n```\n")
    (pkg / "blob.py").write_bytes(b"\x00\x01\x02binary")
    return root


def use_tree(home: Path, tree: Path) -> None:
    (home / "codegen.toml").write_text(f'[corpus]\nlocal_paths = ["{tree}"]\n')
    config.get_settings.cache_clear()


def build(instance: DagsterInstance) -> dict[str, dict]:
    stages = build_corpus(instance, ["local"], config.get_settings())
    failed = [s.name for s in stages if not s.success]
    assert not failed, [(s.name, s.metadata) for s in stages]
    return {s.name: s.metadata for s in stages}


def read_chunks(home: Path) -> list[dict]:
    return [json.loads(line) for line in chunks_path(home / "corpus").read_text().splitlines()]


def test_build_incremental_and_one_file_change(tmp_path: Path, isolated_home: Path) -> None:
    tree = make_tree(tmp_path / "src")
    use_tree(isolated_home, tree)
    with instance_for_test() as instance:
        first = build(instance)
        chunks = read_chunks(isolated_home)
        # Contract for retrieval: one Chunk.to_dict() per line, citable by uri and lines.
        for c in chunks:
            Chunk.from_dict(c)
            assert c["uri"].startswith("file://") and 1 <= c["start_line"] <= c["end_line"]
        assert len({c["id"] for c in chunks}) == len(chunks)
        text = "\n".join(c["text"] for c in chunks)
        assert AWS_KEY not in text and GH_TOKEN not in text
        assert "<REDACTED:" in text
        assert first["clean_documents"]["secrets_redacted"] >= 2
        assert first["deduped_documents"]["exact_duplicates_removed"] == 1
        assert first["deduped_documents"]["near_duplicates_removed"] == 1
        assert first["raw_documents[local]"]["skipped"] == {"binary": 1}
        assert first["checks"] == {
            "chunks_have_no_secrets": True,
            "chunk_size_distribution": True,
            "enabled_sources_non_empty": True,
            "dedupe_ratio_in_bounds": True,
        }
        assert any(c["metadata"].get("example") == "example_file" for c in chunks)
        assert first["chunks"]["new_chunks"] == len(chunks)

        second = build(instance)
        assert second["chunks"]["new_chunks"] == 0 and second["chunks"]["removed_chunks"] == 0
        assert read_chunks(isolated_home) == chunks

        mod3 = tree / "pkg" / "mod3.py"
        mod3.write_text(mod3.read_text().replace("Return value plus 2.", "Return value plus two."))
        third = build(instance)
        after = read_chunks(isolated_home)
        changed_uris = {c["uri"] for c in after if c["id"] not in {x["id"] for x in chunks}}
        removed_uris = {c["uri"] for c in chunks if c["id"] not in {x["id"] for x in after}}
        assert changed_uris == removed_uris == {mod3.as_uri()}
        assert third["chunks"]["new_chunks"] == third["chunks"]["removed_chunks"] == 1
        # The materializations are on the instance, with lineage raw -> ... -> chunks.
        from dagster import AssetKey

        assert instance.get_latest_materialization_event(AssetKey("chunks")) is not None


def test_oversized_file_is_skipped_and_stored_data_survives(
    tmp_path: Path, isolated_home: Path
) -> None:
    tree = make_tree(tmp_path / "src")
    use_tree(isolated_home, tree)
    with instance_for_test() as instance:
        build(instance)
        before = read_chunks(isolated_home)
        big = tree / "pkg" / "huge.py"
        with big.open("wb") as fh:  # 50 MB, sparse: cheap to create
            fh.truncate(50 * 1024 * 1024)
        (tree / "pkg" / "latin.py").write_bytes(b"NAME = '\xe9t\xe9'\n")  # not UTF-8
        res = build(instance)
        assert res["raw_documents[local]"]["skipped"] == {"binary": 1, "oversized": 1}
        after = read_chunks(isolated_home)
        assert {c["id"] for c in before} <= {c["id"] for c in after}
        assert any("'été'" in c["text"] for c in after)


def test_missing_local_path_fails_that_source_only(tmp_path: Path, isolated_home: Path) -> None:
    tree = make_tree(tmp_path / "src")
    use_tree(isolated_home, tree)
    with instance_for_test() as instance:
        build(instance)
        before = read_chunks(isolated_home)
        use_tree(isolated_home, tmp_path / "gone")
        stages = build_corpus(instance, ["local"], config.get_settings())
        raw = stages[0].metadata
        assert raw["status"] == "failed" and "not a directory" in raw["message"]
        assert read_chunks(isolated_home) == before  # last good snapshot kept


def _cli_build(home: Path, tree: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "CODEGEN_HOME": str(home), "CODEGEN_CONFIG": str(home / "codegen.toml")}
    env.pop("DAGSTER_HOME")  # the CLI defaults it to $CODEGEN_HOME/dagster_home
    exe = Path(sys.executable).parent / "codegen"
    return subprocess.Popen(
        [str(exe), "corpus", "build", "--no-index", "--local", str(tree)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_run_restarted_gives_identical_chunks(tmp_path: Path, isolated_home: Path) -> None:
    tree = make_tree(tmp_path / "src")
    for i in range(6, 26):  # distinct modules: enough work that the kill lands mid-build
        body = "\n\n".join(
            f"def work_{i}_{j}(items: list[int]) -> int:\n"
            f'    """Fold the items, weight {i * 7 + j} ({["alpha", "beta", "gamma"][j % 3]})."""\n'
            f"    total = {i}\n    for item in items:\n"
            f"        total = total * {i + j} + item % {j + 2}\n"
            f"    return total - {i * j}"
            for j in range(4)
        )
        (tree / "pkg" / f"extra{i}.py").write_text(f'"""Extra module {i}."""\n\n\n{body}\n')
    # Reference: one uninterrupted build.
    use_tree(isolated_home, tree)
    with instance_for_test() as instance:
        build(instance)
    reference = chunks_path(isolated_home / "corpus").read_text()
    assert reference.count("\n") > 100

    killed_home = tmp_path / "killed"
    proc = _cli_build(killed_home, tree)
    cache = killed_home / "corpus" / "cache" / "stages.sqlite"
    deadline = time.monotonic() + 120
    # Kill once per-document work has started (the cache exists) but before the end.
    while not cache.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc = _cli_build(killed_home, tree)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "chunks" in out and "raw_documents[local]: ok" in err  # progress on stderr
    assert chunks_path(killed_home / "corpus").read_text() == reference
    # The runs were recorded on the instance the CLI configured by default.
    os.environ["DAGSTER_HOME"] = str(killed_home / "dagster_home")
    from dagster import AssetKey

    instance = DagsterInstance.get()
    assert instance.get_latest_materialization_event(AssetKey("chunks")) is not None
