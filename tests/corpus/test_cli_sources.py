"""`codegen corpus build` bad input, and several sources through Dagster with one failing."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import instance_for_test

import codegen.settings as config
from codegen.orchestration.definitions import build_definitions
from codegen.orchestration.launch import build_corpus, corpus_reindex_schedule
from codegen.testing.loopback_sources import FakeGitHub, FakeRepo
from tests.corpus.test_pipeline import make_tree, read_chunks

CODEGEN = str(Path(sys.executable).parent / "codegen")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["corpus", "build", "--local", "/no/such/dir"], "--local"),
        (["corpus", "build", "--source", "myspace"], "myspace"),
        (["corpus", "bogus"], "bogus"),
    ],
)
def test_bad_input_is_one_line(args: list[str], needle: str) -> None:
    res = subprocess.run([CODEGEN, *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error:") and needle in lines[0]
    assert "Traceback" not in res.stderr


def test_failing_source_does_not_block_the_others(tmp_path: Path, isolated_home: Path) -> None:
    tree = make_tree(tmp_path / "src")
    repo = FakeRepo(
        "acme/tools", {"tools/util.py": b'def util():\n    """Help."""\n    return 42\n'}
    )
    with FakeGitHub([repo]) as gh, instance_for_test() as instance:
        (isolated_home / "codegen.toml").write_text(
            f'[corpus]\nlocal_paths = ["{tree}"]\n'
            'sources = ["local", "github_repos", "github_issues"]\n'
            f'[corpus.github]\napi_url = "{gh.base_url}"\nrepos = ["acme/tools"]\n'
        )
        config.get_settings.cache_clear()
        stages = {
            s.name: s for s in build_corpus(instance, ["local", "github_repos", "github_issues"])
        }
        assert stages["raw_documents[github_issues]"].metadata["status"] == "disabled"
        assert stages["chunks"].success
        assert stages["chunks"].metadata["by_source"] == {
            "github_repos": 1,
            "local": stages["chunks"].metadata["by_source"]["local"],
        }
        assert stages["checks"].metadata["enabled_sources_non_empty"] is True
        # GitHub now fails (quota spent): its stored documents and every other source survive.
        gh.rate_remaining = 0
        stages = {s.name: s for s in build_corpus(instance, ["local", "github_repos"])}
        raw = stages["raw_documents[github_repos]"].metadata
        assert raw["status"] == "failed" and "rate limit" in raw["message"]
        assert stages["chunks"].success
        sources = {c["source"] for c in read_chunks(isolated_home)}
        assert sources == {"local", "github_repos"}


def test_enabled_but_empty_source_fails_the_check(tmp_path: Path, isolated_home: Path) -> None:
    empty_repo = FakeRepo("acme/empty", {"data.csv": b"a,b\n"})
    tree = make_tree(tmp_path / "src")
    with FakeGitHub([empty_repo]) as gh, instance_for_test() as instance:
        (isolated_home / "codegen.toml").write_text(
            f'[corpus]\nlocal_paths = ["{tree}"]\nsources = ["local", "github_repos"]\n'
            f'[corpus.github]\napi_url = "{gh.base_url}"\nrepos = ["acme/empty"]\n'
        )
        config.get_settings.cache_clear()
        stages = {s.name: s for s in build_corpus(instance, ["github_repos", "local"])}
        assert stages["checks"].metadata["enabled_sources_non_empty"] is False


def test_schedule_requests_every_source_partition() -> None:
    defs = build_definitions()
    schedule = defs.resolve_schedule_def("corpus_reindex_schedule")
    assert schedule.cron_schedule == config.get_settings().corpus.reindex_cron == "0 3 * * *"
    from dagster import build_schedule_context

    with instance_for_test() as instance:
        ctx = build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 1, 1, 3, tzinfo=UTC)
        )
        requests = corpus_reindex_schedule(ctx)
    assert sorted(r.partition_key for r in requests) == sorted(
        ["local", "github_repos", "github_issues", "stackoverflow", "docs", "blogs"]
    )
    assert defs.resolve_sensor_def("corpus_automation_sensor") is not None
    assert defs.resolve_job_def("corpus_raw_job") is not None
