"""The HumanEval jobs (launchpad, job backfills). The wiring they and the CLI share is in
codegen/assets/evaluation_session.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codegen.orchestration.run_queue import KIND_EVALUATION, kind_tags

if TYPE_CHECKING:
    from codegen.orchestration.dagster_private import UnresolvedAssetJobDefinition


def eval_jobs() -> list[UnresolvedAssetJobDefinition]:
    """Partitioned jobs for the launchpad and job backfills (by key: no import cycle with
    codegen/assets/evaluation.py). The unpartitioned summary is materialized on its own afterwards,
    or in the same asset backfill when launched from the asset graph."""
    from dagster import AssetSelection, define_asset_job

    return [
        define_asset_job(
            "humaneval_crew_job",
            selection=AssetSelection.assets("humaneval_samples", "humaneval_scores"),
            description="The crew on HumanEval tasks (one partition per task), then scoring.",
            tags=kind_tags(KIND_EVALUATION),
        ),
        define_asset_job(
            "humaneval_canonical_job",
            selection=AssetSelection.assets("humaneval_canonical"),
            description="The canonical solutions through the same scoring path.",
            tags=kind_tags(KIND_EVALUATION),
        ),
        define_asset_job(
            "humaneval_summary_job",
            selection=AssetSelection.assets("humaneval_summary"),
            description="pass@k, failures by category, cost; runs the canonical self-check.",
            tags=kind_tags(KIND_EVALUATION),
        ),
    ]
