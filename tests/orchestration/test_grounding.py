"""Grounding that is said: a request written without an index says so, and one with it too.

On a fresh home with no index, `codegen generate --json`, report.json and the assets' metadata
say `none` and the WARN check `context_grounded` fails; after `codegen corpus build --local`
of a small tree, the next request is `full` and cites chunks. A chunk the index lacks makes
`codegen search` say the index is partial, and how much of it is embedded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance

from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler
from codegen.retrieval.grounding import grounding_of

STDLIB = Path(sysconfig.get_paths()["stdlib"])
pytestmark = [pytest.mark.docker, pytest.mark.slow]


def codegen(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_grounding_statuses() -> None:
    assert grounding_of(None, set()).status == "none"
    assert grounding_of({"a", "b"}, set()).status == "none"
    half = grounding_of({"a", "b"}, {"a", "stale"})
    assert (half.status, half.chunks, half.embedded_fraction) == ("partial", 1, 0.5)
    assert "1 of 2 chunks embedded (50%)" in half.describe()
    assert grounding_of({"a"}, {"a"}).status == "full"


def grounding_in_the_instance(run_id: str) -> tuple[str, tuple[bool, object]]:
    instance = DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        [mat] = instance.fetch_materializations(AssetKey("retrieved_context"), limit=1).records
        assert mat.run_id == run_id
        status = mat.asset_materialization.metadata["grounding"].value  # type: ignore[union-attr]
        [check] = [
            e.dagster_event.event_specific_data
            for e in instance.all_logs(run_id)
            if e.dagster_event
            and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
            and e.dagster_event.event_specific_data.check_name == "context_grounded"
        ]
        return status, (check.passed, check.severity)
    finally:
        instance.dispose()


def test_a_request_says_whether_its_code_was_grounded(isolated_home: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("shlex.py", "fnmatch.py", "textwrap.py"):
        shutil.copy(STDLIB / name, tree / name)
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
        }
        before = codegen("generate", "Write primes_up_to(n).", "--json", env=env)
        assert before.returncode == 0, before.stderr[-2000:]
        out = json.loads(before.stdout)
        assert out["grounding"]["status"] == "none"
        report = json.loads((Path(out["artifact_dir"]) / "report.json").read_text())
        assert report["grounding"]["status"] == "none" and report["context"] == []
        assert grounding_in_the_instance(out["run_id"]) == (
            "none",
            (False, AssetCheckSeverity.WARN),
        )
        text = codegen("generate", "Write primes_up_to(n), again.", env=env)
        assert "grounding  none: no index to search" in text.stdout

        built = codegen("corpus", "build", "--local", str(tree), env=env)
        assert built.returncode == 0, built.stderr[-2000:]

        after = codegen("generate", "Write primes_up_to(n), grounded.", "--json", env=env)
        assert after.returncode == 0, after.stderr[-2000:]
    out = json.loads(after.stdout)
    assert out["grounding"]["status"] == "full" and out["grounding"]["chunks"] > 0
    assert out["grounding"]["embedded_fraction"] == 1.0
    report = json.loads((Path(out["artifact_dir"]) / "report.json").read_text())
    assert report["grounding"] == out["grounding"]
    assert report["context"] and all("tree/" in c or ".py" in c for c in report["context"])
    assert grounding_in_the_instance(out["run_id"]) == ("full", (True, AssetCheckSeverity.WARN))

    # A chunk the index does not hold yet (as during a build): search says how much it has.
    chunks = isolated_home / "corpus" / "chunks.jsonl"
    first = json.loads(chunks.read_text().splitlines()[0])
    with chunks.open("a") as fh:
        fh.write(json.dumps({**first, "id": "not-embedded-yet"}) + "\n")
    found = codegen("search", "split a string like a shell", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert "codegen: warning: index partial:" in found.stderr
    assert json.loads(found.stdout)["grounding"]["status"] == "partial"
