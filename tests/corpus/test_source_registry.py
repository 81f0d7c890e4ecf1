"""One table of sources: every entry's connector, config type, settings section and secret."""

from __future__ import annotations

import dataclasses

import pytest

from codegen.composition import source_config
from codegen.corpus.connectors.base import SourceError
from codegen.corpus.sources import REGISTRY, SOURCES, source_spec
from codegen.settings import Settings


@pytest.mark.parametrize("source", SOURCES)
def test_every_source_builds_its_config_from_its_settings_section(source: str) -> None:
    spec = REGISTRY[source]
    assert callable(spec.connector())
    config = source_config(Settings(), source)
    assert isinstance(config, spec.config_type())
    accepted = {f.name for f in dataclasses.fields(config)}
    if spec.settings_key is not None:
        # No setting of the section may be silently dropped on its way to the connector.
        section = getattr(Settings().corpus, spec.settings_key)
        assert set(type(section).model_fields) <= accepted
    if spec.secret_field:
        assert spec.secret_field in accepted


def test_secrets_come_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_example")
    monkeypatch.setenv("STACKEXCHANGE_KEY", "se-key")
    assert source_config(Settings(), "github_issues").token == "ghp_example"
    assert source_config(Settings(), "stackoverflow").key == "se-key"
    assert "ghp_example" not in repr(source_config(Settings(), "github_repos"))
    monkeypatch.delenv("GITHUB_TOKEN")
    assert source_config(Settings(), "github_repos").token is None


def test_settings_reach_the_config() -> None:
    settings = Settings()
    settings.corpus.local_paths = ["/src"]
    settings.corpus.docs.max_pages = 7
    settings.corpus.http_timeout_s = 4.5
    assert source_config(settings, "local").local_paths == ["/src"]
    docs = source_config(settings, "docs")
    assert docs.max_pages == 7 and docs.timeout_s == 4.5


def test_unknown_source_is_a_clear_error() -> None:
    with pytest.raises(SourceError, match="unknown source 'gopher'; known: local, github_repos"):
        source_spec("gopher")
