"""Resources per environment, chosen in this one place by ``CODEGEN_ENV``.

local       embedded defaults: SQLite instance, filesystem IO manager, data under CODEGEN_HOME
production  GCS IO manager (dagster-gcp) when ``storage.gcs_bucket`` is set; Postgres and
            Weaviate are chosen through dagster.yaml and ``codegen.retrieval.vector_store``

Every resource is the deployment's settings, never run config: the code location serves each
one as a definition with an empty config schema, so a launch (the launchpad, a backfill, a
sensor's run request) that sets any field of one (the endpoint, a key's variable, the
allow-list, the home, the sandbox's backend, image or limits, ...) is refused by Dagster before
the run starts, in one line naming the field ('Received unexpected config entry "base_url" at
path root:resources:llm:config'). What a launch may set is the ops' own config (a request's
options, a review's verdict) and the run tags the assets read (an evaluation's package set).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from dagster import (
    ConfigurableIOManager,
    ConfigurableIOManagerFactory,
    ConfigurableResource,
    InitResourceContext,
    IOManagerDefinition,
    ResourceDefinition,
)

from codegen.assets.resources import (
    LLMResource,
    SandboxResource,
    SettingsResource,
    VectorIndexResource,
)
from codegen.orchestration.io_managers import RefusingFilesystemIOManager
from codegen.settings import Environment, Settings

# What the settings build: the project's resources and the IO managers.
Resource = ConfigurableResource | ConfigurableIOManagerFactory | ConfigurableIOManager

# Shown on each resource in the UI, which no longer lists its fields as editable config.
FROM_SETTINGS = (
    "Built from the deployment's settings (codegen.toml, CODEGEN_* variables); "
    "a launch cannot change it."
)


def resources_for(settings: Settings) -> dict[str, ResourceDefinition]:
    """The code location's resources, each fixed to what ``settings`` say (see above)."""
    built: dict[str, Resource] = {
        "settings": SettingsResource(home=str(settings.home)),
        "llm": LLMResource.from_settings(settings),
        "sandbox": SandboxResource.from_settings(settings),
        # One index, two keys: the index asset's and the crew's (the Programmer's context).
        "vector_index": VectorIndexResource(home=str(settings.home)),
        "retriever": VectorIndexResource.for_crew(settings),
    }
    fixed = {key: fixed_resource(value) for key, value in built.items()}
    return {**fixed, "io_manager": fixed_io_manager(io_manager_for(settings))}


def _served(
    resource: Resource, value: Callable[[InitResourceContext], object]
) -> Callable[[InitResourceContext], Iterator[object]]:
    # The resource's own lifecycle hooks, as Dagster runs them for a configurable resource (the
    # sandbox warms its pool, the index imports LanceDB), around the value the steps get.
    def serve(context: InitResourceContext) -> Iterator[object]:
        resource.setup_for_execution(context)
        try:
            yield value(context)
        finally:
            resource.teardown_after_execution(context)

    return serve


def fixed_resource(resource: ConfigurableResource) -> ResourceDefinition:
    """``resource`` as it is, behind a config schema with no fields: run config cannot set
    one of its fields (Dagster refuses the launch, naming the field)."""
    return ResourceDefinition(
        resource_fn=_served(resource, resource.create_resource),
        config_schema={},
        description=f"{type(resource).__name__}. {FROM_SETTINGS}",
    )


def fixed_io_manager(
    manager: ConfigurableIOManagerFactory | ConfigurableIOManager,
) -> IOManagerDefinition:
    """``manager`` as ``fixed_resource`` serves a resource (its base_dir, bucket and prefix are
    the settings' alone)."""
    return IOManagerDefinition(
        resource_fn=_served(manager, manager.create_io_manager),
        config_schema={},
        description=f"{type(manager).__name__}. {FROM_SETTINGS}",
    )


def io_manager_for(settings: Settings) -> ConfigurableIOManagerFactory | ConfigurableIOManager:
    if settings.env is Environment.PRODUCTION and settings.storage.gcs_bucket:
        # Imported here: google-cloud is slow to import and only production needs it.
        from dagster_gcp import GCSResource

        from codegen.orchestration.gcs_io_manager import RefusingGCSPickleIOManager

        return RefusingGCSPickleIOManager(
            gcs=GCSResource(project=settings.storage.gcs_project),
            gcs_bucket=settings.storage.gcs_bucket,
            gcs_prefix=settings.storage.gcs_prefix,
        )
    return RefusingFilesystemIOManager(base_dir=str(settings.home / "storage"))
