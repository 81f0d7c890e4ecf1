"""Asset values on disk: Dagster's pickle IO manager, plus a clear refusal (GCS: gcs_io_manager).

A value pickled by an older version of the project names classes by the module paths of that
version (before the move into the ``codegen`` package, ``agents.crew.CrewState``). Unpickling
it now fails deep inside ``pickle`` with ``No module named 'agents'``; these managers turn that
into one line that says which stored value it is and how to make it again, instead of a
traceback or, worse, a value read into the wrong shape.
"""

from __future__ import annotations

from typing import Any

from dagster import Failure, FilesystemIOManager, InitResourceContext, InputContext
from upath import UPath

from codegen.orchestration.dagster_private import PickledObjectFilesystemIOManager

# What unpickling a value written by another version of the code raises.
STALE_VALUE_ERRORS = (ModuleNotFoundError, AttributeError, ImportError, TypeError)


def stale_value(context: InputContext, exc: BaseException) -> Failure:
    key = context.asset_key.to_user_string() if context.has_asset_key else context.name
    partition = f" partition {context.asset_partition_key}" if context.has_asset_partitions else ""
    return Failure(
        f"the stored value of {key}{partition} was written by an older version of "
        f"multiagent-codegen and cannot be read ({type(exc).__name__}: {exc}); materialize it "
        "again (for a request: codegen generate with the same text makes a new one)"
    )


class _RefusingFilesystem(PickledObjectFilesystemIOManager):
    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        try:
            return super().load_from_path(context, path)
        except STALE_VALUE_ERRORS as exc:
            raise stale_value(context, exc) from exc


class RefusingFilesystemIOManager(FilesystemIOManager):
    """``FilesystemIOManager`` whose stale values end in one clear line."""

    def create_io_manager(self, context: InitResourceContext) -> PickledObjectFilesystemIOManager:
        base_dir = self.base_dir or str(context.instance.storage_directory())  # type: ignore[union-attr]
        return _RefusingFilesystem(base_dir=base_dir)
