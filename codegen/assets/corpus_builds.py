"""Which corpus builds are under way on an instance: the runs that materialize the corpus
assets or the index and have not ended. ``codegen info`` shows them, and a request's retrieval
says "building" while one runs rather than suggest starting a build."""

from __future__ import annotations

from typing import TypedDict

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

# The assets a corpus build materializes, raw documents to the vector index.
BUILD_ASSETS = ("raw_documents", "clean_documents", "deduped_documents", "chunks", "index")
# The first build's runs, started by the first-build sensor on a fresh home, carry this tag.
FIRST_BUILD = "first-build"
# `codegen corpus build`'s in-process runs (which record no asset selection) carry this one.
CORPUS_BUILD = "corpus build"
COMMAND_TAG = "codegen/command"
# The index run's tag that says how far its embedding got (the UI shows a run's tags).
PROGRESS_TAG = "codegen/progress"
# How runs that build them are tagged: the corpus and index jobs, and the two commands above.
BUILD_KIND = ("codegen/kind", "corpus")
BUILD_COMMANDS = (CORPUS_BUILD, FIRST_BUILD)
UNENDED = (
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
)


class BuildState(TypedDict):
    """Corpus-build runs in progress on this instance (queued, starting or started)."""

    runs: list[str]  # their run ids
    assets: list[str]  # the build's assets they materialize, where a run names them
    since: float  # when the oldest of them was created (Unix time)


def build_in_progress(instance: DagsterInstance) -> BuildState | None:
    """The instance's corpus-build runs that have not ended (None: there are none)."""
    records = instance.get_run_records(RunsFilter(statuses=list(UNENDED)), limit=100)
    runs, assets, since = [], set(), None
    for record in records:
        run = record.dagster_run
        named = {key.to_user_string() for key in run.asset_selection or ()}
        if (
            named & set(BUILD_ASSETS)
            or run.tags.get(BUILD_KIND[0]) == BUILD_KIND[1]
            or run.tags.get(COMMAND_TAG) in BUILD_COMMANDS
        ):
            runs.append(run.run_id)
            assets |= named & set(BUILD_ASSETS)
            created = record.create_timestamp.timestamp()
            since = created if since is None else min(since, created)
    if since is None:
        return None
    return {"runs": runs, "assets": [a for a in BUILD_ASSETS if a in assets], "since": since}
