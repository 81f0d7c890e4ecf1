"""``codegen generate`` end to end: a real multiprocess Dagster run on the configured instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from codegen.orchestration.cli import main
from codegen.replay.scripted import ScriptedOpenAIServer, primes_handler

ACCEPTANCE_REQUEST = (
    "Write a function primes_up_to(n) that returns all primes <= n using the Sieve of Eratosthenes."
)
SECRET = "sk-canary-cli-77aa"
CODEGEN = str(Path(sys.executable).parent / "codegen")
pytestmark = pytest.mark.dagster_instance  # CI runs these again on Postgres
ASSETS = [
    "request_spec",
    "test_suite",
    "retrieved_context",
    "solution_code",
    "human_review",
    "documentation",
]


def codegen(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEGEN, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.mark.docker
def test_generate_materializes_every_asset_and_prints_the_outcome(isolated_home: Path) -> None:
    with ScriptedOpenAIServer(handler=primes_handler) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": SECRET,
            "CODEGEN_SANDBOX__BACKEND": "docker",
            "CODEGEN_SANDBOX__POOL_SIZE": "1",
        }
        proc = codegen("generate", ACCEPTANCE_REQUEST, "--json", "--candidates", "2", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["status"] == "passed", out
    assert out["tests_passed"] == out["tests_total"] == 5
    assert out["rounds"] == 1 and out["tokens"] > 0 and out["cost_usd"] > 0
    folder = Path(out["artifact_dir"])
    assert folder == isolated_home / "artifacts" / out["request_id"]
    assert set(out["artifacts"]) == {
        "spec.json",
        "test_solution.py",
        "solution.py",
        "README.md",
        "report.json",
    }
    assert "running the crew" in proc.stderr  # progress goes to stderr, JSON to stdout
    assert out["grounding"] == {
        "status": "none",
        "chunks": 0,
        "embedded_fraction": 0.0,
        "corpus_chunks": None,
        "building": False,
    }
    assert {e["base_url"] for e in out["endpoints"]["programmer"]} == {server.base_url}
    assert SECRET not in proc.stdout + proc.stderr
    # Two drafts (identical replies here): the pick and each draft's results are reported.
    report = json.loads((folder / "report.json").read_text())
    assert [c["candidate"] for c in report["candidates"]["candidates"]] == [0, 1]
    assert {r.headers["X-Codegen-Candidate"] for r in server.requests_for("programmer")} == {
        "0",
        "1",
    }

    # The artifacts are working code, tests and docs: run the suite on the host's pytest.
    check = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_solution.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
        check=False,
    )
    assert check.returncode == 0, check.stdout
    assert "5 passed" in check.stdout
    assert (folder / "README.md").read_text().startswith("# primes_up_to")

    # The run happened on the configured instance: every asset, and the blocking check passed.
    instance = DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        for name in ASSETS:
            mats = instance.fetch_materializations(AssetKey(name), limit=5).records
            assert [m.partition_key for m in mats] == [out["request_id"]], name
        run = instance.get_run_by_id(out["run_id"])
        assert run is not None and run.is_success
        checks = [
            e.dagster_event.event_specific_data
            for e in instance.all_logs(out["run_id"])
            if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
        assert {(c.check_name, c.passed) for c in checks} == {
            ("spec_fits_request", True),
            ("solution_passes_tests", True),
            ("solution_bandit", True),
            ("review_not_pending", True),
            ("context_grounded", False),  # no index in this home: grounding none, a warning
        }
    finally:
        instance.dispose()
    for path in isolated_home.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert SECRET.encode() not in path.read_bytes(), path


def test_generate_refuses_bad_input_in_one_line(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    bad = [
        ["generate", ""],
        ["generate", "x" * 30_000],
        ["generate", f"@{binary}"],
        ["generate", f"@{tmp_path / 'missing.txt'}"],
        ["generate", "ok", "--max-rounds", "0"],
        ["generate", "ok", "--candidates", "0"],
        ["generate", "ok", "--candidates", "many"],
    ]
    for args in bad:
        assert main(args) == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("codegen: error:"), lines
    assert not (isolated_home / "requests").exists()  # nothing was stored
