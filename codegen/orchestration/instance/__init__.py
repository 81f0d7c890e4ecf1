"""The Dagster instance: where runs, the event log and schedules are stored, and the queue
that limits how many runs of each kind run at once.

``home`` installs ``dagster.yaml`` into ``DAGSTER_HOME`` and loads the instance; ``storage``
is the storage that file names (Dagster loads it by its module path, so nothing imports it);
``run_queue`` is the run tag the queue limits. No Dagster import here: the CLI imports this
face for every command. ``python -m codegen.orchestration.instance`` is ``make home``.
"""

from codegen.orchestration.instance.home import (
    INSTANCE_TEMPLATE,
    POSTGRES_URL_ENV,
    configured_instance,
    install_instance_yaml,
    postgres_url,
    sqlalchemy_url,
    storage_overrides,
)
from codegen.orchestration.instance.run_queue import (
    KIND_CORPUS,
    KIND_EVALUATION,
    KIND_REQUEST,
    KIND_TAG,
    KINDS,
    kind_tags,
)

__all__ = [
    "INSTANCE_TEMPLATE",
    "KINDS",
    "KIND_CORPUS",
    "KIND_EVALUATION",
    "KIND_REQUEST",
    "KIND_TAG",
    "POSTGRES_URL_ENV",
    "configured_instance",
    "install_instance_yaml",
    "kind_tags",
    "postgres_url",
    "sqlalchemy_url",
    "storage_overrides",
]
