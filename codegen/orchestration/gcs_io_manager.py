"""Asset values in GCS (production): dagster-gcp's pickle IO manager with the same refusal of
stale values as the filesystem one (see io_managers). Its own module: google-cloud is slow to
import and only production needs it."""

from __future__ import annotations

from typing import Any

from dagster import InputContext
from dagster_gcp import GCSPickleIOManager
from dagster_gcp.gcs.io_manager import PickledObjectGCSIOManager
from upath import UPath

from codegen.orchestration.dagster_private import cached_method
from codegen.orchestration.io_managers import STALE_VALUE_ERRORS, stale_value


class _RefusingGCS(PickledObjectGCSIOManager):
    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        try:
            return super().load_from_path(context, path)
        except STALE_VALUE_ERRORS as exc:
            raise stale_value(context, exc) from exc


class RefusingGCSPickleIOManager(GCSPickleIOManager):
    """``GCSPickleIOManager`` whose stale values end in one clear line."""

    @property
    @cached_method
    def _internal_io_manager(self) -> PickledObjectGCSIOManager:
        return _RefusingGCS(
            bucket=self.gcs_bucket, client=self.gcs.get_client(), prefix=self.gcs_prefix
        )
