"""The user's path: `codegen corpus build --local TREE`, then `codegen search` finds its code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CODEGEN = str(Path(sys.executable).parent / "codegen")


def codegen(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEGEN_HOME": str(home), "CODEGEN_CONFIG": str(home / "codegen.toml")}
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

    before = codegen("search", "split a string like a shell", home=isolated_home)
    assert before.returncode != 0
    assert len(before.stderr.strip().splitlines()) == 1, before.stderr

    built = codegen("corpus", "build", "--local", str(tree), home=isolated_home)
    assert built.returncode == 0, built.stderr
    assert "index: ok" in built.stderr and "index_checks: ok" in built.stderr, built.stderr

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
    assert hits and hits[0]["uri"].endswith("fnmatch.py"), hits
    assert hits[0]["start_line"] >= 1 and hits[0]["end_line"] >= hits[0]["start_line"]

    # Nothing changed: the second build embeds nothing.
    again = codegen("corpus", "build", "--local", str(tree), "--json", home=isolated_home)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["stages"]["index"]["embedded"] == 0
