"""The user's path: `codegen corpus build --local TREE`, then `codegen search` finds its code."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CODEGEN = str(Path(sys.executable).parent / "codegen")


def codegen(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CODEGEN_HOME": str(home),
        "CODEGEN_CONFIG": str(home / "codegen.toml"),
        # A user's first build: no model exported yet (not the developer's cache).
        "CODEGEN_RETRIEVAL__MODEL_CACHE_DIR": str(home.parent / "user-model-cache"),
    }
    env.pop("DAGSTER_HOME", None)  # the CLI defaults it to $CODEGEN_HOME/dagster_home
    return subprocess.run([CODEGEN, *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_corpus_build_indexes_and_search_finds_the_code(
    tmp_path: Path, isolated_home: Path
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("shlex.py", "fnmatch.py", "textwrap.py"):
        shutil.copy(STDLIB / name, tree / name)
    # A vendored copy, as found across repositories: two locals renamed throughout and the
    # module docstring reworded (a type-2 clone word shingles miss).
    fnmatch = (STDLIB / "fnmatch.py").read_text()
    vendored = re.sub(r"\bres\b", "parts", re.sub(r"\bpat\b", "glob", fnmatch))
    vendored = vendored.replace("Filename matching with shell patterns.", "Vendored glob helpers.")
    (tree / "globbing.py").write_text(vendored)
    copies = ("fnmatch.py", "globbing.py")

    before = codegen("search", "split a string like a shell", home=isolated_home)
    assert before.returncode != 0
    assert len(before.stderr.strip().splitlines()) == 1, before.stderr

    built = codegen("corpus", "build", "--local", str(tree), home=isolated_home)
    assert built.returncode == 0, built.stderr
    assert "index: ok" in built.stderr and "index_checks: ok" in built.stderr, built.stderr
    # The model was exported beside the corpus stages, by a child the command waited for.
    assert "exporting the embedder's model" in built.stderr, built.stderr
    (manifest,) = (isolated_home.parent / "user-model-cache" / "models").glob("*/manifest.json")
    assert not list(manifest.parent.glob(".*.tmp")), list(manifest.parent.iterdir())

    found = codegen(
        "search",
        "Translate a shell PATTERN to a regular expression",
        "-k",
        "3",
        "--json",
        home=isolated_home,
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits and hits[0]["uri"].endswith(("fnmatch.py", "globbing.py")), hits
    assert hits[0]["start_line"] >= 1 and hits[0]["end_line"] >= hits[0]["start_line"]
    # One copy of translate() in the hits, not two: the clone was deduplicated.
    assert sum("def translate(" in h["text"] for h in hits) == 1, hits
    assert len({h["uri"] for h in hits} & {(tree / n).as_uri() for n in copies}) == 1, hits

    # Nothing changed: the second build embeds nothing.
    again = codegen("corpus", "build", "--local", str(tree), "--json", home=isolated_home)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["stages"]["index"]["embedded"] == 0
