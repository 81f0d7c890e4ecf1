"""Dagster resources: thin adapters that hand settings to the domain packages."""

from pathlib import Path

from dagster import ConfigurableResource

from orchestration.config import Settings, get_settings


class SettingsResource(ConfigurableResource):
    """The platform settings (see orchestration/config.py), optionally re-rooted.

    ``home`` overrides the data directory, which is how tests get an isolated one.
    """

    home: str | None = None

    def load(self) -> Settings:
        settings = get_settings()
        if self.home:
            settings = settings.model_copy(update={"home": Path(self.home)})
        return settings
